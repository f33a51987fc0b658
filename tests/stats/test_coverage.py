"""Coverage of the win-rate intervals on simulated clustered data.

4,000 datasets of 6 scenarios x 3 runs x 40 contests (scores 1 / 0.5 / 0,
ties included), runs pooled inside scenarios; true scenario rates spread
around 0.75 with sd ``spread``. The truth is the mean rate of the scenario
population, the quantity a claim about new scenarios is about. Every method
is computed for all datasets at once (the percentile bootstrap by exact
enumeration of the 462 resamples, the wild bootstrap with 1,999 shared Webb
weight draws).
"""

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from reappraisal.stats import (
    cluster_t_interval,
    percentile_cluster_bootstrap_interval,
    wild_cluster_bootstrap_interval,
    wilson_interval,
)

from .helpers import simulate_clustered

N_DATASETS = 4000
TRUE_MEAN = 0.75


def coverage(spread, *, mean=TRUE_MEAN, seed=2024):
    rng = np.random.default_rng(seed)
    sums, sizes = simulate_clustered(rng, N_DATASETS, mean=mean, spread=spread)
    intervals = {
        "iid_wilson": wilson_interval(sums.sum(axis=1), sizes.sum(axis=1)),
        "cluster_t": cluster_t_interval(sums / sizes),
        "percentile": percentile_cluster_bootstrap_interval(sums, sizes),
        "wild": wild_cluster_bootstrap_interval(sums, sizes, n_draws=1999, seed=seed),
    }
    return {name: float(np.mean((low <= mean) & (mean <= high))) for name, (low, high) in intervals.items()}


@pytest.fixture(scope="module")
def coverage_by_spread():
    return {spread: coverage(spread) for spread in (0.0, 0.05, 0.1)}


def test_simulated_truth_is_the_mean_of_the_estimates():
    rng = np.random.default_rng(1)
    sums, sizes = simulate_clustered(rng, N_DATASETS, spread=0.1)
    assert (sums.sum(axis=1) / sizes.sum(axis=1)).mean() == pytest.approx(TRUE_MEAN, abs=0.003)


@pytest.mark.parametrize("spread", [0.0, 0.05, 0.1])
def test_cluster_t_keeps_nominal_coverage_at_six_scenarios(coverage_by_spread, spread):
    # 4,000 datasets: Monte Carlo SE of a coverage near 0.95 is about 0.0035
    assert 0.91 <= coverage_by_spread[spread]["cluster_t"] <= 0.98


@pytest.mark.parametrize("spread", [0.05, 0.1])
def test_percentile_bootstrap_under_covers_when_scenarios_differ(coverage_by_spread, spread):
    covered = coverage_by_spread[spread]
    assert 0.75 < covered["percentile"] < 0.90
    assert covered["percentile"] < covered["cluster_t"] - 0.04


@pytest.mark.parametrize("spread", [0.05, 0.1])
def test_iid_wilson_far_below_nominal_when_scenarios_differ(coverage_by_spread, spread):
    assert coverage_by_spread[spread]["iid_wilson"] < 0.85
    assert coverage_by_spread[0.1]["iid_wilson"] < 0.65  # more spread, worse


def test_iid_wilson_near_nominal_when_scenarios_do_not_differ(coverage_by_spread):
    assert coverage_by_spread[0.0]["iid_wilson"] >= 0.93


@pytest.mark.parametrize("spread", [0.0, 0.1])
def test_wild_cluster_bootstrap_is_near_nominal(coverage_by_spread, spread):
    assert 0.90 <= coverage_by_spread[spread]["wild"] <= 0.985


@pytest.mark.parametrize("mean", [0.0, 1.0])
def test_edge_cases_all_losses_and_all_wins(mean):
    rng = np.random.default_rng(5)
    sums, sizes = simulate_clustered(rng, 50, mean=mean, spread=0.0)
    assert np.all(sums == mean * sizes)  # k = 0 or k = n in every scenario
    k, n = sums.sum(axis=1), sizes.sum(axis=1)
    low, high = wilson_interval(k, n)
    ref_low, ref_high = proportion_confint(k, n, method="wilson")
    assert np.allclose(low, ref_low) and np.allclose(high, ref_high)
    assert np.all((low <= mean) & (mean <= high)) and np.all(high - low > 0)  # Wilson stays open
    for low, high in (
        cluster_t_interval(sums / sizes),
        percentile_cluster_bootstrap_interval(sums, sizes),
        wild_cluster_bootstrap_interval(sums, sizes, n_draws=999),
    ):
        # no spread at all: the clustered intervals collapse onto the truth, never NaN
        assert np.all(low == mean) and np.all(high == mean)
    assert coverage(0.0, mean=mean)["cluster_t"] == 1.0
