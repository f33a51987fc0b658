"""The schema is the one source of defaults: config dataclasses either have none or the schema's."""

from __future__ import annotations

import dataclasses

import pytest

from reappraisal.config import _load_schema, with_defaults
from reappraisal.base_models.tiny import TinyArchitecture
from reappraisal.policy.committee import FormatGate
from reappraisal.policy.health import HealthThresholds
from reappraisal.reward.train_io import RewardTrainConfig


def _schema_section(*path: str) -> dict:
    node = _load_schema()
    for key in path:
        node = node["properties"][key]
    return node["properties"]


@pytest.mark.parametrize("cls, path", [
    (FormatGate, ("policy", "format_gate")),
    (HealthThresholds, ("policy", "health")),
    (TinyArchitecture, ("base_models", "tiny")),
])
def test_dataclass_defaults_are_the_schemas(cls, path):
    declared = _schema_section(*path)
    for f in dataclasses.fields(cls):
        assert f.name in declared, f"{cls.__name__}.{f.name} is not a key of {'.'.join(path)}"
        assert f.default is not dataclasses.MISSING, f"{cls.__name__}.{f.name} has no default"
        assert f.default == declared[f.name]["default"], f"{cls.__name__}.{f.name}"


def test_reward_train_config_takes_every_default_from_the_schema():
    assert all(f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
               for f in dataclasses.fields(RewardTrainConfig))
    cfg = RewardTrainConfig.from_section({})
    declared = _schema_section("reward")
    assert dataclasses.asdict(cfg) == {f.name: declared[f.name]["default"] for f in dataclasses.fields(cfg)}
    # the values the review found disagreeing with the schema
    assert (cfg.num_train_epochs, cfg.weight_decay, cfg.warmup_ratio, cfg.lr_scheduler_type) == (2, 0.01, 0.05, "cosine")


def test_warm_start_defaults_come_from_the_schema():
    ws = with_defaults("policy", {})["warm_start"]
    assert (ws["steps"], ws["lr"]) == (150, 3e-3)


def test_a_section_with_a_wrong_key_is_refused_with_its_config_key():
    from reappraisal.errors import ConfigError

    with pytest.raises(ConfigError, match=r"config key 'reward.learning_rate'"):
        RewardTrainConfig.from_section({"learning_rate": "fast"})
