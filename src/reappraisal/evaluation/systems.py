"""What one evaluation generates and judges, from the settings (``policy`` and ``evaluation``). Pure.

A *system* is anything this evaluation generates answers with: every
evaluated arm instance (an arm trained with one of its seeds,
:mod:`reappraisal.policy.arms`), every best-of-N system (:mod:`.best_of_n`),
both on both pools, and every ``model`` opponent (on its pools). The arm
instances and the best-of-N systems are the *candidates*: they meet the
opponents and are compared on the selection pool (:mod:`.confirmation_pool`).
"""

from __future__ import annotations

from ..errors import ConfigError
from ..settings import Settings
from ..policy.arms import POLICY_DIR, ArmInstance, arm_instances, instance_groups, parse_arms
from .best_of_n import BestOfN, parse_best_of_n, pooled_groups
from .opponents import Opponent, generated_systems, parse_opponents

POOLS = ("train", "ood")


def evaluated_instances(settings: Settings) -> dict[str, ArmInstance]:
    """The arm instances the evaluation covers: every seed of each arm of ``evaluation.arms`` (default every arm)."""
    arms = sorted(parse_arms(settings.policy))
    chosen = settings.evaluation.arms
    if chosen is not None:
        unknown = [a for a in chosen if a not in arms]
        if unknown:
            raise ConfigError(f"unknown arm(s) {unknown}; policy.arms has {arms}", where="config evaluation.arms")
    keep = set(arms if chosen is None else chosen)
    return {name: inst for name, inst in arm_instances(settings.policy).items() if inst.arm.name in keep}


def best_of_n_systems(settings: Settings) -> dict[str, BestOfN]:
    return parse_best_of_n(settings.evaluation.best_of_n, evaluated_instances(settings))


def evaluated_arms(settings: Settings) -> list[str]:
    """The candidates, judged against every opponent: the arm instances, then the best-of-N systems."""
    return [*evaluated_instances(settings), *best_of_n_systems(settings)]


def pooled_systems(settings: Settings) -> dict[str, list[str]]:
    """Pooled name -> its per-seed systems: each arm evaluated with several seeds, and each best-of-N
    system declared on such an arm (the summary adds a pooled row for each)."""
    evaluated = evaluated_instances(settings)
    groups = {arm: names for arm, names in instance_groups(settings.policy).items()
              if all(n in evaluated for n in names)}
    return {**groups, **pooled_groups(best_of_n_systems(settings), groups)}


def opponents(settings: Settings) -> dict[str, Opponent]:
    instances = evaluated_instances(settings)
    by_arm: dict[str, list[str]] = {}
    for inst in instances.values():
        by_arm.setdefault(inst.arm.name, []).append(inst.name)
    return parse_opponents(settings.evaluation, list(instances), by_arm)


def systems(settings: Settings) -> list[str]:
    return generated_systems(evaluated_arms(settings), opponents(settings))


def system_pools(settings: Settings, system: str) -> tuple[str, ...]:
    bon = best_of_n_systems(settings)
    if system in bon:
        return bon[system].pools
    if system in evaluated_instances(settings):
        return POOLS
    return opponents(settings)[system].pools


def system_model(settings: Settings, system: str) -> str:
    """Where a system's weights are: ``results/policy/<instance>/model`` (a trained instance, or an external arm's
    pointer, resolved by :func:`reappraisal.policy.arms.resolve_model_dir`; a best-of-N system samples from
    its instance's), or the `model` opponent's path / hub id."""
    bon = best_of_n_systems(settings)
    if system in bon:
        return f"{POLICY_DIR}/{bon[system].instance}/model"
    if system in evaluated_instances(settings):
        return f"{POLICY_DIR}/{system}/model"
    return opponents(settings)[system].model
