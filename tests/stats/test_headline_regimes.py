"""The headline interval over the whole regime the pipeline produces (``benchmarks/headline_regimes.py``).

Settings drawn (fixed seed) from both of the benchmark's grids: win rates 0.01-0.99, G 4-12, 4-200 contests a
scenario, equal and unequal, ties 0-20 %, Beta and logit-normal scenario rates with sd up to 0.2; plus the
one-tie case a demo build produces out of distribution. The same settings, the same random streams as the benchmark.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from reappraisal.stats import (
    cluster_clopper_pearson_interval,
    cluster_korn_graubard_interval,
    cluster_stretched_logit_jackknife_interval,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import headline_regimes as regimes

DATASETS = 1500
#: Nearly two-valued scenario rates (sd 0.2 at a rate of 0.1 or 0.9: two thirds of the largest sd possible) with
#: G = 12 and 4-6 contests a scenario: the headline's coverage there is 0.917-0.942 (benchmark); measured, not hidden.
def out_of_reach(setting) -> bool:
    family, g, mean, spread, per, unequal, tie = setting
    return g == 12 and spread == 0.2 and mean in (0.1, 0.9) and per <= 6


def _sample():
    rng = np.random.default_rng(47)
    chosen = []
    for name, size in (("tuning", 270), ("holdout", 130)):
        grid = regimes.GRIDS[name]
        every = list(regimes.settings(grid))
        near = [s for s in every if min(s[2], 1 - s[2]) <= 0.1 and not out_of_reach(s)]
        rest = [s for s in every if min(s[2], 1 - s[2]) > 0.1 and not out_of_reach(s)]
        for pool, k in ((near, 2 * size // 3), (rest, size // 3)):
            for i in sorted(rng.choice(len(pool), k, replace=False)):
                chosen.append((name, pool[i]))
    return chosen


SETTINGS = _sample()
CANDIDATES = ("stretched_logit_jackknife", regimes.HEADLINE, "cluster_clopper_pearson")


@pytest.fixture(scope="module")
def measured():
    return {(name, s): regimes.measure(s, regimes.GRIDS[name]["seed"], DATASETS, CANDIDATES) for name, s in SETTINGS}


def test_the_benchmarks_headline_is_the_pipelines():
    rng = np.random.default_rng(0)
    means = rng.beta(0.5, 8, size=(50, 6))
    assert np.array_equal(np.stack(regimes.CANDIDATES[regimes.HEADLINE](means, 240.0)),
                          np.stack(cluster_korn_graubard_interval(means, 240.0)))


def test_headline_keeps_coverage_and_both_tails_on_the_whole_regime(measured):
    failing = {key: r[regimes.HEADLINE] for key, r in measured.items() if regimes.fails(r[regimes.HEADLINE])}
    assert not failing, failing


def test_todays_jackknife_fails_near_the_bounds_where_the_headline_holds(measured):
    near = [r for (name, s), r in measured.items() if min(s[2], 1 - s[2]) <= 0.1]
    assert sum(regimes.fails(r["stretched_logit_jackknife"]) for r in near) > len(near) // 4
    assert min(r["stretched_logit_jackknife"]["coverage"] for r in near) < 0.8


def test_the_distribution_free_bound_covers_where_the_headline_cannot():
    for setting in [s for s in regimes.settings(regimes.GRIDS["tuning"]) if out_of_reach(s)][::4]:
        r = regimes.measure(setting, regimes.GRIDS["tuning"]["seed"], DATASETS, CANDIDATES)
        assert not regimes.fails(r["cluster_clopper_pearson"]), (setting, r)
        assert r[regimes.HEADLINE]["coverage"] > 0.9, (setting, r)  # short of the bar, not far from it


def test_the_headline_is_not_wider_than_the_data_need_away_from_the_bounds(measured):
    # the cap costs width only near a bound: at rates 0.15-0.85 the headline stays well inside the distribution-free one
    mid = [r for (name, s), r in measured.items() if min(s[2], 1 - s[2]) > 0.2]
    ratio = np.median([r[regimes.HEADLINE]["width"] / r["cluster_clopper_pearson"]["width"] for r in mid])
    assert ratio < 0.7


def test_one_tie_in_seven_scenarios_of_six_contests_covers_rates_up_to_a_tenth():
    # the out-of-distribution pool of a demo build: G = 7, 6 contests a scenario, one tie and nothing else
    means = np.zeros(7)
    means[0] = 0.5 / 6
    theta = means.mean()
    low, high = cluster_korn_graubard_interval(means, 42)
    assert 0 < low < theta < 0.1 < high < 0.5
    _, old_high = cluster_stretched_logit_jackknife_interval(means, 42)
    assert old_high == pytest.approx(theta)  # what it replaced: degenerate, the upper bound at the estimate


@pytest.mark.parametrize("g, per", [(4, 4), (6, 6), (7, 6), (6, 120), (12, 200)])
def test_never_degenerate_a_bound_never_equals_a_nonzero_estimate(g, per):
    rng = np.random.default_rng(g * per)
    for mean in (0.01, 0.05, 0.3, 0.95, 0.99):
        means, n = regimes.simulate_regime(rng, 500, n_scenarios=g, mean=mean, spread=0.05, per_scenario=per,
                                           tie_share=0.1)
        theta = means.mean(axis=1)
        low, high = cluster_korn_graubard_interval(means, n)
        inside = (theta > 0) & (theta < 1)
        assert np.all(low[inside] < theta[inside]) and np.all(high[inside] > theta[inside])
        assert np.all(high - low > 0)
        d_low, d_high = cluster_clopper_pearson_interval(means)
        assert np.all(d_low[inside] < theta[inside]) and np.all(d_high[inside] > theta[inside])
