import itertools
from math import comb

import numpy as np
import pytest

from reappraisal.stats import (
    cluster_bootstrap_draws,
    exact_cluster_bootstrap,
    exact_resample_counts,
    percentile_cluster_bootstrap_interval,
    webb_weight_matrix,
    weighted_quantile,
    wild_cluster_bootstrap_interval,
    wild_cluster_bootstrap_test,
)

SUMS = np.array([104.5, 88.0, 97.0, 70.5, 113.0, 81.5])  # fractional wins per scenario
SIZES = np.array([120.0, 118.0, 120.0, 111.0, 120.0, 119.0])  # some error contests removed


@pytest.mark.parametrize("g", range(1, 9))
def test_exact_enumeration_lists_every_distinct_resample_once(g):
    counts, probs = exact_resample_counts(g)
    assert counts.shape == (comb(2 * g - 1, g), g)
    assert (counts.sum(axis=1) == g).all()
    assert len({tuple(row) for row in counts}) == len(counts)
    assert probs.sum() == pytest.approx(1.0)


def test_exact_probabilities_equal_brute_force_over_all_ordered_draws():
    g = 5
    counts, probs = exact_resample_counts(g)
    tally = {}
    for draw in itertools.product(range(g), repeat=g):  # all g^g equally likely draws
        key = tuple(np.bincount(draw, minlength=g))
        tally[key] = tally.get(key, 0) + 1
    for row, p in zip(counts, probs):
        assert p == pytest.approx(tally[tuple(int(c) for c in row)] / g**g)


@pytest.mark.parametrize("g", [6, 8])
def test_exact_enumeration_equals_200k_draw_monte_carlo(g):
    rng = np.random.default_rng(g)
    sizes = rng.integers(80, 130, size=g).astype(float)
    sums = np.round(rng.uniform(0.4, 0.95, size=g) * sizes * 2) / 2
    values, probs = exact_cluster_bootstrap(sums, sizes)
    b = 200_000
    draws = cluster_bootstrap_draws(sums, sizes, b, seed=11)
    # mean and standard deviation within 5 Monte Carlo standard errors
    mean = values @ probs
    sd = np.sqrt(((values - mean) ** 2) @ probs)
    assert draws.mean() == pytest.approx(mean, abs=5 * sd / np.sqrt(b))
    assert draws.std() == pytest.approx(sd, rel=5 * np.sqrt(2 / b) + 1e-3)
    # the whole distribution function, at every atom, within 5 binomial SEs
    atoms = np.sort(np.unique(values))
    exact_cdf = np.array([probs[values <= a + 1e-15].sum() for a in atoms])
    mc_cdf = np.searchsorted(np.sort(draws), atoms + 1e-15, side="right") / b
    assert np.all(np.abs(mc_cdf - exact_cdf) <= 5 * np.sqrt(exact_cdf * (1 - exact_cdf) / b) + 1e-9)
    # the exact percentile bounds fall between the MC quantiles at p -+ 5 SE
    for p, exact_q in zip((0.025, 0.975), percentile_cluster_bootstrap_interval(sums, sizes)):
        delta = 5 * np.sqrt(p * (1 - p) / b)
        lo, hi = np.quantile(draws, [p - delta, p + delta], method="inverted_cdf")
        assert lo <= exact_q <= hi


def test_percentile_interval_exact_and_monte_carlo_agree_and_bracket_estimate():
    exact = percentile_cluster_bootstrap_interval(SUMS, SIZES)
    mc = percentile_cluster_bootstrap_interval(SUMS, SIZES, exact=False, n_draws=100_000, seed=3)
    assert mc == pytest.approx(exact, abs=0.01)
    assert exact[0] < SUMS.sum() / SIZES.sum() < exact[1]


def test_percentile_interval_is_vectorized_over_datasets():
    other = SUMS[::-1].copy()
    batch = percentile_cluster_bootstrap_interval(np.stack([SUMS, other]), SIZES)
    assert (batch[0][1], batch[1][1]) == pytest.approx(percentile_cluster_bootstrap_interval(other, SIZES))


def test_monte_carlo_draws_are_reproducible_by_seed():
    a = cluster_bootstrap_draws(SUMS, SIZES, 1000, seed=5)
    assert np.array_equal(a, cluster_bootstrap_draws(SUMS, SIZES, 1000, seed=5))
    assert not np.array_equal(a, cluster_bootstrap_draws(SUMS, SIZES, 1000, seed=6))


def test_weighted_quantile_with_equal_weights_is_numpy_inverted_cdf():
    x = np.random.default_rng(0).normal(size=(3, 101))
    q = [0.025, 0.5, 0.975]
    expected = np.quantile(x, q, axis=-1, method="inverted_cdf")
    assert np.allclose(weighted_quantile(x, np.full(101, 1 / 101), q), expected)


@pytest.mark.parametrize(
    "sums, sizes, message",
    [
        ([5.0], [10.0], "at least 2"),
        ([5.0, 3.0], [10.0, 0.0], "size > 0"),
        ([np.nan, 3.0], [10, 10], "NaN"),
        ([np.inf, 3.0], [10, 10], "finite"),
        ([5.0, 3.0], [np.inf, 10], "finite"),
        ([12.0, 3.0], [10, 10], "exceeds its size"),
        ([-1.0, 3.0], [10, 10], "negative"),
    ],
)
def test_bootstrap_input_validation(sums, sizes, message):
    for method in (percentile_cluster_bootstrap_interval, wild_cluster_bootstrap_interval):
        with pytest.raises(ValueError, match=message):
            method(sums, sizes)


def test_webb_weights_have_mean_zero_and_unit_variance_and_enumerate_exactly():
    weights, probs = webb_weight_matrix(3, n_draws=1000)
    assert weights.shape == (216, 3) and np.allclose(probs, 1 / 216)
    values = np.unique(weights)
    assert len(values) == 6 and values.mean() == pytest.approx(0) and (values**2).mean() == pytest.approx(1)


def _wild_t_brute_force(sums, sizes, centre):
    """Reference: loop over every Webb weight vector, rebuild the bootstrap
    sample's cluster sums, refit the mean and its CR1 standard error."""
    g, total = len(sums), sizes.sum()
    residuals = sums - sizes * centre
    values = [-np.sqrt(1.5), -1, -np.sqrt(0.5), np.sqrt(0.5), 1, np.sqrt(1.5)]
    out = []
    for w in itertools.product(values, repeat=g):
        star = sizes * centre + np.array(w) * residuals
        theta = star.sum() / total
        se = np.sqrt(g / (g - 1) * ((star - sizes * theta) ** 2).sum()) / total
        out.append((theta - centre) / se)
    return np.array(out)


def test_wild_interval_equals_brute_force_bootstrap_t():
    sums, sizes = SUMS[:4], SIZES[:4]
    estimate = sums.sum() / sizes.sum()
    residuals = sums - sizes * estimate
    se = np.sqrt(4 / 3 * (residuals**2).sum()) / sizes.sum()
    t = _wild_t_brute_force(sums, sizes, estimate)
    q_low, q_high = np.quantile(t, [0.025, 0.975], method="inverted_cdf")
    expected = (estimate - q_high * se, estimate - q_low * se)
    assert wild_cluster_bootstrap_interval(sums, sizes) == pytest.approx(expected)


def test_wild_test_equals_brute_force_restricted_bootstrap():
    sums, sizes, null = SUMS[:4], SIZES[:4], 0.75
    estimate = sums.sum() / sizes.sum()
    se = np.sqrt(4 / 3 * ((sums - sizes * estimate) ** 2).sum()) / sizes.sum()
    t = _wild_t_brute_force(sums, sizes, null)
    expected = np.mean(np.abs(t) >= abs((estimate - null) / se))
    assert wild_cluster_bootstrap_test(sums, sizes, null) == pytest.approx(expected)


def test_wild_interval_collapses_when_scenarios_are_identical():
    assert wild_cluster_bootstrap_interval([60.0, 60.0, 60.0], [120, 120, 120]) == (0.5, 0.5)
