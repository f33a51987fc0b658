"""The truth of the demo's estimands: the panel's expected verdict, exact in closed form, checked by simulation."""

from __future__ import annotations

import numpy as np
import pytest

from reappraisal.data.demo_gold import RatingModel, panel_votes
from reappraisal.errors import ConfigError
from reappraisal.evaluation.truth import (
    PanelModel,
    best_of_truth,
    combined_truth,
    contest_means,
    contest_score,
    max_of_k_weights,
    pair_truth,
)
from reappraisal.evaluation.truth_draws import check_truth_allowed
from reappraisal.evaluation.truth_io import panel_model
from reappraisal.config import load_config
from reappraisal.settings import EvaluationSettings, Settings

DEMO_PANEL = panel_model(EvaluationSettings.from_config({"headline_judge": "demo-panel"}))


def test_contest_score_is_the_panels_simulated_verdict_rate():
    model = RatingModel.for_dimension("effectiveness", "1")
    for q_a, q_b in ((0.4, 0.0), (-0.3, 0.5), (1.2, 1.2)):
        votes = [panel_votes(q_a, q_b, n_raters=5, seed=s, model=model) for s in range(4000)]
        simulated = np.mean([1.0 if a > b else 0.5 if a == b else 0.0 for a, b in votes])
        assert contest_score(q_a, q_b, DEMO_PANEL) == pytest.approx(simulated, abs=0.02)
    # symmetric, and an even panel's equal votes count half
    assert contest_score(0.7, 0.1, DEMO_PANEL) + contest_score(0.1, 0.7, DEMO_PANEL) == pytest.approx(1.0)
    even = PanelModel(raters=4, slope=DEMO_PANEL.slope)
    assert contest_score(0.0, 0.0, even) == pytest.approx(0.5)


def test_raters_of_different_profiles_disagree_as_the_truth_says():
    """Two answers each rater profile ranks differently: the simulated panel (each rater's profile drawn by its
    share) prefers A at the rate the truth's mixture gives, not at the rate of the answers' mean gold."""
    from reappraisal.data.demo_gold import PROFILES, SHARES, rater_preference_probability

    assert DEMO_PANEL.shares == tuple(SHARES) and len(PROFILES) > 1
    model = RatingModel.for_dimension("effectiveness", "1")
    q_a = np.array([0.0, 2.5, 0.0])  # warm raters love A, the others prefer B a little
    q_b = np.array([0.6, 0.0, 0.6])
    votes = [panel_votes(q_a, q_b, n_raters=5, seed=s, model=model) for s in range(4000)]
    simulated = np.mean([1.0 if a > b else 0.5 if a == b else 0.0 for a, b in votes])
    assert contest_score(q_a, q_b, DEMO_PANEL) == pytest.approx(simulated, abs=0.02)
    by_mean_gold = contest_score(q_a @ SHARES, q_b @ SHARES, DEMO_PANEL)
    assert abs(contest_score(q_a, q_b, DEMO_PANEL) - by_mean_gold) > 0.05
    # one rater's preference is the profiles' mixture
    single = [panel_votes(q_a, q_b, n_raters=1, seed=s, model=model)[0] for s in range(4000)]
    assert rater_preference_probability(q_a, q_b, model) == pytest.approx(np.mean(single), abs=0.02)


def test_pair_truth_is_the_mean_of_scenario_truths_and_its_error_shrinks_with_draws():
    rng = np.random.default_rng(0)
    fixed = {"a": np.array([0.5, 1.0]), "b": np.array([0.0])}
    small = pair_truth({"a": rng.normal(0, 1, 64), "b": rng.normal(0, 1, 64)}, fixed, DEMO_PANEL, opponent_is_draw=False)
    large = pair_truth({"a": rng.normal(0, 1, 4096), "b": rng.normal(0, 1, 4096)}, fixed, DEMO_PANEL,
                       opponent_is_draw=False)
    assert large.value == pytest.approx(np.mean(list(large.per_scenario.values())))
    assert large.se < small.se / 4
    assert abs(small.value - large.value) < 4 * small.se
    # against itself, a system's truth is one half
    same = rng.normal(0, 1, 2048)
    assert pair_truth({"s": same}, {"s": same}, DEMO_PANEL, opponent_is_draw=True).value == pytest.approx(0.5, abs=1e-9)


def test_errors_of_differences_and_pools_against_one_drawn_opponent_match_their_spread():
    """Two systems read against the same draws of a generated opponent: the opponent's luck moves both win rates
    together, so it cancels in their difference and stays in their mean. The stated errors match the spread of
    the estimates over repeated draws; treating the two truths as independent would not."""
    rng = np.random.default_rng(7)
    diffs, pools, errors, naive = [], [], [], []
    for _ in range(300):
        scen = ("s1", "s2")
        a = {s: rng.normal(0.3, 0.4, 48) for s in scen}
        b = {s: rng.normal(0.0, 0.4, 48) for s in scen}
        opp = {s: rng.normal(0.0, 1.2, 48) for s in scen}  # a wide opponent: its draws matter
        ma, mb = contest_means(a, opp, DEMO_PANEL), contest_means(b, opp, DEMO_PANEL)
        diff = combined_truth([(1.0, ma), (-1.0, mb)], opponent_is_draw=True)
        pool = combined_truth([(0.5, ma), (0.5, mb)], opponent_is_draw=True)
        alone_a, alone_b = (pair_truth(x, opp, DEMO_PANEL, opponent_is_draw=True) for x in (a, b))
        diffs.append(diff.value)
        pools.append(pool.value)
        errors.append((diff.se, pool.se))
        naive.append(np.hypot(alone_a.se, alone_b.se))
        assert diff.value == pytest.approx(alone_a.value - alone_b.value)
        assert pool.value == pytest.approx((alone_a.value + alone_b.value) / 2)
    diff_se, pool_se = np.mean(errors, axis=0)
    assert np.std(diffs, ddof=1) == pytest.approx(diff_se, rel=0.15)
    assert np.std(pools, ddof=1) == pytest.approx(pool_se, rel=0.15)
    assert np.mean(naive) > 1.3 * np.std(diffs, ddof=1)  # adding the two errors overstates the difference's
    # a pooled system against one of its own members is one term, not two independent ones
    m = contest_means({"s": rng.normal(0, 1, 64)}, {"s": rng.normal(0, 1, 64)}, DEMO_PANEL)
    other = contest_means({"s": rng.normal(0, 1, 64)}, {"s": rng.normal(0, 1, 64)}, DEMO_PANEL)
    half = combined_truth([(0.5, m), (0.5, other), (-1.0, m)], opponent_is_draw=False)
    assert half.se == pytest.approx(combined_truth([(-0.5, m), (0.5, other)], opponent_is_draw=False).se)


def test_best_of_k_by_gold_is_the_maximum_of_k_draws():
    w = max_of_k_weights(10, 3)
    assert w.sum() == pytest.approx(1.0) and np.all(np.diff(w) > 0)
    rng = np.random.default_rng(1)
    draws = {"s": rng.normal(0, 1, 2000)}
    ref = {"s": np.array([0.8])}
    exact = best_of_truth(draws, ref, DEMO_PANEL, k=8, n_bootstrap=30)
    simulated = np.mean([contest_score(rng.choice(draws["s"], 8).max(), 0.8, DEMO_PANEL) for _ in range(4000)])
    assert exact.value == pytest.approx(simulated, abs=0.02)
    assert exact.value > pair_truth(draws, ref, DEMO_PANEL, opponent_is_draw=False).value + 0.2


def test_the_truth_stage_is_refused_on_data_that_are_not_the_demos():
    with pytest.raises(ConfigError) as err:
        check_truth_allowed(Settings.from_params({"preset": "paper", "data": dict(load_config()["data"], source="osf")}))
    assert "evaluation.truth" in str(err.value) and "\n" not in str(err.value)
    check_truth_allowed(Settings.from_params({"preset": "demo", "data": load_config()["data"]}))


def test_the_truth_needs_a_panel_headline_judge(tmp_path):
    with pytest.raises(ConfigError, match="panel"):
        panel_model(EvaluationSettings.from_config({"headline_judge": "llama-3.1-70b-instruct"}))


def test_each_system_draws_its_truth_on_the_pools_it_is_evaluated_on():
    """Arms: the training scenarios, the OOD selection pool and the confirmation pool beside it; the base policy
    (an opponent on the training scenarios) there alone; every pool a truth row reads is drawn."""
    from reappraisal.config import load_config
    from reappraisal.evaluation.systems import evaluated_instances, opponents
    from reappraisal.evaluation.truth_draws import truth_pools

    cfg = Settings.from_params(load_config())
    for arm in evaluated_instances(cfg):
        assert truth_pools(cfg, arm) == ("train", "ood", "confirm")
    model_opponents = [o for o in opponents(cfg).values() if o.kind == "model"]
    assert model_opponents and all(truth_pools(cfg, o.name) == tuple(o.pools) == ("train",) for o in model_opponents)
