"""The headline row: one win rate with every interval and check beside it.

The headline interval is the cluster t interval on scenario means; the
others are shown so a reader can see what clustering costs, each labelled
with its assumption (see :data:`reappraisal.stats.intervals.ASSUMPTIONS`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .bootstrap import (
    MAX_EXACT_SCENARIOS,
    percentile_cluster_bootstrap_interval,
    wild_cluster_bootstrap_interval,
)
from .contests import check_contests, scenario_summary
from .intervals import Interval, cluster_t_interval, design_effect, wilson_interval
from .runs import per_run_rates, run_effect_test, scenario_run_table
from .signflip import sign_flip_test

DEFAULT_BAR = 0.608


def _single(contests: pd.DataFrame, column: str):
    values = contests[column].unique()
    if len(values) != 1:
        raise ValueError(
            f"headline_row needs contests of one {column}; got {sorted(map(str, values))}. "
            "Filter the table first"
        )
    return values[0]


def headline_row(
    contests: pd.DataFrame,
    bar: float = DEFAULT_BAR,
    *,
    confidence: float = 0.95,
    n_boot: int = 100_000,
    seed: int = 0,
    run_effect_method: str = "anova",
    scenario: str = "vignette_id",
) -> dict:
    """Summarize one (model, opponent, judge) contests table as a headline row.

    ``contests``: output of :func:`score_contests` for one model, one
    opponent and one judge, any number of runs (pooled inside scenarios).
    ``bar``: the win rate to beat (default 0.608). ``n_boot``: Monte Carlo
    draws for bootstraps that are not enumerated exactly (percentile: G > 8;
    wild: 6^G > n_boot); ``seed`` makes them reproducible.

    Returns a JSON-ready dict:

    - model, opponent, judge, bar, confidence;
    - win_rate: pooled mean score of scored contests (ties 0.5);
    - n_contests (scored), n_errors (contests with an error verdict, not in
      any rate), n_contests_total, n_scenarios (G, scenarios with a scored
      contest), scenarios_all_errors (list), n_runs;
    - ci_cluster_t (headline), ci_iid_wilson, ci_percentile_bootstrap,
      ci_wild_cluster_bootstrap: labelled interval dicts (method, estimate,
      low, high, confidence, assumption); headline_interval names the first.
      The cluster t estimate is the unweighted mean of scenario means (equal
      to win_rate when scenarios have equal numbers of scored contests); the
      other estimates are win_rate;
    - sign_flip_vs_bar, sign_flip_vs_half: sign-flip test dicts (p_value in
      units of 1/2^G when exact) on scenario means;
    - per_scenario: list of {scenario, n, n_errors, win_rate};
    - per_run: list of {run, n, n_errors, win_rate, n_scenarios};
    - run_effect: dict of :class:`RunEffectTest`, or {"p_value": None,
      "note": why} when there are fewer than 2 runs or complete scenarios;
    - design_effect, effective_n;
    - n_scenarios_clearing_bar: scenarios whose mean is >= bar.

    Undefined numbers (e.g. the design effect when every score is equal) are
    None. Raises ``ValueError`` on an empty or invalid table, several models /
    opponents / judges, no scored contest, or fewer than 2 scenarios.
    """
    check_contests(contests)
    if np.isnan(bar) or not 0.0 <= bar <= 1.0:
        raise ValueError(f"bar must be a win rate in [0, 1], got {bar}")
    model, opponent, judge = (_single(contests, c) for c in ("model", "opponent", "judge"))
    error = contests["error"].astype(bool)
    scored = contests[~error]
    if scored.empty:
        raise ValueError(f"all {len(contests)} contests have error verdicts; nothing to score")

    summary = scenario_summary(contests, scenario)
    all_errors = [str(s) for s in summary.index[summary["n"] == 0]]
    summary = summary[summary["n"] > 0]
    g = len(summary)
    if g < 2:
        raise ValueError(
            f"headline_row needs scored contests in at least 2 scenarios (clusters), got G = {g}"
        )
    sums = summary["sum"].to_numpy(dtype=float)
    sizes = summary["n"].to_numpy(dtype=float)
    means = summary["win_rate"].to_numpy(dtype=float)
    k, n = float(sums.sum()), int(sizes.sum())
    win_rate = k / n

    wilson = wilson_interval(k, n, confidence)
    cluster_t = cluster_t_interval(means, confidence)
    percentile = percentile_cluster_bootstrap_interval(
        sums, sizes, confidence, n_draws=n_boot, seed=seed, exact=g <= MAX_EXACT_SCENARIOS
    )
    wild = wild_cluster_bootstrap_interval(sums, sizes, confidence, n_draws=n_boot, seed=seed)
    intervals = {
        "ci_cluster_t": Interval.labelled("cluster_t", means.mean(), *cluster_t, confidence),
        "ci_iid_wilson": Interval.labelled("iid_wilson", win_rate, *wilson, confidence),
        "ci_percentile_bootstrap": Interval.labelled(
            "percentile_bootstrap", win_rate, *percentile, confidence
        ),
        "ci_wild_cluster_bootstrap": Interval.labelled(
            "wild_cluster_bootstrap", win_rate, *wild, confidence
        ),
    }

    runs = per_run_rates(contests)
    run_effect = _run_effect(contests, runs, run_effect_method, scenario)
    deff = design_effect(scored["score"].to_numpy(dtype=float), scored[scenario].to_numpy())

    return _json_ready({
        "model": str(model),
        "opponent": str(opponent),
        "judge": str(judge),
        "bar": float(bar),
        "confidence": float(confidence),
        "win_rate": win_rate,
        "n_contests": n,
        "n_errors": int(error.sum()),
        "n_contests_total": int(len(contests)),
        "n_scenarios": g,
        "scenarios_all_errors": all_errors,
        "n_runs": int(len(runs)),
        "headline_interval": "ci_cluster_t",
        **{name: interval.as_dict() for name, interval in intervals.items()},
        "sign_flip_vs_bar": sign_flip_test(means, null=bar, seed=seed).as_dict(),
        "sign_flip_vs_half": sign_flip_test(means, null=0.5, seed=seed).as_dict(),
        "per_scenario": [
            {
                "scenario": str(s),
                "n": int(r["n"]),
                "n_errors": int(r["n_errors"]),
                "win_rate": float(r["win_rate"]),
            }
            for s, r in scenario_summary(contests, scenario).iterrows()
        ],
        "per_run": [
            {
                "run": r_id,
                "n": int(r["n"]),
                "n_errors": int(r["n_errors"]),
                "win_rate": float(r["win_rate"]),
                "n_scenarios": int(r["n_scenarios"]),
            }
            for r_id, r in runs.iterrows()
        ],
        "run_effect": run_effect,
        "design_effect": deff.design_effect,
        "effective_n": deff.effective_n,
        "n_scenarios_clearing_bar": int((means >= bar).sum()),
    })


def _json_ready(value):
    """Replace non-finite floats (undefined quantities) by None, recursively."""
    if isinstance(value, dict):
        return {key: _json_ready(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(item) for item in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if np.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def _run_effect(contests, runs, method, scenario) -> dict:
    if len(runs) < 2:
        return {"p_value": None, "note": f"run effect not testable: {len(runs)} run"}
    try:
        return run_effect_test(scenario_run_table(contests, scenario), method=method).as_dict()
    except ValueError as exc:
        return {"p_value": None, "note": f"run effect not testable: {exc}"}
