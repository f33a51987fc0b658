import itertools
import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from reappraisal.stats import design_effect, headline_row, score_contests

from .helpers import judgments_from_scores

INTERVALS = [
    "ci_korn_graubard", "ci_cluster_clopper_pearson", "ci_stretched_logit_jackknife", "ci_logit_jackknife", "ci_cluster_t", "ci_iid_wilson", "ci_percentile_bootstrap", "ci_wild_cluster_bootstrap",
]


def logit_jackknife_by_hand(means, n, confidence=0.95):
    """Reference: loop over left-out scenarios, Tukey pseudo-values of logit(mean)."""
    g = len(means)
    eps = 0.5 / n
    lg = lambda p: np.log(np.clip(p, eps, 1 - eps) / (1 - np.clip(p, eps, 1 - eps)))
    pseudo = [g * lg(np.mean(means)) - (g - 1) * lg(np.mean(np.delete(means, i))) for i in range(g)]
    centre, se = np.mean(pseudo), np.std(pseudo, ddof=1) / np.sqrt(g)
    t = stats.t.ppf(0.5 + confidence / 2, g - 1)
    return 1 / (1 + np.exp(-(centre - t * se))), 1 / (1 + np.exp(-(centre + t * se)))


def stretched_logit_jackknife_by_hand(means, n, confidence=0.95, stretch=0.5):
    """Reference: the same loop on h = sinh(stretch * logit) / stretch, back through logit = asinh(stretch h) / stretch."""
    g = len(means)
    eps = 0.5 / n
    h = lambda p: np.sinh(stretch * np.log(np.clip(p, eps, 1 - eps) / (1 - np.clip(p, eps, 1 - eps)))) / stretch
    pseudo = [g * h(np.mean(means)) - (g - 1) * h(np.mean(np.delete(means, i))) for i in range(g)]
    centre, se = np.mean(pseudo), np.std(pseudo, ddof=1) / np.sqrt(g)
    t = stats.t.ppf(0.5 + confidence / 2, g - 1)
    back = lambda v: 1 / (1 + np.exp(-np.arcsinh(stretch * v) / stretch))
    return back(centre - t * se), back(centre + t * se)


def percentile_by_brute_force(means, confidence=0.95):
    """Reference: all G^G ordered resamples of scenarios, equally likely."""
    g = len(means)
    values = np.sort([np.mean(means[list(draw)]) for draw in itertools.product(range(g), repeat=g)])
    alpha = 1 - confidence
    return tuple(np.quantile(values, [alpha / 2, 1 - alpha / 2], method="inverted_cdf"))


def _scores(seed=0, n_scenarios=6, n_runs=3, per_cell=20, n_errors=7):
    rng = np.random.default_rng(seed)
    rates = rng.uniform(0.45, 0.9, size=n_scenarios)  # E[score] = rate
    rows = []
    for g in range(n_scenarios):
        for run in range(1, n_runs + 1):
            draws = rng.choice([1.0, 0.5, 0.0], size=per_cell, p=[rates[g] - 0.1, 0.2, 0.9 - rates[g]])
            rows += [(run, f"v{g}", s) for s in draws]
    scores = pd.DataFrame(rows, columns=["run", "vignette_id", "score"])
    scores.loc[rng.choice(len(scores), n_errors, replace=False), "score"] = np.nan
    return scores


@pytest.fixture(scope="module")
def scores():
    return _scores()


@pytest.fixture(scope="module")
def row(scores):
    return headline_row(score_contests(judgments_from_scores(scores)), bar=0.608)


def test_counts_errors_and_never_drops_them_silently(scores, row):
    assert row["n_contests_total"] == len(scores) == row["n_contests"] + row["n_errors"]
    assert row["n_errors"] == 7
    # errors (NaN) are skipped; the estimand is the mean of scenario means, and
    # the pooled rate is reported beside it (they differ: errors make sizes unequal)
    means = scores.groupby("vignette_id")["score"].mean()
    assert row["win_rate"] == pytest.approx(means.mean(), abs=1e-12)
    assert row["pooled_rate"] == pytest.approx(scores["score"].mean(), abs=1e-12)
    assert row["win_rate"] != row["pooled_rate"]
    assert (row["n_scenarios"], row["n_runs"]) == (6, 3)


def test_every_interval_in_the_row_estimates_one_quantity(scores, row):
    assert row["headline_interval"] == "ci_korn_graubard"
    assert "mean of the scenario win rates" in row["estimand"]
    for name in INTERVALS:
        ci = row[name]
        assert ci["assumption"] and ci["method"] and ci["confidence"] == 0.95
        assert ci["estimate"] == row["win_rate"]  # one estimand, not the pooled rate
        assert 0.0 <= ci["low"] <= ci["estimate"] <= ci["high"] <= 1.0
    assert "ignores clustering" in row["ci_iid_wilson"]["assumption"]
    assert "under-covers" in row["ci_percentile_bootstrap"]["assumption"]
    means = scores.groupby("vignette_id")["score"].mean().to_numpy()
    n = int(scores["score"].notna().sum())
    g = len(means)
    half = stats.t.ppf(0.975, g - 1) * means.std(ddof=1) / np.sqrt(g)
    pair = lambda ci: (row[ci]["low"], row[ci]["high"])
    assert pair("ci_cluster_t") == pytest.approx((means.mean() - half, means.mean() + half), abs=1e-12)
    assert pair("ci_logit_jackknife") == pytest.approx(logit_jackknife_by_hand(means, n), abs=1e-12)
    assert pair("ci_stretched_logit_jackknife") == pytest.approx(stretched_logit_jackknife_by_hand(means, n), abs=1e-12)
    # the stretch reaches further toward 1/2 on the side away from the nearer bound, no further toward it
    assert row["ci_stretched_logit_jackknife"]["low"] < row["ci_logit_jackknife"]["low"]
    assert pair("ci_iid_wilson") == pytest.approx(proportion_confint(means.mean() * n, n, method="wilson"), abs=1e-12)
    assert pair("ci_percentile_bootstrap") == pytest.approx(percentile_by_brute_force(means), abs=1e-12)
    # clustering costs width: the honest interval is wider than the iid one
    width = lambda ci: ci["high"] - ci["low"]
    assert width(row["ci_stretched_logit_jackknife"]) > width(row["ci_iid_wilson"])


def test_scenario_run_and_bar_summaries(scores, row):
    per_scenario = scores.groupby("vignette_id")["score"].mean()
    assert [s["win_rate"] for s in row["per_scenario"]] == pytest.approx(per_scenario.to_list())
    assert row["n_scenarios_clearing_bar"] == int((per_scenario >= 0.608).sum())
    per_run = scores.groupby("run")["score"].mean()
    assert [r["win_rate"] for r in row["per_run"]] == pytest.approx(per_run.to_list())
    assert 0.0 <= row["run_effect"]["p_value"] <= 1.0 and row["run_effect"]["method"] == "anova"
    assert row["design_effect"] > 1 and row["effective_n"] < row["n_contests"]
    for key in ("sign_flip_vs_bar", "sign_flip_vs_half"):
        test = row[key]
        assert test["exact"] and test["n_patterns"] == 64
        assert test["p_value"] == pytest.approx(test["n_extreme"] / 64)
        assert test["min_p_value"] == pytest.approx(2 / 64)
    assert row["sign_flip_vs_half"]["null"] == 0.5 and row["sign_flip_vs_bar"]["null"] == 0.608


def test_scenario_column_is_passed_on_to_every_summary(scores):
    contests = score_contests(judgments_from_scores(scores)).rename(columns={"vignette_id": "scenario"})
    contests["vignette_id"] = "one-label-for-all"  # a stale column must not be used
    row = headline_row(contests, bar=0.608, scenario="scenario")
    assert row["n_scenarios"] == 6
    assert all(r["n_scenarios"] == 6 for r in row["per_run"])
    assert row["run_effect"]["n_scenarios"] == 6


def test_design_effect_with_one_tiny_scenario_is_of_one_estimator():
    # no clustering at all (every contest iid), five scenarios of 120 and one of 3:
    # the design effect must be about 1 on average; dividing the variance of the
    # mean of scenario means by the iid variance of the pooled rate gave about 6
    rng = np.random.default_rng(4)
    labels = np.array([f"v{g}" for g in range(5) for _ in range(120)] + ["tiny"] * 3)
    scores = rng.choice([1.0, 0.5, 0.0], (2000, labels.size), p=[0.6, 0.2, 0.2])
    means = np.concatenate([scores[:, :600].reshape(2000, 5, 120).mean(-1), scores[:, 600:].mean(-1, keepdims=True)], 1)
    var_cluster = means.var(axis=1, ddof=1) / 6
    var_iid = scores.var(axis=1, ddof=1) * (5 / 120 + 1 / 3) / 36
    new = [design_effect(row, labels).design_effect for row in scores[:50]]
    assert new == pytest.approx(list(var_cluster[:50] / var_iid[:50]))
    assert 0.9 < np.mean(var_cluster / var_iid) < 1.1
    old = var_cluster / (scores.var(axis=1, ddof=1) / labels.size)
    assert np.mean(old) > 4


def test_row_is_strict_json(row):
    json.dumps(row, allow_nan=False)


def test_single_run_reports_why_the_run_effect_is_missing():
    scores = _scores(n_runs=1, n_errors=0)
    row = headline_row(score_contests(judgments_from_scores(scores)), bar=0.608)
    assert row["run_effect"]["p_value"] is None and "1 run" in row["run_effect"]["note"]


def test_many_scenarios_use_monte_carlo_bootstrap_reproducibly():
    contests = score_contests(judgments_from_scores(_scores(n_scenarios=12, n_runs=1, per_cell=10)))
    a = headline_row(contests, n_boot=20_000, seed=1, bar=0.608)
    b = headline_row(contests, n_boot=20_000, seed=1, bar=0.608)
    assert a["ci_percentile_bootstrap"] == b["ci_percentile_bootstrap"]
    assert a["sign_flip_vs_bar"]["n_patterns"] == 2**12


def test_headline_refuses_unusable_tables(scores):
    contests = score_contests(judgments_from_scores(scores))
    with pytest.raises(ValueError, match="one model"):
        headline_row(pd.concat([contests, contests.assign(model="other")]), bar=0.608)
    with pytest.raises(ValueError, match="at least 2 scenarios"):
        headline_row(contests[contests["vignette_id"] == "v0"], bar=0.608)
    with pytest.raises(ValueError, match="empty"):
        headline_row(contests.iloc[:0], bar=0.608)
    with pytest.raises(ValueError, match="error verdicts"):
        headline_row(contests[contests["error"]], bar=0.608)
    with pytest.raises(ValueError, match="error=True"):
        headline_row(contests.assign(error=False), bar=0.608)
