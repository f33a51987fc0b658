"""The headline row: one win rate with every interval and check beside it.

One estimand per row: the equally weighted mean of the scenario win rates
(runs pooled within each scenario), i.e. the expected win rate on a scenario
drawn from the scenario population (:data:`ESTIMAND`). With equal numbers of
scored contests per scenario it equals the pooled rate k / n. Every interval
and test in the row estimates or tests that one quantity:

- headline: :func:`~reappraisal.stats.intervals.cluster_korn_graubard_interval`;
- distribution-free cluster Clopper-Pearson
  (:func:`~reappraisal.stats.intervals.cluster_clopper_pearson_interval`), valid for any
  distribution of scenario rates, wide;
- the stretched-logit and logit jackknives
  (:func:`~reappraisal.stats.intervals.cluster_stretched_logit_jackknife_interval`,
  :func:`~reappraisal.stats.intervals.cluster_logit_jackknife_interval`), sensitivity columns that
  fail near a bound with few contests;
- cluster t on the scenario means;
- iid Wilson: the Wilson score interval for θ̂ as if all n contests were
  independent trials (k = θ̂·n); labelled "ignores clustering";
- percentile and wild cluster bootstraps of the mean of scenario means;
- sign-flip tests of H0: mean of scenario means = bar, = 0.5.

Each interval carries its assumption (see
:data:`reappraisal.stats.intervals.ASSUMPTIONS`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .bootstrap import (
    MAX_EXACT_SCENARIOS,
    percentile_cluster_bootstrap_interval,
    wild_cluster_bootstrap_interval,
)
from ..json_values import json_ready
from .contests import check_contests, scenario_summary
from .intervals import (
    Interval,
    cluster_clopper_pearson_interval,
    cluster_korn_graubard_interval,
    cluster_logit_jackknife_interval,
    cluster_stretched_logit_jackknife_interval,
    cluster_t_interval,
    design_effect,
    wilson_interval,
)
from .runs import per_run_rates, run_effect_test, scenario_run_table
from .signflip import sign_flip_test

HEADLINE_INTERVAL = "ci_korn_graubard"
ESTIMAND = (
    "equally weighted mean of the scenario win rates (runs pooled within each scenario): "
    "the expected win rate on a scenario drawn from the scenario population; equals the "
    "pooled rate when scenarios have equal numbers of scored contests"
)


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
    *,
    bar: float,
    confidence: float = 0.95,
    n_boot: int = 100_000,
    seed: int = 0,
    run_effect_method: str = "anova",
    scenario: str = "vignette_id",
) -> dict:
    """Summarize one (model, opponent, judge) contests table as a headline row.

    ``contests``: output of :func:`score_contests` for one model, one
    opponent and one judge, any number of runs (pooled inside scenarios);
    ``scenario`` names its cluster column. ``bar``: the win rate to beat
    (config ``summary.bar``). ``n_boot``: Monte Carlo draws for bootstraps that are not
    enumerated exactly (percentile: G > 8; wild: 6^G > n_boot); ``seed`` makes
    them reproducible.

    Returns a JSON-ready dict:

    - model, opponent, judge, bar, confidence, estimand (text);
    - win_rate: the estimand's estimate θ̂, the mean of the scenario means;
      pooled_rate: k / n over scored contests (ties 0.5), for reference;
    - n_contests (scored), n_errors (contests with an error verdict, not in
      any rate), n_contests_total, n_scenarios (G, scenarios with a scored
      contest), scenarios_all_errors (list), n_runs;
    - ci_korn_graubard (headline), ci_cluster_clopper_pearson, ci_stretched_logit_jackknife,
      ci_logit_jackknife, ci_cluster_t, ci_iid_wilson, ci_percentile_bootstrap, ci_wild_cluster_bootstrap: labelled interval
      dicts (method, estimate = θ̂, low, high, confidence, assumption);
      headline_interval names the first;
    - sign_flip_vs_bar, sign_flip_vs_half: sign-flip test dicts on the
      scenario means (p in units of 1/2^G when exact; min_p_value = the
      smallest attainable p at this G);
    - per_scenario: list of {scenario, n, n_errors, win_rate};
    - per_run: list of {run, n, n_errors, win_rate (pooled), mean_of_scenarios,
      n_scenarios};
    - run_effect: dict of :class:`RunEffectTest`, or {"p_value": None,
      "note": why} when there are fewer than 2 runs or complete scenarios;
    - design_effect, effective_n (of θ̂, see :class:`DesignEffect`);
    - n_scenarios_clearing_bar: scenarios whose mean is >= bar.

    Undefined numbers (e.g. the design effect when every score is equal) are
    None. Raises ``ValueError`` on an empty or invalid table, several models /
    opponents / judges, no scored contest, or fewer than 2 scenarios.
    """
    check_contests(contests)
    if scenario not in contests.columns:
        raise ValueError(f"headline_row: contests has no scenario column {scenario!r}")
    if not np.isfinite(bar) or not 0.0 <= bar <= 1.0:
        raise ValueError(f"bar must be a win rate in [0, 1], got {bar}")
    model, opponent, judge = (_single(contests, c) for c in ("model", "opponent", "judge"))
    error = contests["error"].astype(bool)
    scored = contests[~error]
    if scored.empty:
        raise ValueError(f"all {len(contests)} contests have error verdicts; nothing to score")

    full_summary = scenario_summary(contests, scenario)
    summary = _scored_scenarios(full_summary)
    means = summary["win_rate"].to_numpy(dtype=float)
    n = int(summary["n"].sum())
    theta = float(means.mean())
    runs = per_run_rates(contests, scenario)
    deff = design_effect(scored["score"].to_numpy(dtype=float), scored[scenario].to_numpy())

    return json_ready({
        "model": str(model),
        "opponent": str(opponent),
        "judge": str(judge),
        "bar": float(bar),
        "confidence": float(confidence),
        "estimand": ESTIMAND,
        "win_rate": theta,
        "pooled_rate": float(summary["sum"].sum()) / n,
        "n_contests": n,
        "n_errors": int(error.sum()),
        "n_contests_total": int(len(contests)),
        "n_scenarios": len(summary),
        "scenarios_all_errors": [str(s) for s in full_summary.index[full_summary["n"] == 0]],
        "n_runs": int(len(runs)),
        "headline_interval": HEADLINE_INTERVAL,
        **headline_intervals(means, n, confidence=confidence, n_boot=n_boot, seed=seed),
        "sign_flip_vs_bar": sign_flip_test(means, null=bar, seed=seed).as_dict(),
        "sign_flip_vs_half": sign_flip_test(means, null=0.5, seed=seed).as_dict(),
        "per_scenario": _per_scenario_rows(full_summary),
        "per_run": _per_run_rows(runs),
        "run_effect": _run_effect(contests, runs, run_effect_method, scenario),
        "design_effect": deff.design_effect,
        "effective_n": deff.effective_n,
        "n_scenarios_clearing_bar": int((means >= bar).sum()),
    })


def _scored_scenarios(full_summary: pd.DataFrame) -> pd.DataFrame:
    """The scenarios with a scored contest; at least 2 (clusters) or a ValueError."""
    summary = full_summary[full_summary["n"] > 0]
    if len(summary) < 2:
        raise ValueError(
            f"headline_row needs scored contests in at least 2 scenarios (clusters), got G = {len(summary)}"
        )
    return summary


def headline_intervals(means: np.ndarray, n: int, *, confidence: float, n_boot: int, seed: int) -> dict[str, dict]:
    """The eight labelled intervals of θ̂ = mean of the scenario ``means`` (``n`` scored contests in all)."""
    theta = float(means.mean())
    ones = np.ones_like(means)
    bounds = {
        ("ci_korn_graubard", "cluster_korn_graubard"): cluster_korn_graubard_interval(means, n, confidence),
        ("ci_cluster_clopper_pearson", "cluster_clopper_pearson"): cluster_clopper_pearson_interval(means, confidence),
        ("ci_stretched_logit_jackknife", "cluster_stretched_logit_jackknife"):
            cluster_stretched_logit_jackknife_interval(means, n, confidence),
        ("ci_logit_jackknife", "cluster_logit_jackknife"): cluster_logit_jackknife_interval(means, n, confidence),
        ("ci_cluster_t", "cluster_t"): cluster_t_interval(means, confidence),
        ("ci_iid_wilson", "iid_wilson"): wilson_interval(theta * n, n, confidence),
        ("ci_percentile_bootstrap", "percentile_bootstrap"): percentile_cluster_bootstrap_interval(
            means, ones, confidence, n_draws=n_boot, seed=seed, exact=len(means) <= MAX_EXACT_SCENARIOS
        ),
        ("ci_wild_cluster_bootstrap", "wild_cluster_bootstrap"): wild_cluster_bootstrap_interval(
            means, ones, confidence, n_draws=n_boot, seed=seed
        ),
    }
    return {key: Interval.labelled(method, theta, *low_high, confidence).as_dict()
            for (key, method), low_high in bounds.items()}


def _per_scenario_rows(full_summary: pd.DataFrame) -> list[dict]:
    return [{"scenario": str(s), "n": int(r["n"]), "n_errors": int(r["n_errors"]), "win_rate": float(r["win_rate"])}
            for s, r in full_summary.iterrows()]


def _per_run_rows(runs: pd.DataFrame) -> list[dict]:
    return [{"run": r_id, "n": int(r["n"]), "n_errors": int(r["n_errors"]), "win_rate": float(r["win_rate"]),
             "mean_of_scenarios": float(r["mean_of_scenarios"]), "n_scenarios": int(r["n_scenarios"])}
            for r_id, r in runs.iterrows()]


def _run_effect(contests, runs, method, scenario) -> dict:
    if len(runs) < 2:
        return {"p_value": None, "note": f"run effect not testable: {len(runs)} run"}
    try:
        return run_effect_test(scenario_run_table(contests, scenario), method=method).as_dict()
    except ValueError as exc:
        return {"p_value": None, "note": f"run effect not testable: {exc}"}
