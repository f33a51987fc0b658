"""Judge calibration against human preference: the numbers, and the pass/fail decision. Pure.

For one candidate judge, from its judgments of the calibration pairs (both
orders; :mod:`.human_pairs`) and the pairs' human margins:

- agreement with humans on clearly separated pairs (``|margin| >= delta``,
  chosen by human ratings only), three ways: undecided (ties or an
  order-dependent winner) counted wrong, as 0.5, and dropped; Cohen's κ;
- agreement by bins of human margin (agreement should rise with the gap);
- position consistency, and first-slot bias with an exact binomial test.

:func:`decide` applies the config's minimum agreement to every candidate;
a judge the evaluation uses passes, fails (the stage stops), or fails but is
knowingly accepted (``accept_weak_judge``), which the report then states.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import pandas as pd

from ..stats import agreement_by_margin, first_slot_bias, human_agreement, position_consistency
from ..errors import PipelineInputError

AGREEMENT_WAYS = {"strict": "agreement_strict", "half": "agreement_half", "dropped": "agreement_dropped"}


def _clean(value):
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def judge_calibration(judgments: pd.DataFrame, pairs: pd.DataFrame, *, delta: float,
                      margin_edges: Sequence[float]) -> dict:
    """Calibration numbers of ONE judge (see module doc). ``pairs``: pair_id, margin."""
    margins = pd.DataFrame({"contest_id": pairs["pair_id"], "human_margin": pairs["margin"].astype(float)})
    agreement = human_agreement(judgments, margins, min_margin=delta)
    bins = agreement_by_margin(judgments, margins, margin_edges)
    return {
        "n_pairs_judged": int(judgments["contest_id"].nunique()),
        "agreement": {k: _clean(agreement.get(v)) for k, v in AGREEMENT_WAYS.items()},
        "n_separated_pairs": agreement["n_pairs"],
        "n_undecided": agreement["n_undecided"],
        "n_errors": agreement["n_errors"],
        "kappa": _clean(agreement["kappa"]),
        "by_margin": [{k: _clean(v) for k, v in row.items()} for row in bins.to_dict("records")],
        "position": {k: _clean(v) for k, v in position_consistency(judgments).items()},
        "first_slot_bias": {k: _clean(v) for k, v in first_slot_bias(judgments).items()},
    }


def decide(numbers: Mapping[str, Mapping], *, selected: Sequence[str], min_agreement: float, way: str,
           accept_weak: bool) -> dict:
    """Pass/fail of every candidate: agreement (counted ``way``) >= ``min_agreement``.

    Only the judges the evaluation uses (``selected``) can stop the stage; the
    other candidates' verdicts are recorded so the gate is seen at work.
    """
    verdicts = {}
    for name in [*selected, *(n for n in numbers if n not in selected)]:
        value = numbers[name]["agreement"][way]
        verdicts[name] = {"agreement": value, "passed": value is not None and value >= min_agreement,
                          "selected": name in selected}
    failed = [n for n in selected if not verdicts[n]["passed"]]
    return {
        "selected": list(selected),
        "min_agreement": float(min_agreement),
        "agreement_counted": way,
        "verdicts": verdicts,
        "failed": failed,
        "accepted_weak": bool(failed) and bool(accept_weak),
        "ok": not failed or bool(accept_weak),
    }


def check_calibrated(judges: Sequence[str], calibration: dict) -> None:
    """Every held-out judge of the evaluation was calibrated and passed (or was knowingly accepted)."""
    verdicts = calibration.get("decision", {}).get("verdicts", {})
    for name in judges:
        if name not in verdicts:
            raise PipelineInputError(f"judge {name!r} was not calibrated; add it to evaluation.calibration.candidates",
                                     where="config evaluation.judges")
        if not verdicts[name]["passed"] and not calibration["decision"]["accepted_weak"]:
            raise PipelineInputError(f"judge {name!r} did not pass calibration", where="config evaluation.judges")
