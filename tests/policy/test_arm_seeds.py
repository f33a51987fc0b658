"""Arms rewarded by the Bradley-Terry model, and arms trained once per seed (instances)."""

from __future__ import annotations

import pytest

from reappraisal.errors import ConfigError
from reappraisal.evaluation.opponents import parse_opponents
from reappraisal.policy.arms import arm_instance, arm_instances, instance_groups, parse_arms
from reappraisal.settings import EvaluationSettings, PolicySettings


def test_a_bradley_terry_arm_is_the_rm_only_committee_on_one_model():
    arm = parse_arms(PolicySettings.from_config({"arms": {"v1": {"reward": "bradley_terry"}}, "seeds": [0]}))["v1"]
    assert arm.reward == "bradley_terry" and arm.trained
    assert arm.weights.uses_rm and not arm.weights.uses_grm and arm.weights.w_rm == 1.0


@pytest.mark.parametrize("spec, words", [
    ({"reward": "bradley_terry", "w_rm": 1.0}, "Bradley-Terry model alone"),
    ({"reward": "ppo"}, "is not one of ['committee', 'bradley_terry']"),
    ({"external": "/ckpt", "seeds": [0, 1]}, "external arm is not trained here"),
    ({"w_rm": 1.0, "seeds": [1, 1]}, "non-unique"),
])
def test_bad_arm_declarations_are_refused_naming_the_arm(spec, words):
    with pytest.raises(ConfigError) as err:
        parse_arms(PolicySettings.from_config({"arms": {"a": spec}, "seeds": [0]}))
    assert words in str(err.value) and "policy.arms.a" in str(err.value)


def test_each_seed_is_an_instance_and_one_seed_keeps_the_arm_name():
    policy = PolicySettings.from_config({"arms": {"committee": {"w_rm": 0.5, "w_grm": 0.5},
                                                  "v1": {"reward": "bradley_terry", "seeds": [0, 3]}}, "seeds": [0]})
    instances = arm_instances(policy)
    assert list(instances) == ["committee", "v1-seed0", "v1-seed3"]
    assert instance_groups(policy) == {"v1": ["v1-seed0", "v1-seed3"]}
    # seed s trains with the config seed + s: seed 0 is the config seed, as before seeds existed
    assert instances["committee"].training_seed(100) == 100 and instances["v1-seed3"].training_seed(100) == 103
    with pytest.raises(ConfigError, match="unknown arm instance 'v1'"):
        arm_instance(policy, "v1")


def test_policy_seeds_apply_to_every_arm_without_its_own():
    instances = arm_instances(PolicySettings.from_config({"arms": {"a": {"w_rm": 1.0}, "b": {"w_rm": 1.0, "seeds": [5]}},
                                                         "seeds": [0, 1]}))
    assert list(instances) == ["a-seed0", "a-seed1", "b"]


def test_head_to_head_between_arms_with_seeds_meets_every_instance_of_the_other():
    opps = parse_opponents(EvaluationSettings.from_config({"head_to_head": [{"arm": "a", "opponent_arm": "b", "pools": ["train"]}]}),
                           ["a-seed0", "a-seed1", "b-seed0"],
                           {"a": ["a-seed0", "a-seed1"], "b": ["b-seed0"]})
    assert list(opps) == ["arm:b-seed0"]
    assert opps["arm:b-seed0"].arms == ("a-seed0", "a-seed1")
    assert opps["arm:b-seed0"].plays("a-seed1") and not opps["arm:b-seed0"].plays("b-seed0")
