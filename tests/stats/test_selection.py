import math

import numpy as np
import pytest

from reappraisal.stats.selection import (
    expected_inflation,
    expected_max_standard_normal,
    scenario_matrix_summary,
    select_best,
    selection_report,
    simulate_selection,
)

# The setting of the brief: 5 checkpoints, 8 scenarios, 12 contests each, a
# shared scenario effect (sd 0.1) and system-by-scenario deviations (sd 0.08).
SIM = dict(
    k=5,
    n_scenarios=8,
    true_rate=0.5,
    scenario_sd=0.1,
    system_sd=0.08,
    contests_per_scenario=12,
    n_sims=2000,
    seed=20240607,
)


@pytest.fixture(scope="module")
def five_arms():
    return simulate_selection(**SIM)


# --- expected maximum of standard normals ------------------------------------


@pytest.mark.parametrize(
    "k, value",
    [(1, 0.0), (2, 1.0 / math.sqrt(math.pi)), (5, 1.16296), (10, 1.53875)],
)
def test_expected_max_matches_tabulated_values(k, value):
    assert expected_max_standard_normal(k) == pytest.approx(value, abs=1e-4)


def test_expected_max_is_exact_for_one_and_two_arms():
    assert expected_max_standard_normal(1) == 0.0
    assert expected_max_standard_normal(2) == pytest.approx(0.5641895835, abs=1e-10)


def test_expected_max_agrees_with_monte_carlo_at_k7():
    draws = np.random.default_rng(7).standard_normal((200_000, 7)).max(axis=1)
    mc_se = draws.std(ddof=1) / math.sqrt(draws.size)
    assert abs(expected_max_standard_normal(7) - draws.mean()) < 3 * mc_se


def test_expected_max_grows_with_k_and_refuses_no_arms():
    values = [expected_max_standard_normal(k) for k in (1, 2, 3, 5, 10, 100)]
    assert values == sorted(values)
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError):
            expected_max_standard_normal(bad)


# --- expected inflation ------------------------------------------------------


def test_inflation_reproduces_the_statistics_md_example():
    # "≈ +0.035 at SE 0.03, K 5"
    assert expected_inflation(0.03, 0.0, 5) == pytest.approx(0.0349, abs=5e-5)


def test_inflation_shrinks_with_correlation_and_vanishes_at_one():
    values = [expected_inflation(0.03, rho, 5) for rho in (0.0, 0.25, 0.5, 0.75, 1.0)]
    assert all(a > b for a, b in zip(values, values[1:]))
    assert values[-1] == 0.0
    assert values[2] == pytest.approx(0.03 * math.sqrt(0.5) * 1.16296, abs=1e-5)


def test_inflation_clips_rho_and_refuses_bad_input():
    assert expected_inflation(0.03, -0.4, 5) == expected_inflation(0.03, 0.0, 5)
    assert expected_inflation(0.03, 1.3, 5) == 0.0
    assert expected_inflation(0.03, 0.2, 1) == 0.0  # no selection, no inflation
    for se, rho, k in [(-0.01, 0.0, 5), (float("nan"), 0.0, 5), (0.03, float("nan"), 5), (0.03, 0.0, 0)]:
        with pytest.raises(ValueError):
            expected_inflation(se, rho, k)


# --- scenario matrix summary -------------------------------------------------


def test_summary_estimates_and_standard_errors_by_hand():
    rates = np.array([[1.0, 0.5, 0.0, 0.5], [0.75, 0.25, 0.25, 0.75]])
    out = scenario_matrix_summary(rates)
    assert out["estimates"] == pytest.approx([0.5, 0.5])
    ses = [np.std(row, ddof=1) / 2.0 for row in rates]
    assert out["standard_errors"] == pytest.approx(ses)
    assert out["se"] == pytest.approx(np.mean(ses))
    assert out["rho"] == pytest.approx(np.corrcoef(rates)[0, 1])
    assert (out["n_scenarios"], out["k"], out["n_scenarios_dropped"]) == (4, 2, 0)


def test_summary_rho_is_one_for_identical_systems():
    row = np.random.default_rng(1).uniform(size=30)
    out = scenario_matrix_summary(np.vstack([row, row, row]))
    assert out["rho"] == pytest.approx(1.0)
    assert expected_inflation(out["se"], out["rho"], out["k"]) == pytest.approx(0.0, abs=1e-7)


def test_summary_rho_is_near_zero_for_independent_systems():
    rates = np.random.default_rng(2).uniform(size=(4, 5000))
    # mean of 6 correlations, each with sd ≈ 1/sqrt(5000) ≈ 0.014
    assert abs(scenario_matrix_summary(rates)["rho"]) < 0.03


def test_summary_rho_is_the_mean_pairwise_correlation():
    rates = np.random.default_rng(3).uniform(size=(4, 12))
    corr = np.corrcoef(rates)
    assert scenario_matrix_summary(rates)["rho"] == pytest.approx(corr[np.triu_indices(4, 1)].mean())


def test_summary_constant_system_counts_as_uncorrelated():
    rates = np.array([[0.5, 0.5, 0.5, 0.5], [0.1, 0.4, 0.6, 0.9], [0.2, 0.3, 0.7, 0.9]])
    # pairs (0,1) and (0,2) contribute 0, pair (1,2) its correlation
    expected = np.corrcoef(rates[1:])[0, 1] / 3.0
    out = scenario_matrix_summary(rates)
    assert out["rho"] == pytest.approx(expected)
    assert out["standard_errors"][0] == 0.0


def test_summary_single_system_has_rho_zero():
    out = scenario_matrix_summary([[0.2, 0.4, 0.9]])
    assert out["rho"] == 0.0 and out["k"] == 1


def test_summary_uses_only_scenarios_every_system_has():
    nan = np.nan
    rates = np.array([[0.2, 0.4, nan, 0.8, 1.0], [0.1, nan, 0.3, 0.5, 0.6]])
    out = scenario_matrix_summary(rates)
    common = rates[:, [0, 3, 4]]
    assert out["n_scenarios"] == 3 and out["n_scenarios_dropped"] == 2
    assert out["estimates"] == pytest.approx(common.mean(axis=1))
    assert out["rho"] == pytest.approx(np.corrcoef(common)[0, 1])


@pytest.mark.parametrize(
    "rates",
    [
        [[0.2, np.nan, 0.4], [np.nan, 0.3, 0.5]],  # one common scenario
        [[0.2], [0.3]],  # one scenario
        [[0.2, 0.4], [np.nan, np.nan]],  # a system with no contest at all
        [[0.2, 1.2, 0.4]],  # outside [0, 1]
        [[0.2, np.inf, 0.4]],
        [0.2, 0.3, 0.4],  # not systems × scenarios
    ],
)
def test_summary_refuses_bad_matrices(rates):
    with pytest.raises(ValueError):
        scenario_matrix_summary(rates)


# --- selecting the best ------------------------------------------------------


def test_select_best_picks_the_highest_and_breaks_ties_by_name_order():
    assert select_best([0.4, 0.7, 0.6], ["a", "b", "c"]) == ("b", 1)
    assert select_best([0.4, 0.7, 0.7], ["a", "b", "c"]) == ("b", 1)
    assert select_best([0.7, 0.7], ["z", "a"]) == ("z", 0)  # order given, not alphabetical


def test_select_best_never_picks_nan():
    assert select_best([np.nan, 0.1, np.nan], ["a", "b", "c"]) == ("b", 1)
    with pytest.raises(ValueError):
        select_best([np.nan, np.nan], ["a", "b"])


@pytest.mark.parametrize(
    "estimates, names",
    [([0.1, 0.2], ["a"]), ([], []), ([0.1, 0.2], ["a", "a"]), ([0.1, np.inf], ["a", "b"])],
)
def test_select_best_refuses_bad_input(estimates, names):
    with pytest.raises(ValueError):
        select_best(estimates, names)


def test_selection_report_combines_pick_and_correction():
    rates = np.array([[0.5, 0.6, 0.7, 0.6], [0.8, 0.7, 0.9, 0.8], [0.4, 0.6, 0.5, 0.5]])
    report = selection_report(rates, ["a", "b", "c"])
    summary = scenario_matrix_summary(rates)
    assert report["selected"] == "b" and report["selected_index"] == 1
    assert report["estimate"] == pytest.approx(0.8)
    inflation = expected_inflation(summary["se"], summary["rho"], 3)  # mean SE, not the winner's
    assert report["expected_inflation"] == pytest.approx(inflation)
    assert report["shrunk_estimate"] == pytest.approx(0.8 - inflation)
    assert (report["k"], report["n_scenarios"]) == (3, 4)
    with pytest.raises(ValueError):
        selection_report(rates, ["a", "b"])


# --- the winner's curse, simulated -------------------------------------------


def test_simulated_winner_is_inflated_on_its_selection_pool(five_arms):
    r = five_arms
    assert r["true_mean"] == pytest.approx(0.5, abs=1e-9)
    assert r["observed_inflation"] > 5 * r["observed_inflation_se"]
    assert r["observed_inflation"] > 0.04  # a real effect, the size of a headline gap


def test_formula_predicts_the_simulated_inflation(five_arms):
    """se·√(1−ρ)·E[max] with se and ρ estimated from the 8-scenario selection pool.

    At these parameters clipping hardly binds (rates 0.5 ± ~0.13) and
    each scenario rate averages 12 contests, so the normal approximation is
    adequate. The plug-in is slightly low (≈ 3.5% in a 200 000-dataset run:
    the sample sd underestimates σ at G = 8, and √(1−ρ̂) is concave), well
    inside the 25% tolerance.
    """
    r = five_arms
    assert abs(r["formula_inflation"] / r["observed_inflation"] - 1.0) < 0.25
    assert r["inflation_ratio"] == pytest.approx(r["formula_inflation"] / r["observed_inflation"])


def test_fresh_pool_estimate_of_the_winner_is_unbiased(five_arms):
    r = five_arms
    assert abs(r["confirmation_bias"]) < 3 * r["confirmation_bias_se"] + 0.005
    # the fresh pool removes the inflation the selection pool carries
    assert r["selection_mean"] - r["confirmation_mean"] > 0.04


def test_single_arm_has_no_inflation():
    r = simulate_selection(**{**SIM, "k": 1})
    assert r["formula_inflation"] == 0.0
    assert abs(r["observed_inflation"]) < 3 * r["observed_inflation_se"] + 0.002
    assert abs(r["confirmation_bias"]) < 3 * r["confirmation_bias_se"] + 0.002


def test_simulation_is_reproducible_from_its_seed():
    small = {**SIM, "n_sims": 50}
    assert simulate_selection(**small) == simulate_selection(**small)


def test_true_mean_accounts_for_asymmetric_clipping():
    # near the ceiling the clip at 0.99 pulls the population mean below true_rate
    r = simulate_selection(**{**SIM, "true_rate": 0.95, "scenario_sd": 0.1, "system_sd": 0.1, "n_sims": 20})
    rng = np.random.default_rng(5)
    s = rng.normal(0.0, 0.1, 1_000_000)
    d = rng.normal(0.0, 0.1, 1_000_000)
    brute = np.clip(np.clip(0.95 + s, 0.01, 0.99) + d, 0.01, 0.99)
    assert r["true_mean"] < 0.94
    assert r["true_mean"] == pytest.approx(brute.mean(), abs=4 * brute.std() / 1000)


@pytest.mark.parametrize(
    "change",
    [{"k": 0}, {"n_scenarios": 1}, {"true_rate": 1.5}, {"scenario_sd": -0.1}, {"n_sims": 1}, {"contests_per_scenario": 0}],
)
def test_simulation_refuses_bad_settings(change):
    with pytest.raises(ValueError):
        simulate_selection(**{**SIM, **change})
