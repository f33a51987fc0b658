import json

import numpy as np
import pandas as pd
import pytest

from reappraisal.stats import (
    cluster_t_interval,
    headline_row,
    score_contests,
    wilson_interval,
)

from .helpers import judgments_from_scores

INTERVALS = ["ci_cluster_t", "ci_iid_wilson", "ci_percentile_bootstrap", "ci_wild_cluster_bootstrap"]


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
    assert row["win_rate"] == pytest.approx(scores["score"].mean())  # NaN (errors) skipped
    assert (row["n_scenarios"], row["n_runs"]) == (6, 3)


def test_every_interval_is_labelled_and_the_headline_is_cluster_t(scores, row):
    assert row["headline_interval"] == "ci_cluster_t"
    for name in INTERVALS:
        ci = row[name]
        assert ci["assumption"] and ci["method"] and ci["confidence"] == 0.95
        assert 0.0 <= ci["low"] <= ci["estimate"] <= ci["high"] <= 1.0
    assert "ignores clustering" in row["ci_iid_wilson"]["assumption"]
    assert "under-covers" in row["ci_percentile_bootstrap"]["assumption"]
    means = scores.groupby("vignette_id")["score"].mean().to_numpy()
    assert (row["ci_cluster_t"]["low"], row["ci_cluster_t"]["high"]) == pytest.approx(cluster_t_interval(means))
    k, n = scores["score"].sum(), scores["score"].notna().sum()
    assert (row["ci_iid_wilson"]["low"], row["ci_iid_wilson"]["high"]) == pytest.approx(wilson_interval(k, n))
    # clustering costs width: the honest interval is wider than the iid one
    width = lambda ci: ci["high"] - ci["low"]  # noqa: E731
    assert width(row["ci_cluster_t"]) > width(row["ci_iid_wilson"])


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
    assert row["sign_flip_vs_half"]["null"] == 0.5 and row["sign_flip_vs_bar"]["null"] == 0.608


def test_row_is_strict_json(row):
    json.dumps(row, allow_nan=False)


def test_single_run_reports_why_the_run_effect_is_missing():
    scores = _scores(n_runs=1, n_errors=0)
    row = headline_row(score_contests(judgments_from_scores(scores)))
    assert row["run_effect"]["p_value"] is None and "1 run" in row["run_effect"]["note"]


def test_many_scenarios_use_monte_carlo_bootstrap_reproducibly():
    contests = score_contests(judgments_from_scores(_scores(n_scenarios=12, n_runs=1, per_cell=10)))
    a = headline_row(contests, n_boot=20_000, seed=1)
    b = headline_row(contests, n_boot=20_000, seed=1)
    assert a["ci_percentile_bootstrap"] == b["ci_percentile_bootstrap"]
    assert a["sign_flip_vs_bar"]["n_patterns"] == 2**12


def test_headline_refuses_unusable_tables(scores):
    contests = score_contests(judgments_from_scores(scores))
    with pytest.raises(ValueError, match="one model"):
        headline_row(pd.concat([contests, contests.assign(model="other")]))
    with pytest.raises(ValueError, match="at least 2 scenarios"):
        headline_row(contests[contests["vignette_id"] == "v0"])
    with pytest.raises(ValueError, match="empty"):
        headline_row(contests.iloc[:0])
    with pytest.raises(ValueError, match="error verdicts"):
        headline_row(contests[contests["error"]])
    with pytest.raises(ValueError, match="error=True"):
        headline_row(contests.assign(error=False))
