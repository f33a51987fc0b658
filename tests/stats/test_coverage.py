"""Coverage of the win-rate intervals on simulated clustered data.

Per setting, 4,000 datasets (fixed seed) of G scenarios x 3 runs x 40
contests (scores 1 / 0.5 / 0, ties included), runs pooled inside scenarios.
True scenario rates come from two families with the same mean and sd on the
probability scale: Beta, and logit-normal (near a high mean, a few scenarios
far below the rest); mean ``mean`` (0.5, 0.75, 0.87: the card's level, 0.95),
between-scenario sd ``spread`` (0.05, 0.10, 0.15), G = 6 and 12. The truth is
the mean rate of the scenario population, the quantity a claim about new
scenarios is about (the headline estimand). The sensitivity intervals are
checked on the Beta family at G = 6 (the percentile bootstrap by exact
enumeration of the 462 resamples, the wild bootstrap with 1,999 shared Webb
weight draws).

A miss is split by its side: "above" = the whole interval lies above the
truth (the direction that inflates "clears the bar"), "below" = wholly below.
Monte Carlo SE of a coverage near 0.95 is about 0.0035, of a tail near 0.03
about 0.0027. The headline was chosen by the regime table of ``benchmarks/headline_regimes.py``; the earlier candidates are in
``benchmarks/headline_coverage.py`` (``benchmarks/README_stats.md``).

``python -m tests.stats.test_coverage`` prints the measured table.
"""

from __future__ import annotations

import time

import numpy as np
from scipy import stats
import pytest
from statsmodels.stats.proportion import proportion_confint

from reappraisal.stats import (
    cluster_korn_graubard_interval,
    cluster_logit_jackknife_interval,
    cluster_stretched_logit_jackknife_interval,
    cluster_t_interval,
    percentile_cluster_bootstrap_interval,
    wild_cluster_bootstrap_interval,
    wilson_interval,
)

from .helpers import FAMILIES, simulate_clustered

N_DATASETS = 4000
SEED = 2024
MEANS = (0.5, 0.75, 0.87)
SPREADS = (0.05, 0.10, 0.15)
METHODS = ("headline", "logit_jackknife", "cluster_t", "iid_wilson", "percentile", "wild")
#: The headline's settings: both families, four win rates, three spreads, two numbers of scenarios.
HEADLINE_SETTINGS = [(family, g, mean, spread) for family in FAMILIES for g in (6, 12) for mean in (*MEANS, 0.95)
                     for spread in SPREADS]
#: Nearly two-valued scenario rates (mean 0.95, sd 0.15: Beta(1.06, 0.06)): a sample of G scenarios most often
#: holds none of the few bad ones; the jackknives miss them, the headline's cap near a bound covers them.
OUT_OF_REACH = {("beta", 6, 0.95, 0.15), ("beta", 12, 0.95, 0.15), ("logit_normal", 6, 0.95, 0.15)}


def intervals(sums, sizes, seed=SEED, methods=METHODS):
    """Each of ``methods``' (low, high) for a batch of datasets, on the mean of scenario means."""
    means = sums / sizes
    n = sizes.sum(axis=1)
    theta = means.mean(axis=1)
    ones = np.ones_like(means)
    build = {
        "headline": lambda: cluster_korn_graubard_interval(means, n),
        "logit_jackknife": lambda: cluster_logit_jackknife_interval(means, n),
        "cluster_t": lambda: cluster_t_interval(means),
        "iid_wilson": lambda: wilson_interval(theta * n, n),
        "percentile": lambda: percentile_cluster_bootstrap_interval(means, ones),
        "wild": lambda: wild_cluster_bootstrap_interval(means, ones, n_draws=1999, seed=seed),
    }
    return {name: build[name]() for name in methods}


def coverage(mean, spread, *, family="beta", g=6, methods=METHODS, seed=SEED, n_datasets=N_DATASETS):
    """{method: {"coverage", "below", "above", "width"}} at one setting."""
    key = [seed, int(round(mean * 1000)), int(round(spread * 1000))]
    if (family, g) != ("beta", 6):  # the original Beta, G = 6 stream is kept as it was
        key += [FAMILIES.index(family), g]
    rng = np.random.default_rng(key)
    sums, sizes = simulate_clustered(rng, n_datasets, n_scenarios=g, mean=mean, spread=spread, family=family)
    out = {}
    for name, (low, high) in intervals(sums, sizes, seed, methods).items():
        out[name] = {
            "coverage": float(np.mean((low <= mean) & (mean <= high))),
            "below": float(np.mean(high < mean)),
            "above": float(np.mean(low > mean)),
            "width": float(np.mean(high - low)),
        }
    return out


@pytest.fixture(scope="module")
def table():
    settings = [(m, s) for m in MEANS for s in SPREADS] + [(0.75, 0.0)]
    return {setting: coverage(*setting) for setting in settings}


@pytest.fixture(scope="module")
def headline_table():
    return {setting: coverage(setting[2], setting[3], family=setting[0], g=setting[1],
                              methods=("headline", "logit_jackknife"))
            for setting in HEADLINE_SETTINGS}


@pytest.mark.parametrize("setting", HEADLINE_SETTINGS, ids=str)
def test_headline_interval_keeps_coverage_and_both_tails_under_both_families(headline_table, setting):
    result = headline_table[setting]["headline"]
    assert result["coverage"] >= 0.93, result
    assert result["above"] <= 0.04, result  # wholly above the truth: inflates "clears the bar"
    assert result["below"] <= 0.04, result


@pytest.mark.parametrize("setting", sorted(OUT_OF_REACH), ids=str)
def test_nearly_two_valued_rates_the_jackknives_missed_are_covered(headline_table, setting):
    # the jackknives under-cover here; the headline's cap near a bound reaches them
    result, before = headline_table[setting]["headline"], headline_table[setting]["logit_jackknife"]
    assert before["coverage"] < 0.93
    assert result["coverage"] >= 0.93 and result["above"] <= 0.04 and result["below"] <= 0.04


def test_the_logit_jackknife_overclaims_when_a_few_scenarios_are_far_below_the_rest(headline_table):
    # why the plain logit jackknife is no longer the headline: logit-normal rates near the card's level
    before = headline_table[("logit_normal", 6, 0.87, 0.15)]["logit_jackknife"]
    assert before["coverage"] < 0.93 and before["above"] > 0.05
    assert headline_table[("logit_normal", 6, 0.87, 0.15)]["headline"]["above"] <= 0.04


def test_cluster_t_is_not_good_enough_at_the_cards_level(table):
    # why the cluster t is not the headline: at 0.87 its misses pile up above the truth
    result = table[(0.87, 0.10)]["cluster_t"]
    assert result["coverage"] < 0.93 and result["above"] > 0.06
    assert table[(0.87, 0.10)]["headline"]["above"] < result["above"] / 2


@pytest.mark.parametrize("spread", [0.0, 0.05, 0.1])
def test_cluster_t_is_near_nominal_at_a_mid_rate(table, spread):
    assert 0.92 <= table[(0.75, spread)]["cluster_t"]["coverage"] <= 0.98


@pytest.mark.parametrize("spread", SPREADS)
def test_percentile_bootstrap_under_covers_when_scenarios_differ(table, spread):
    covered = table[(0.75, spread)]
    assert 0.75 < covered["percentile"]["coverage"] < 0.90
    assert covered["percentile"]["coverage"] < covered["logit_jackknife"]["coverage"] - 0.04


@pytest.mark.parametrize("spread", SPREADS)
def test_iid_wilson_far_below_nominal_when_scenarios_differ(table, spread):
    assert table[(0.75, spread)]["iid_wilson"]["coverage"] < 0.85
    assert table[(0.75, 0.1)]["iid_wilson"]["coverage"] < 0.65  # more spread, worse


def test_iid_wilson_near_nominal_when_scenarios_do_not_differ(table):
    assert table[(0.75, 0.0)]["iid_wilson"]["coverage"] >= 0.93


@pytest.mark.parametrize("spread", [0.0, 0.1])
def test_wild_cluster_bootstrap_is_near_nominal_at_a_mid_rate(table, spread):
    assert 0.90 <= table[(0.75, spread)]["wild"]["coverage"] <= 0.985


def test_simulated_truth_is_the_mean_of_the_estimates():
    rng = np.random.default_rng(1)
    sums, sizes = simulate_clustered(rng, N_DATASETS, mean=0.87, spread=0.15)
    assert (sums / sizes).mean() == pytest.approx(0.87, abs=0.003)


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
    for name, (low, high) in intervals(sums, sizes).items():
        if name == "iid_wilson":
            continue
        if name == "logit_jackknife":
            # never claims certainty: with no spread it is the Wilson interval of the same n
            assert np.allclose(low, ref_low) and np.allclose(high, ref_high) and np.all(high - low > 0), name
            continue
        if name == "headline":
            # never claims certainty: Clopper-Pearson at 4 contests a scenario (the cap at a bound), df-adjusted
            g = sums.shape[1]
            n_star = 4 * g * (stats.norm.ppf(0.975) / stats.t.ppf(0.975, g - 1)) ** 2
            cp_low, cp_high = proportion_confint(mean * n_star, n_star, method="beta")
            assert np.allclose(low, cp_low) and np.allclose(high, cp_high) and np.all(high - low > 0), name
            continue
        # no spread at all: the sensitivity intervals collapse onto the truth, never NaN
        assert np.all(low == mean) and np.all(high == mean), name
    assert coverage(mean, 0.0, n_datasets=200)["headline"]["coverage"] == 1.0


def test_headline_interval_stays_inside_the_unit_interval_near_the_bounds():
    # one scenario lost every contest, the others won every one: finite, inside (0, 1)
    means = np.array([[0.0, 1.0, 1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0, 1.0, 0.975]])
    for method in (cluster_stretched_logit_jackknife_interval, cluster_logit_jackknife_interval):
        low, high = method(means, 720)
        assert np.all(np.isfinite(low)) and np.all((0 < low) & (low < means.mean(1)) & (high <= 1))


def markdown_table(result) -> str:
    lines = [
        "| win rate | sd | " + " | ".join(METHODS) + " |",
        "|---|---|" + "---|" * len(METHODS),
    ]
    for (mean, spread), methods in sorted(result.items()):
        cells = [f"{r['coverage']:.3f} ({r['below']:.3f}/{r['above']:.3f})" for r in (methods[m] for m in METHODS)]
        lines.append(f"| {mean} | {spread} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    start = time.perf_counter()
    settings = [(m, s) for m in MEANS for s in (0.0, *SPREADS)]
    result = {setting: coverage(*setting) for setting in settings}
    print(f"coverage (share wholly below / wholly above the truth); {N_DATASETS} datasets per setting, seed {SEED}")
    print("Beta scenario rates, G = 6:")
    print(markdown_table(result))
    print("\nthe headline (Korn-Graubard, capped near a bound) and the logit jackknife, both families:")
    print("| family | G | win rate | sd | headline | logit jackknife |\n|---|---|---|---|---|---|")
    for family, g, mean, spread in HEADLINE_SETTINGS:
        row = coverage(mean, spread, family=family, g=g, methods=("headline", "logit_jackknife"))
        cells = [f"{r['coverage']:.3f} ({r['below']:.3f}/{r['above']:.3f})" for r in row.values()]
        print(f"| {family} | {g} | {mean} | {spread} | " + " | ".join(cells) + " |")
    print(f"{time.perf_counter() - start:.1f} s")
