"""What one evaluation generates and judges, from the config. Pure.

A *system* is anything this evaluation generates answers with: every
evaluated arm (on both pools) and every ``model`` opponent (on its pools).
"""

from __future__ import annotations

from typing import Any, Mapping

from ..errors import ConfigError
from ..policy.arms import POLICY_DIR, parse_arms
from .opponents import Opponent, generated_systems, parse_opponents

POOLS = ("train", "ood")


def evaluated_arms(config: Mapping[str, Any]) -> list[str]:
    """The arms the evaluation covers (config ``evaluation.arms``, default every arm)."""
    arms = sorted(parse_arms(config["policy"]))
    chosen = config["evaluation"].get("arms")
    if chosen is None:
        return arms
    unknown = [a for a in chosen if a not in arms]
    if unknown:
        raise ConfigError(f"unknown arm(s) {unknown}; policy.arms has {arms}", where="config evaluation.arms")
    return list(chosen)


def opponents(config: Mapping[str, Any]) -> dict[str, Opponent]:
    return parse_opponents(config["evaluation"], evaluated_arms(config))


def systems(config: Mapping[str, Any]) -> list[str]:
    return generated_systems(evaluated_arms(config), opponents(config))


def system_pools(config: Mapping[str, Any], system: str) -> tuple[str, ...]:
    if system in evaluated_arms(config):
        return POOLS
    return opponents(config)[system].pools


def system_model(config: Mapping[str, Any], system: str) -> str:
    """Where a system's weights are: ``results/policy/<arm>/model`` (a trained arm, or an external arm's
    pointer, resolved by :func:`reappraisal.policy.arms.resolve_model_dir`), or the `model` opponent's path / hub id."""
    if system in evaluated_arms(config):
        return f"{POLICY_DIR}/{system}/model"
    return opponents(config)[system].model
