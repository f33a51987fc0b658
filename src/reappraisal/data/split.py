"""Reappraisal-level split, per-reappraisal targets and preference pairs. Pure, no I/O.

Units: a *target* is one reappraisal's mean z-rating per dimension (z as in
:mod:`reappraisal.data.normalize`). The split is by reappraisal, so no
reappraisal appears in two splits; it is stratified by scenario so every
training scenario appears in both train and val. Everything not written by a
human participant (GPT-4 references and every opponent model's answers) is
``heldout`` and never enters train or val. Human reappraisals with fewer than
``min_ratings`` ratings on the primary dimension are ``excluded`` (counted).

A *pair* is two human reappraisals of the same scenario from the same split,
with the human margin |z_a − z_b| on the primary dimension; A/B order is
randomised so position carries no information.
"""

from __future__ import annotations

import hashlib
from typing import Any, Sequence

import numpy as np
import pandas as pd

SPLITS = ("train", "val", "heldout", "excluded")
HUMAN = "human"


def stable_rng(seed: int, *keys: str) -> np.random.Generator:
    """A generator determined by ``seed`` and string keys (independent of hash randomisation)."""
    digest = hashlib.sha256("\x1f".join(keys).encode()).digest()
    return np.random.default_rng([seed, int.from_bytes(digest[:8], "little")])


def build_targets(reappraisals: pd.DataFrame, ratings_z: pd.DataFrame, dimensions: Sequence[str]) -> pd.DataFrame:
    """One row per reappraisal: ``z_<dim>`` (mean z, NaN if unrated), ``n_<dim>``, ``n_ratings``."""
    agg = ratings_z.groupby(["reappraisal_id", "dimension"])["z"].agg(["mean", "size"]).unstack("dimension")
    out = reappraisals[["reappraisal_id", "vignette_id", "author_type", "study", "text"]].copy()
    for dim in dimensions:
        mean = agg["mean"][dim] if ("mean", dim) in agg.columns else pd.Series(dtype=float)
        size = agg["size"][dim] if ("size", dim) in agg.columns else pd.Series(dtype=float)
        out[f"z_{dim}"] = out["reappraisal_id"].map(mean).astype("float64")
        out[f"n_{dim}"] = out["reappraisal_id"].map(size).fillna(0).astype("int64")
    out["n_ratings"] = out[[f"n_{d}" for d in dimensions]].sum(axis=1).astype("int64")
    return out


def assign_splits(
    targets: pd.DataFrame,
    train_vignettes: Sequence[str],
    *,
    primary_dimension: str,
    val_fraction: float,
    heldout_author_types: Sequence[str],
    min_ratings: int,
    seed: int,
) -> pd.DataFrame:
    """Add a ``split`` column; raise ValueError when a scenario cannot be in both train and val."""
    out = targets.copy()
    out["split"] = "excluded"
    non_human = out["author_type"] != HUMAN
    explicitly_held = out["author_type"].isin(list(heldout_author_types))
    out.loc[non_human | explicitly_held, "split"] = "heldout"
    eligible = ~(non_human | explicitly_held) & (out[f"n_{primary_dimension}"] >= min_ratings)
    for vid in sorted(train_vignettes):
        ids = out.index[eligible & (out["vignette_id"] == vid)].to_numpy()
        if len(ids) < 2:
            raise ValueError(
                f"scenario {vid!r} has {len(ids)} usable human reappraisal(s); at least 2 are needed so it appears in train and val"
            )
        ids = np.sort(ids)
        stable_rng(seed, "split", vid).shuffle(ids)
        n_val = min(max(1, int(round(val_fraction * len(ids)))), len(ids) - 1)
        out.loc[ids[:n_val], "split"] = "val"
        out.loc[ids[n_val:], "split"] = "train"
    # Human reappraisals of scenarios outside the training pool are not trained on.
    stray = eligible & ~out["vignette_id"].isin(list(train_vignettes))
    out.loc[stray, "split"] = "heldout"
    return out


def build_pairs(targets: pd.DataFrame, *, primary_dimension: str, max_pairs_per_scenario: int, seed: int) -> pd.DataFrame:
    """Within-scenario, within-split pairs of human reappraisals with their human margin.

    Exact ties on the primary dimension carry no preference and are skipped.
    When a scenario has more candidate pairs than ``max_pairs_per_scenario``,
    a deterministic uniform sample is kept.
    """
    z_col = f"z_{primary_dimension}"
    rows: list[dict[str, Any]] = []
    human = targets[(targets["split"].isin(["train", "val"])) & targets[z_col].notna()]
    for (split, vid), grp in human.groupby(["split", "vignette_id"], sort=True):
        grp = grp.sort_values("reappraisal_id")
        ids = grp["reappraisal_id"].to_numpy()
        texts = grp["text"].to_numpy()
        z = grp[z_col].to_numpy()
        i, j = np.triu_indices(len(ids), k=1)
        keep = z[i] != z[j]
        i, j = i[keep], j[keep]
        rng = stable_rng(seed, "pairs", split, vid)
        if len(i) > max_pairs_per_scenario:
            pick = np.sort(rng.choice(len(i), size=max_pairs_per_scenario, replace=False))
            i, j = i[pick], j[pick]
        swap = rng.random(len(i)) < 0.5
        a = np.where(swap, j, i)
        b = np.where(swap, i, j)
        for ai, bi in zip(a, b):
            rows.append(
                {
                    "vignette_id": vid,
                    "split": split,
                    "id_a": ids[ai],
                    "id_b": ids[bi],
                    "text_a": texts[ai],
                    "text_b": texts[bi],
                    "z_a": float(z[ai]),
                    "z_b": float(z[bi]),
                }
            )
    pairs = pd.DataFrame(rows, columns=["vignette_id", "split", "id_a", "id_b", "text_a", "text_b", "z_a", "z_b"])
    pairs["margin"] = (pairs["z_a"] - pairs["z_b"]).abs()
    pairs["preferred"] = np.where(pairs["z_a"] > pairs["z_b"], "A", "B")
    pairs.insert(0, "pair_id", [f"p{k:06d}" for k in range(len(pairs))])
    return pairs


def split_warnings(targets: pd.DataFrame, pairs: pd.DataFrame, vignettes: pd.DataFrame) -> list[dict[str, str]]:
    """Scenarios the split leaves without something to evaluate against (the run goes on; the report shows them).

    ``no_val_pairs``: a training scenario whose validation reappraisals form no
    pair (one reappraisal, or all tied), so held-out pairwise accuracy says
    nothing about it. ``no_heldout_answers``: a scenario with no held-out
    answer (reference or opponent) for a policy's answers to be judged against.
    """
    val_pairs = pairs[pairs["split"] == "val"].groupby("vignette_id").size()
    heldout = targets[targets["split"] == "heldout"].groupby("vignette_id").size()
    out: list[dict[str, str]] = []
    for vid, pool in vignettes.sort_values("vignette_id")[["vignette_id", "pool"]].itertuples(index=False):
        if pool == "train" and int(val_pairs.get(vid, 0)) == 0:
            n_val = int(((targets["vignette_id"] == vid) & (targets["split"] == "val")).sum())
            out.append(
                {
                    "scenario": vid,
                    "pool": pool,
                    "check": "no_val_pairs",
                    "message": f"{n_val} validation reappraisal(s) and no validation pair: held-out accuracy cannot be measured on this scenario",
                }
            )
        if int(heldout.get(vid, 0)) == 0:
            out.append(
                {
                    "scenario": vid,
                    "pool": pool,
                    "check": "no_heldout_answers",
                    "message": "no held-out answer (reference or opponent): a policy's answers here have nothing to be judged against",
                }
            )
    return out


def split_summary(targets: pd.DataFrame, pairs: pd.DataFrame, vignettes: pd.DataFrame | None = None) -> dict[str, Any]:
    """Counts per split, scenario and author type; with ``vignettes``, also :func:`split_warnings`."""
    counts = targets.groupby(["vignette_id", "split"]).size().unstack(fill_value=0)
    warnings = split_warnings(targets, pairs, vignettes) if vignettes is not None else []
    return {
        "warnings": warnings,
        "reappraisals_by_split": {s: int((targets["split"] == s).sum()) for s in SPLITS},
        "heldout_by_author_type": targets[targets["split"] == "heldout"].groupby("author_type").size().astype(int).to_dict(),
        "per_scenario": {vid: {k: int(v) for k, v in row.items()} for vid, row in counts.iterrows()},
        "pairs_by_split": pairs.groupby("split").size().astype(int).to_dict(),
        "pair_margin_quantiles": pairs["margin"].quantile([0.1, 0.5, 0.9]).round(4).to_dict() if len(pairs) else {},
    }
