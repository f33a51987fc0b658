import itertools
from fractions import Fraction

import numpy as np
import pytest

from reappraisal.stats import sign_flip_test, sign_matrix


def brute_force_p(scenario_means, null):
    """Reference p-value: loop over every sign pattern in exact rational arithmetic."""
    d = [Fraction(m) - Fraction(null) for m in scenario_means]
    observed = abs(sum(d))
    patterns = list(itertools.product((-1, 1), repeat=len(d)))
    extreme = sum(abs(sum(s * x for s, x in zip(signs, d))) >= observed for signs in patterns)
    return Fraction(extreme, len(patterns))


def _rational_means(rng, g):
    # scenario means as they arise: (2 wins + ties) / (2 n), exact rationals
    n = rng.integers(5, 40, size=g)
    half_wins = rng.integers(0, 2 * n + 1)
    return [Fraction(int(h), int(2 * m)) for h, m in zip(half_wins, n)]


@pytest.mark.parametrize("g", range(1, 11))
@pytest.mark.parametrize("null", ["0.608", "0.5"])
def test_sign_flip_p_equals_brute_force_enumeration(g, null):
    rng = np.random.default_rng(g)
    for _ in range(5):
        means = _rational_means(rng, g)
        expected = brute_force_p(means, Fraction(null))
        result = sign_flip_test([float(m) for m in means], null=float(null))
        assert result.exact and result.n_patterns == 2**g
        assert Fraction(result.n_extreme, result.n_patterns) == expected


def test_exact_ties_in_the_statistic_are_counted_as_extreme():
    # d = (0.1, -0.1, 0.2) in exact decimals: |sum| >= 0.2 for 6 of the 8
    # patterns, two of them only by a tie; floating-point rounding of
    # 0.708 - 0.608 etc. must not lose them
    exact = brute_force_p(["0.708", "0.508", "0.808"], "0.608")
    assert exact == Fraction(6, 8)
    assert sign_flip_test([0.708, 0.508, 0.808], null=0.608).n_extreme == 6
    assert sign_flip_test([0.608] * 4, null=0.608).p_value == 1.0


def test_p_value_is_in_units_of_one_over_2_to_the_g():
    # all six scenarios far above the bar: only the identity and its mirror
    result = sign_flip_test([0.9, 0.85, 0.95, 0.8, 0.88, 0.92], null=0.608)
    assert result.n_extreme == 2 and result.p_value == 2 / 64


def test_sign_matrix_lists_every_pattern_once():
    signs = sign_matrix(5)
    assert signs.shape == (32, 5)
    assert len({tuple(row) for row in signs}) == 32


def test_monte_carlo_above_16_scenarios_approximates_exact_p():
    rng = np.random.default_rng(7)
    means = rng.normal(0.64, 0.1, size=18)
    d = means - 0.608
    # exact reference by enumeration in two halves of 9 scenarios
    half = sign_matrix(9)
    sums = (half @ d[:9])[:, None] + (half @ d[9:])[None, :]
    exact = np.mean(np.abs(sums) >= abs(d.sum()) - 1e-12)
    result = sign_flip_test(means, null=0.608, n_draws=100_000, seed=1)
    assert not result.exact
    assert result.p_value == pytest.approx(exact, abs=5 * np.sqrt(exact * (1 - exact) / 100_000))


@pytest.mark.parametrize("means", [[], [0.5, np.nan]])
def test_sign_flip_rejects_empty_or_nan(means):
    with pytest.raises(ValueError):
        sign_flip_test(means, null=0.608)
