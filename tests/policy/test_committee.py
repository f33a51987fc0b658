"""The committee reward on hand-computed groups."""

import numpy as np
import pytest

from reappraisal.policy.committee import (
    CommitteeWeights,
    FormatGate,
    committee_group,
    committee_rewards,
    group_slices,
    group_z,
)

EQUAL = CommitteeWeights(0.5, 0.5, 0.5)
RM_HEAVY = CommitteeWeights(0.7, 0.3, 0.5)
RM_ONLY = CommitteeWeights(1.0, 0.0, 0.5)
Z = np.sqrt(1.5)  # z of 1 and 3 in [1, 2, 3] (population std sqrt(2/3))


def test_zero_variance_group_gets_zero_rewards():
    g = committee_group([5.0] * 4, [0.5] * 4, [True] * 4, EQUAL, penalty=-3.0)
    assert np.array_equal(g.rewards, np.zeros(4))
    assert np.array_equal(g.z_rm, np.zeros(4)) and np.array_equal(g.z_grm, np.zeros(4))
    # std just under the 1e-6 threshold still counts as zero variance
    assert np.array_equal(group_z([1.0, 1.0 + 1e-7]), np.zeros(2))


def test_one_constant_judge():
    # rm constant -> z_rm = 0; grm [0, 1] -> z_grm = [-1, 1]; guard = 0.5 * |0 - z| / 2 = 0.25
    g = committee_group([2.0, 2.0], [0.0, 1.0], [True, True], EQUAL, penalty=-3.0)
    assert g.rewards == pytest.approx([-0.5 - 0.25, 0.5 - 0.25])


def test_disagreement_guard_bites():
    # The judges rank the group in opposite orders: each end is one judge's favourite.
    g = committee_group([1.0, 2.0, 3.0], [3.0, 2.0, 1.0], [True] * 3, EQUAL, penalty=-3.0)
    assert g.z_rm == pytest.approx([-Z, 0.0, Z])
    assert g.z_grm == pytest.approx([Z, 0.0, -Z])
    # guard = lam * std([z_rm, z_grm]) = 0.5 * |2Z| / 2 = Z / 2
    assert g.guard == pytest.approx([Z / 2, 0.0, Z / 2])
    assert g.rewards == pytest.approx([-Z / 2, 0.0, -Z / 2])  # = [-0.6124, 0, -0.6124]
    # the consensus answer wins although neither judge ranks it first
    assert int(np.argmax(g.rewards)) == 1


def test_rm_heavy_weights():
    g = committee_group([1.0, 2.0, 3.0], [3.0, 2.0, 1.0], [True] * 3, RM_HEAVY, penalty=-3.0)
    # 0.7 z_rm + 0.3 z_grm = 0.4 z_rm; guard Z/2 at both ends
    assert g.rewards == pytest.approx([-0.4 * Z - Z / 2, 0.0, 0.4 * Z - Z / 2])
    assert g.rewards == pytest.approx([-1.1022704, 0.0, -0.1224745], abs=1e-6)


def test_rm_only_has_no_guard_and_ignores_grm():
    g = committee_group([1.0, 2.0, 3.0], [np.nan] * 3, [True] * 3, RM_ONLY, penalty=-3.0)
    assert g.rewards == pytest.approx([-Z, 0.0, Z])
    assert np.array_equal(g.guard, np.zeros(3))


def test_format_gate_penalty_and_group_stats_over_passing_only():
    gate = FormatGate(max_sentences=2, penalty=-3.0)
    answers = ["", "One. Two. Three.", "You may be right.", "Maybe they forgot. Ask them."]
    verdicts = [gate.check(a) for a in answers]
    assert [v.reason for v in verdicts] == ["empty", "too_long", "ok", "ok"]
    passed = [v.passed for v in verdicts]
    # failing candidates' scores are ignored (NaN); z over the two passing: rm [1, 3] -> [-1, 1], grm [1, 0] -> [1, -1]
    g = committee_group([np.nan, 100.0, 1.0, 3.0], [np.nan, 1.0, 1.0, 0.0], passed, EQUAL, penalty=gate.penalty)
    assert g.rewards == pytest.approx([-3.0, -3.0, -0.5, -0.5])
    assert g.z_rm == pytest.approx([0.0, 0.0, -1.0, 1.0])


def test_single_passing_candidate_gets_zero():
    g = committee_group([np.nan, 7.0], [np.nan, 0.5], [False, True], EQUAL, penalty=-2.0)
    assert g.rewards == pytest.approx([-2.0, 0.0])


def test_all_failing_group():
    g = committee_group([np.nan] * 3, [np.nan] * 3, [False] * 3, EQUAL, penalty=-3.0)
    assert g.rewards == pytest.approx([-3.0] * 3)


def test_z_is_invariant_to_judge_scale():
    rng = np.random.default_rng(0)
    rm, grm = rng.normal(size=6), rng.uniform(size=6)
    a = committee_group(rm, grm, [True] * 6, EQUAL, -3.0).rewards
    b = committee_group(10 * rm - 4, 0.1 * grm + 0.2, [True] * 6, EQUAL, -3.0).rewards
    assert a == pytest.approx(b)


def test_batch_is_per_group():
    keys = ["a"] * 3 + ["b"] * 3
    rm = [1.0, 2.0, 3.0, 10.0, 20.0, 30.0]
    grm = [3.0, 2.0, 1.0, 0.0, 0.5, 1.0]
    res = committee_rewards(keys, [True] * 6, rm, grm, group_size=3, weights=EQUAL, penalty=-3.0)
    assert res.rewards[:3] == pytest.approx([-Z / 2, 0.0, -Z / 2])
    assert res.rewards[3:] == pytest.approx([-Z, 0.0, Z])  # judges agree: no guard
    m = res.metrics()
    assert m["gate_pass_rate"] == 1.0 and m["rm_score"] == pytest.approx(11.0)
    assert m["rm_flat_rate"] == 0.0 and m["grm_flat_rate"] == 0.0


def test_flat_judge_is_reported():
    keys = ["a"] * 3 + ["b"] * 3
    res = committee_rewards(keys, [True] * 6, [1.0, 2.0, 3.0, 1.0, 2.0, 3.0], [0.5] * 3 + [0.0, 0.5, 1.0],
                            group_size=3, weights=EQUAL, penalty=-3.0)
    assert res.metrics()["grm_flat_rate"] == 0.5  # the GRM gives no signal in group "a"


def test_group_layout_is_validated():
    with pytest.raises(ValueError, match="whole groups"):
        group_slices(["a"] * 5, 4)
    with pytest.raises(ValueError, match="mix prompts"):
        group_slices(["a", "a", "b", "b"], 4)
    assert group_slices(["a", "a", "b", "b"], 2) == [slice(0, 2), slice(2, 4)]


def test_weights_are_validated():
    with pytest.raises(ValueError):
        CommitteeWeights(-0.1, 1.0, 0.5)
    with pytest.raises(ValueError):
        CommitteeWeights(0.0, 0.0, 0.5)
