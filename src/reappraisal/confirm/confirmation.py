"""The registered test on the confirmation pool's contests. Pure.

The metric, interval and bar are the pre-registration's: the headline
estimand (equally weighted mean of the scenario win rates, runs pooled
inside each scenario), the headline interval (scenarios are the clusters)
and the one-sided test that the win rate exceeds the bar: *confirmed* when
the interval's lower end lies above the bar, *not confirmed* otherwise. The
exact sign-flip p against the bar is reported beside it. The
selection-pool estimate and the expected selection inflation are copied from
the pre-registration, so the three stand side by side.
"""

from __future__ import annotations

from typing import Mapping

import pandas as pd

from ..stats import HEADLINE_INTERVAL, headline_row
from ..table_contracts import SCORE_COLUMNS


def confirmation_result(contests: pd.DataFrame, document: Mapping, *, n_boot: int, seed: int) -> dict:
    """The confirmation of ``document`` (a pre-registration) from its contests (one judge, one model)."""
    interval = document["interval"]
    if interval["method"] != HEADLINE_INTERVAL:
        raise ValueError(f"the pre-registration names interval {interval['method']!r}; this code computes "
                         f"{HEADLINE_INTERVAL!r}")
    bar = float(document["bar"])
    row = headline_row(contests[SCORE_COLUMNS], bar=bar, confidence=float(interval["confidence"]), n_boot=n_boot, seed=seed)
    ci = row[HEADLINE_INTERVAL]
    selection = document["selection"]
    confirmed = bool(ci["low"] > bar)
    return {
        "system": document["selected_system"], "opponent": document["opponent"], "judge": document["judge"],
        "metric": document["metric"]["name"], "interval_method": ci["method"], "confidence": interval["confidence"],
        "bar": bar, "test": document["test"],
        "win_rate": row["win_rate"], "ci_low": ci["low"], "ci_high": ci["high"],
        "cluster_t_low": row["ci_cluster_t"]["low"], "cluster_t_high": row["ci_cluster_t"]["high"],
        "signflip_p_bar": row["sign_flip_vs_bar"]["p_value"], "signflip_min_p": row["sign_flip_vs_bar"]["min_p_value"],
        "contests": row["n_contests"], "errors": row["n_errors"], "scenarios": row["n_scenarios"],
        "runs": row["n_runs"], "per_scenario": row["per_scenario"],
        "verdict": "confirmed" if confirmed else "not confirmed",
        "selection_estimate": selection["selected_estimate"], "expected_inflation": selection["expected_inflation"],
        "shrunk_estimate": selection["shrunk_estimate"], "candidates": selection["k"],
        "selection_scenarios": len(selection["scenarios"]),
        "drop_from_selection": selection["selected_estimate"] - row["win_rate"],
    }
