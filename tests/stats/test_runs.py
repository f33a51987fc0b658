import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from scipy import stats

from reappraisal.stats import per_run_rates, run_effect_test, scenario_run_table, score_contests

from .helpers import judgments_from_scores


def _table(rng, g=6, r=3, run_shift=0.0):
    scenario = rng.normal(0.7, 0.1, size=(g, 1))
    run = np.arange(r)[None, :] * run_shift
    return scenario + run + rng.normal(0, 0.02, size=(g, r))


def test_anova_equals_statsmodels_additive_two_way_anova():
    table = _table(np.random.default_rng(0))
    long = pd.DataFrame(
        [(g, r, table[g, r]) for g in range(table.shape[0]) for r in range(table.shape[1])],
        columns=["scenario", "run", "y"],
    )
    fit = smf.ols("y ~ C(scenario) + C(run)", data=long).fit()
    ref = sm.stats.anova_lm(fit, typ=2).loc["C(run)"]
    result = run_effect_test(table)
    assert result.statistic == pytest.approx(ref["F"])
    assert result.p_value == pytest.approx(ref["PR(>F)"])
    assert result.df == (2, 10)


def test_friedman_option_equals_scipy():
    table = _table(np.random.default_rng(1))
    result = run_effect_test(table, method="friedman")
    ref = stats.friedmanchisquare(*table.T)
    assert (result.statistic, result.p_value) == pytest.approx((ref.statistic, ref.pvalue))


def test_planted_run_effect_is_detected_and_absent_one_is_not():
    rng = np.random.default_rng(2)
    assert run_effect_test(_table(rng, run_shift=0.05)).p_value < 0.001
    p_values = [run_effect_test(_table(rng)).p_value for _ in range(200)]
    # valid test: about 5% rejections under H0
    assert 0.01 <= np.mean(np.array(p_values) < 0.05) <= 0.10


def test_incomplete_scenarios_are_dropped_and_counted():
    table = _table(np.random.default_rng(3))
    table[0, 1] = np.nan
    result = run_effect_test(table)
    assert result.n_scenarios == 5 and result.n_scenarios_dropped == 1
    with pytest.raises(ValueError, match="at least 2 runs"):
        run_effect_test(table[:, :1])
    with pytest.raises(ValueError, match="at least 2 scenarios"):
        run_effect_test(table[:2])


def test_per_run_rates_and_scenario_run_table_from_contests():
    scores = pd.DataFrame(
        {
            "run": [1, 1, 1, 2, 2, 2],
            "vignette_id": ["a", "a", "b", "a", "b", "b"],
            "score": [1.0, 0.5, 0.0, np.nan, 1.0, 0.0],
        }
    )
    contests = score_contests(judgments_from_scores(scores))
    runs = per_run_rates(contests)
    assert runs.loc[1, "win_rate"] == pytest.approx(0.5) and runs.loc[1, "n"] == 3
    assert runs.loc[2, "win_rate"] == pytest.approx(0.5) and runs.loc[2, "n_errors"] == 1
    assert runs.loc[2, "n_scenarios"] == 1
    table = scenario_run_table(contests)
    assert table.loc["a", 1] == pytest.approx(0.75) and np.isnan(table.loc["a", 2])
    assert table.loc["b", 2] == pytest.approx(0.5)
