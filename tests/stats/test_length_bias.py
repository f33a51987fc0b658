"""Length bias: the longer-answer share, the bins, and the length-controlled win rate (against statsmodels)."""

from __future__ import annotations

import numpy as np
import pytest

from reappraisal.stats import length_controlled_win_rate, longer_wins_share, win_rate_by_length_bin


def _simulate(length_effect: float, seed: int = 0, g: int = 6, n: int = 300):
    rng = np.random.default_rng(seed)
    scenario = np.repeat(np.arange(g), n)
    intercept = rng.normal(0.3, 0.4, g)
    diff = rng.normal(5, 15, g * n)
    x = np.tanh(diff / diff.std())
    p = 1 / (1 + np.exp(-(intercept[scenario] + length_effect * x)))
    y = (rng.random(g * n) < p).astype(float)
    return y, diff, scenario, intercept


def test_length_controlled_rate_equals_an_independent_logistic_fit():
    sm = pytest.importorskip("statsmodels.api")
    y, diff, scenario, _ = _simulate(1.0)
    ours = length_controlled_win_rate(y, diff, scenario, ridge=1e-9)
    x = np.tanh(diff / diff.std())
    design = np.column_stack([np.eye(6)[scenario], x])
    ref = sm.GLM(y, design, family=sm.families.Binomial()).fit()
    assert ours["converged"]
    assert ours["length_coef"] == pytest.approx(ref.params[-1], abs=1e-7)
    assert ours["lc_win_rate"] == pytest.approx(float((1 / (1 + np.exp(-ref.params[:6]))).mean()), abs=1e-7)


def test_length_control_removes_a_planted_length_preference_and_leaves_none_alone():
    y, diff, scenario, intercept = _simulate(1.5, seed=1, n=2000)
    fit = length_controlled_win_rate(y, diff, scenario)
    truth = float((1 / (1 + np.exp(-intercept))).mean())
    # answers are longer on average here, so the raw rate is inflated and the LC rate recovers the planted one
    assert fit["raw_win_rate"] > truth + 0.03
    assert abs(fit["lc_win_rate"] - truth) < 0.02 and fit["length_coef"] > 1.2
    y0, diff0, scenario0, _ = _simulate(0.0, seed=2, n=2000)
    none = length_controlled_win_rate(y0, diff0, scenario0)
    assert abs(none["length_coef"]) < 0.15 and abs(none["lc_win_rate"] - none["raw_win_rate"]) < 0.02


def test_ties_count_half_and_a_scenario_always_won_stays_finite():
    score = np.array([1.0, 1.0, 1.0, 0.5, 0.0, 1.0, 0.5, 0.5])
    diff = np.array([3, -2, 5, 0, 4, -1, 2, -6], dtype=float)
    scenario = ["a", "a", "a", "a", "b", "b", "b", "b"]
    fit = length_controlled_win_rate(score, diff, scenario)
    assert fit["converged"] and 0.5 < fit["lc_win_rate"] < 1.0
    assert fit["raw_win_rate"] == pytest.approx((0.875 + 0.5) / 2)
    # no length variation: no length effect, the rate is the scenario rates' logistic fit
    flat = length_controlled_win_rate(score, np.zeros(8), scenario)
    assert flat["length_coef"] == 0.0 and flat["lc_win_rate"] == pytest.approx(flat["raw_win_rate"], abs=0.01)


def test_longer_wins_share_counts_decided_unequal_contests_only():
    score = [1.0, 0.0, 1.0, 0.5, 1.0, 0.0]
    diff = [10, 5, -3, 8, 0, -4]  # won longer, lost longer, won shorter, split, equal length, lost shorter
    share, n = longer_wins_share(score, diff)
    assert n == 4 and share == pytest.approx(2 / 4)
    assert longer_wins_share([0.5], [3])[1] == 0


def test_bins_partition_the_contests():
    y, diff, _, _ = _simulate(1.0)
    bins = win_rate_by_length_bin(y, diff)
    assert bins["contests"].sum() == len(y)
    assert bins["win_rate"].iloc[-1] > bins["win_rate"].iloc[0]  # the planted preference shows
