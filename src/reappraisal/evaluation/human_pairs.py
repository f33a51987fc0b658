"""Human-rated pairs for the evaluation judge: its calibration set and the demo judge's training set. Pure.

Both come from the validation split's human reappraisals, which no
reward-path model trains on (the reward models and the GRM train on the
train split; validation only measures them). Each validation reappraisal is
assigned, by a stable hash of its id, to one of two disjoint halves:

- ``judge_train`` (a fraction ``judge_train_fraction`` of them): pairs the
  demo's stand-in judge may learn from (the paper's judge, a 70B model, is
  never trained here, so the fraction is 0 there);
- ``calibration``: pairs on which every candidate judge is measured
  against human preference.

A pair is two reappraisals of the same scenario from the same half; its
human margin is the difference of their mean z-ratings on the primary
dimension (first minus second). Which text is "first" is decided by a hash
of the pair, so position carries no information. The margin is never
chosen by any judge's output: clearly separated pairs are those with
``|margin| >= delta`` from the config.
"""

from __future__ import annotations

import hashlib
from itertools import combinations

import pandas as pd
from ..table_contracts import HUMAN_PAIR_COLUMNS


def _unit(text: str) -> float:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big") / 2.0**64


def assign_halves(reappraisal_ids, judge_train_fraction: float, seed: int) -> dict[str, str]:
    """reappraisal_id -> ``judge_train`` | ``calibration`` by a stable hash (see module doc)."""
    if not 0.0 <= judge_train_fraction < 1.0:
        raise ValueError(f"judge_train_fraction must be in [0, 1), got {judge_train_fraction}")
    return {str(r): ("judge_train" if _unit(f"{seed}:half:{r}") < judge_train_fraction else "calibration")
            for r in reappraisal_ids}


def human_pairs(targets: pd.DataFrame, *, dimension: str, judge_train_fraction: float, seed: int) -> pd.DataFrame:
    """All within-scenario pairs of validation human reappraisals inside each half (see module doc)."""
    z = f"z_{dimension}"
    val = targets[(targets["split"] == "val") & (targets["author_type"] == "human") & targets[z].notna()]
    halves = assign_halves(val["reappraisal_id"], judge_train_fraction, seed)
    rows = []
    for (vignette, half), group in val.assign(half=val["reappraisal_id"].astype(str).map(halves)).groupby(
            ["vignette_id", "half"], sort=True):
        group = group.sort_values("reappraisal_id")
        for x, y in combinations(group.itertuples(index=False), 2):
            if _unit(f"{seed}:order:{x.reappraisal_id}:{y.reappraisal_id}") < 0.5:
                x, y = y, x
            zx, zy = float(getattr(x, z)), float(getattr(y, z))
            rows.append({
                "pair_id": f"{x.reappraisal_id}~{y.reappraisal_id}", "vignette_id": str(vignette), "half": half,
                "first_id": str(x.reappraisal_id), "second_id": str(y.reappraisal_id), "first": str(x.text),
                "second": str(y.text), "z_first": zx, "z_second": zy, "margin": zx - zy,
            })
    return pd.DataFrame(rows, columns=HUMAN_PAIR_COLUMNS)


def as_contests(pairs: pd.DataFrame) -> pd.DataFrame:
    """Calibration pairs in the contests layout the judging code takes (the first text plays "model")."""
    return pd.DataFrame({
        "contest_id": pairs["pair_id"].to_numpy(),
        "vignette_id": pairs["vignette_id"].to_numpy(),
        "pool": "train",
        "model": "human:first",
        "opponent": "human:second",
        "model_answer_id": pairs["first_id"].to_numpy(),
        "model_answer": pairs["first"].to_numpy(),
        "opponent_answer_id": pairs["second_id"].to_numpy(),
        "opponent_answer": pairs["second"].to_numpy(),
    })
