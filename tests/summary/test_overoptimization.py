"""The overoptimization table: gold peaking then falling while the raw proxy rises is found, and only then."""

from __future__ import annotations

import numpy as np
import pytest
import pandas as pd

from reappraisal.summary.overoptimization import gold_trajectory, overoptimization_row, overoptimization_table


def _log(gold, proxy, kl=None):
    """A one-scorer arm's log: ``proxy`` is the ensemble's raw score."""
    n = len(gold)
    frame = {"step": np.arange(1, n + 1), "gold": gold, "rm_score": proxy}
    if kl is not None:
        frame["kl"] = kl
    return pd.DataFrame(frame)


def test_gold_peaking_while_the_proxy_keeps_rising_is_overoptimization():
    rng = np.random.default_rng(0)
    t = np.linspace(0, 1, 80)
    gold = 1.0 - 4 * (t - 0.4) ** 2 + rng.normal(0, 0.05, 80)  # peaks at 40% of the run, then falls
    proxy = t + rng.normal(0, 0.05, 80)
    row = overoptimization_row(_log(gold, proxy, kl=t**2), window=10)
    assert row["overoptimized"] and 25 <= row["gold_peak_step"] <= 45
    assert row["gold_drop"] > 2 * row["gold_drop_se"] > 0
    assert row["sqrt_kl_last"] > row["sqrt_kl_at_peak"]


def test_gold_rising_with_the_proxy_is_not_and_no_kl_leaves_kl_empty():
    rng = np.random.default_rng(1)
    t = np.linspace(0, 1, 80)
    row = overoptimization_row(_log(t + rng.normal(0, 0.05, 80), t + rng.normal(0, 0.05, 80)), window=10)
    assert not row["overoptimized"] and row["sqrt_kl_last"] is None
    # gold falling while the proxy falls too is not overoptimization either
    row = overoptimization_row(_log(1 - t, 1 - t), window=10)
    assert not row["overoptimized"]


def test_an_arm_without_gold_gets_a_note_not_a_number():
    table = overoptimization_table(["a", "b"], {"a": _log([0.1] * 30, [0.2] * 30), "b": pd.DataFrame({"step": [1]})},
                                   {}, window=10)
    frame = table.frame.set_index("arm")
    assert frame.loc["a", "overoptimized"] is False or not frame.loc["a", "overoptimized"]
    assert "gold" in frame.loc["b", "note"]


def test_a_proxy_that_moved_only_by_float32_rounding_has_not_risen():
    """Rewards are float32: a last window whose proxy equals the peak's up to rounding is not a rise (a demo arm's
    two windows of rewards, all multiples of 0.375 up to rounding, once differed by 1e-8 and read as risen)."""
    rng = np.random.default_rng(3)
    gold = np.r_[np.linspace(0, 1, 40), np.linspace(1, 0, 40)] + rng.normal(0, 0.02, 80)  # peaks near step 40
    proxy = rng.choice([-1.125, -0.75, -0.375, 0.0], size=80)
    row = overoptimization_row(_log(gold, proxy), window=20)
    proxy[-20:] = proxy[row["gold_peak_step"] - 20:row["gold_peak_step"]] + np.float32(3e-8)  # the peak window, rounded
    row = overoptimization_row(_log(gold, proxy), window=20)
    assert row["gold_drop"] > 2 * row["gold_drop_se"]
    assert 0 < row["proxy_last"] - row["proxy_at_peak"] < 1e-6 and not row["overoptimized"]
    proxy[-1] += 0.375  # one step's reward up by one notch: a rise
    assert overoptimization_row(_log(gold, proxy), window=20)["overoptimized"]


def _committee_log(seed=5, n=80):
    """A committee's log as the demo writes it: the raw ensemble score and GRM win rate climb, gold peaks at a
    third of the run and falls, and the group-normalised reward (z within each group, minus the guard) stays
    flat, slipping a little as the judges disagree more."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, n)
    return pd.DataFrame({
        "step": np.arange(1, n + 1), "kl": 0.05 * t,
        "reward": -0.3 - 0.05 * t + rng.normal(0, 0.02, n),
        "rm_score": 0.0 + 0.2 * t + rng.normal(0, 0.03, n),
        "grm_score": 0.45 + 0.08 * t + rng.normal(0, 0.03, n),
        "gold": -0.4 + 0.1 * np.minimum(t, 1 / 3) * 3 - 0.4 * np.clip(t - 1 / 3, 0, None) + rng.normal(0, 0.05, n)})


def test_a_proxy_the_policy_climbs_is_read_raw_not_from_the_group_normalised_reward():
    log = _committee_log()
    assert abs(log["reward"].iloc[:20].mean() - log["reward"].iloc[-20:].mean()) < 0.06  # the normalised reward is flat
    weights = {"w_rm": 0.5, "w_grm": 0.5, "lam": 0.5}
    row = overoptimization_row(log, window=20, weights=weights)
    assert row["overoptimized"]
    assert row["gold_drop"] > 2 * row["gold_drop_se"]
    assert row["ensemble_last"] > row["ensemble_at_peak"] and row["grm_last"] > row["grm_at_peak"]
    assert row["proxy_first"] == pytest.approx(0.0, abs=1e-12) and row["proxy_last"] > row["proxy_at_peak"] > 0
    # a fixed scale: the verdict and the proxy do not depend on a scorer's units
    rescaled = overoptimization_row(log.assign(rm_score=100 * log["rm_score"] - 7), window=20, weights=weights)
    assert rescaled["proxy_last"] == pytest.approx(row["proxy_last"]) and rescaled["overoptimized"]
    # the table takes each arm's weights: a GRM-only arm reads only the GRM, whatever else the log carries
    table = overoptimization_table(["committee", "grm_only"], {"committee": log, "grm_only": log}, {}, window=20,
                                   weights={"committee": weights, "grm_only": {"w_rm": 0.0, "w_grm": 1.0}})
    frame = table.frame.set_index("arm")
    assert frame["overoptimized"].tolist() == [True, True]
    assert pd.isna(frame.loc["grm_only", "ensemble_last"]) and frame.loc["grm_only", "grm_last"] > 0.5


def test_a_committee_proxy_weighs_each_scorer_as_the_arm_did():
    """The ensemble rising while the GRM falls as far (in first-window spreads): the 0.5/0.5 committee's proxy
    did not rise, and the arm weighting the ensemble 0.9 did climb it."""
    log = _committee_log()
    log["grm_score"] = 0.45 - (log["rm_score"] - log["rm_score"].iloc[:20].mean()) * (
        log["grm_score"].iloc[:20].std() / log["rm_score"].iloc[:20].std())
    even = overoptimization_row(log, window=20, weights={"w_rm": 0.5, "w_grm": 0.5})
    heavy = overoptimization_row(log, window=20, weights={"w_rm": 0.9, "w_grm": 0.1})
    assert abs(even["proxy_last"]) < 1e-9 and not even["overoptimized"]
    assert heavy["overoptimized"] and heavy["proxy_last"] > 1


def test_a_log_without_the_raw_scorers_gets_a_note_not_a_verdict_from_the_reward():
    log = _committee_log().drop(columns=["rm_score", "grm_score"]).assign(reward=np.linspace(-1, 1, 80))
    table = overoptimization_table(["a"], {"a": log}, {}, window=20)
    row = table.frame.iloc[0]
    assert row["overoptimized"] is not True and "raw scorer" in row["note"]
    weights = {"w_rm": 1.0, "w_grm": 0.0}
    with pytest.raises(ValueError, match="rm_score"):
        overoptimization_row(log.assign(grm_score=0.5), window=20, weights=weights)


def test_gold_falling_within_its_noise_has_not_fallen():
    rng = np.random.default_rng(9)
    gold = np.r_[np.zeros(40), np.full(40, -0.02)] + rng.normal(0, 0.3, 80)
    g = gold_trajectory(pd.DataFrame({"step": np.arange(1, 81), "gold": gold}), window=20)
    assert not g.fell and g.drop < 2 * g.drop_se
    g = gold_trajectory(pd.DataFrame({"step": np.arange(1, 81), "gold": np.r_[np.zeros(40), np.full(40, -0.5)]
                                      + rng.normal(0, 0.3, 80)}), window=20)
    assert g.fell and g.last < g.peak
