"""How often the pipeline is right, across worlds whose truth is known. Pure.

Simulation-based calibration (Talts et al. 2018) for the whole pipeline: the
demo world is drawn afresh many times (a world is a seed), the pipeline runs
on each, and its answers are checked against the world's truths.

* :func:`interval_coverage`: per table (and interval method), the share of
  intervals that cover their truth, with a Clopper-Pearson interval over the
  intervals (worlds are independent draws; the intervals of one world share
  its draw, so the count is the intervals', the worlds are listed beside it),
  each tail's miss rate and the median width.
* :func:`claim_calibration`: per claim, the 2×2 of the rule's verdict against
  the truth's across worlds: the **false-hold rate** (holds while the truth
  fails: the error a reader is hurt by), the **power** (holds when the truth
  holds), how often the truth held at all, each rate with its
  Clopper-Pearson interval; a claim whose truth never varied across worlds is
  marked ``decided_by_design`` (the world, not the data, decides it).
* :func:`overoptimization_agreement`: per arm, the training log's
  overoptimization verdict against the truth's (fresh draws at kept
  checkpoints).

Inputs are the per-world tables the summary writes (``truth.csv``, the claims
ledger's rows, ``overoptimization.csv`` and ``trajectory_fit.csv``), each with
a ``world`` column.
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping

import numpy as np
import pandas as pd
from scipy import stats

CONFIDENCE = 0.95
COVERAGE_COLUMNS = ["table", "method", "worlds", "intervals", "covered", "coverage", "coverage_low",
                    "coverage_high", "miss_below", "miss_above", "median_width"]
CLAIM_COLUMNS = ["claim", "rule", "worlds", "truth_holds", "holds_when_true", "holds_when_false", "false_hold_rate",
                 "false_hold_low", "false_hold_high", "power", "power_low", "power_high", "truth_held_rate",
                 "rule_held_rate", "decided_by_design"]
OVEROPT_COLUMNS = ["arm", "worlds", "truth_overoptimized", "log_overoptimized", "agree", "agreement"]
VERDICTS = ("holds", "fails")


def binomial_interval(k: int, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Clopper-Pearson interval of ``k`` successes in ``n`` (NaN, NaN when n = 0)."""
    if n == 0:
        return math.nan, math.nan
    ci = stats.binomtest(int(k), int(n)).proportion_ci(confidence_level=confidence, method="exact")
    return float(ci.low), float(ci.high)


def _rate(k: int, n: int) -> float:
    return k / n if n else math.nan


def interval_coverage(intervals: pd.DataFrame, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """One row per (table, method): see module doc. ``intervals``: world, table, method, low, high, truth."""
    rows = []
    for (table, method), g in intervals.groupby(["table", "method"], sort=True):
        below = int((g["truth"] < g["low"]).sum())
        above = int((g["truth"] > g["high"]).sum())
        n = len(g)
        covered = n - below - above
        low, high = binomial_interval(covered, n, confidence)
        rows.append({"table": table, "method": method, "worlds": int(g["world"].nunique()), "intervals": n,
                     "covered": covered, "coverage": _rate(covered, n), "coverage_low": low, "coverage_high": high,
                     "miss_below": _rate(below, n), "miss_above": _rate(above, n),
                     "median_width": float(np.median(g["high"] - g["low"]))})
    return pd.DataFrame(rows, columns=COVERAGE_COLUMNS)


def claim_calibration(verdicts: pd.DataFrame, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """One row per claim with a truth verdict in some world. ``verdicts``: world, claim, rule, rule_verdict,
    truth_verdict (holds/fails; other values, e.g. retracted or none, are left out)."""
    known = verdicts[verdicts["rule_verdict"].isin(VERDICTS) & verdicts["truth_verdict"].isin(VERDICTS)]
    rows = []
    for claim, g in known.groupby("claim", sort=True):
        true = g["truth_verdict"] == "holds"
        holds = g["rule_verdict"] == "holds"
        n_true, n_false = int(true.sum()), int((~true).sum())
        hold_true, hold_false = int((holds & true).sum()), int((holds & ~true).sum())
        fh_low, fh_high = binomial_interval(hold_false, n_false, confidence)
        pw_low, pw_high = binomial_interval(hold_true, n_true, confidence)
        rows.append({"claim": claim, "rule": str(g["rule"].iloc[0]), "worlds": int(len(g)), "truth_holds": n_true,
                     "holds_when_true": hold_true, "holds_when_false": hold_false,
                     "false_hold_rate": _rate(hold_false, n_false), "false_hold_low": fh_low,
                     "false_hold_high": fh_high, "power": _rate(hold_true, n_true), "power_low": pw_low,
                     "power_high": pw_high, "truth_held_rate": _rate(n_true, len(g)),
                     "rule_held_rate": _rate(int(holds.sum()), len(g)),
                     "decided_by_design": bool(len(g) > 1 and n_true in (0, len(g)))})
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS)


def overoptimization_agreement(log_verdicts: pd.DataFrame, truth_verdicts: pd.DataFrame) -> pd.DataFrame:
    """Per arm: the log's ``overoptimized`` (world, arm, overoptimized) against the truths' (same columns)."""
    both = log_verdicts[["world", "arm", "overoptimized"]].merge(
        truth_verdicts[["world", "arm", "overoptimized"]], on=["world", "arm"], suffixes=("_log", "_truth"))
    rows = []
    for arm, g in both.groupby("arm", sort=True):
        log, truth = g["overoptimized_log"].astype(bool), g["overoptimized_truth"].astype(bool)
        agree = int((log == truth).sum())
        rows.append({"arm": arm, "worlds": int(len(g)), "truth_overoptimized": int(truth.sum()),
                     "log_overoptimized": int(log.sum()), "agree": agree, "agreement": _rate(agree, len(g))})
    return pd.DataFrame(rows, columns=OVEROPT_COLUMNS)


def claim_verdict_rows(world: int, claims: Iterable[Mapping]) -> list[dict]:
    """A world's claims ledger rows as :func:`claim_calibration` reads them."""
    return [{"world": world, "claim": c["id"], "rule": c.get("rule"), "rule_verdict": c.get("rule_verdict"),
             "truth_verdict": c.get("truth_verdict")} for c in claims]

