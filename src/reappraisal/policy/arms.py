"""Policy arms declared in ``config.yaml`` under ``policy.arms``, and their seeds.

An arm is either *trained here*, or *external*: a checkpoint trained
elsewhere, given by ``external: <path or hub id>``, evaluated without
training. A trained arm's reward is the committee (``reward: committee``, the
default) with weights ``w_rm``, ``w_grm`` and optionally its own ``lam``
(default ``policy.lam``), or the Bradley-Terry reward model alone
(``reward: bradley_terry``: the v1 recipe, the RM-only committee on the
Bradley-Terry model's score). An arm may set its own KL coefficient ``beta``
(default ``policy.beta``, which must be > 0); ``beta: 0`` written on an arm
is the cards' ablation without the anchor to the reference model, trained
as declared.

Seeds: a trained arm is trained once per seed of its ``seeds`` (default
``policy.seeds``); seed ``s`` trains with the config seed + ``s``. Each
(arm, seed) is an *instance* with its own folder ``results/policy/<instance>/``:
an arm with one seed has one instance named like the arm; an arm with
several has ``<arm>-seed<s>`` for each (:func:`arm_instances`). Snakemake's
``{arm}`` wildcard is an instance name; downstream stages use
:func:`resolve_model_dir` on ``results/policy/<instance>/model`` to find the
weights, and the summary pools an arm's instances into the arm's own row.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from reappraisal.errors import ConfigError
from reappraisal.settings import PolicySettings

from .committee import CommitteeWeights

#: The policy stage's results folder: ``<arm>/`` per arm, and the demo's warm start (a name no arm may take:
#: :data:`reappraisal.config.WARM_START`, checked with the config).
POLICY_DIR = "results/policy"
#: File in ``results/policy/<arm>/model/`` of an external arm, naming its checkpoint.
EXTERNAL_POINTER = "EXTERNAL.json"


#: An arm's rewards: the committee of the ensemble and the GRM, or the Bradley-Terry reward model alone.
REWARDS = ("committee", "bradley_terry")
#: Separates an arm's name from its seed in an instance name (arm names never contain it).
SEED_SEPARATOR = "-seed"


@dataclass(frozen=True)
class ArmSpec:
    """One arm: its reward and committee ``weights`` and its ``seeds`` when trained here, else the
    ``external`` checkpoint. A ``bradley_terry`` arm's weights are the RM-only committee (w_rm 1) on the
    Bradley-Terry model's score."""

    name: str
    weights: CommitteeWeights | None = None
    external: str | None = None
    reward: str = "committee"
    seeds: tuple[int, ...] = (0,)
    #: this arm's KL coefficient (None: ``policy.beta``); 0 only as a declared ablation (``beta: 0``)
    beta: float | None = None

    @property
    def trained(self) -> bool:
        return self.external is None


@dataclass(frozen=True)
class ArmInstance:
    """One training of an arm: ``name`` (its folder in POLICY_DIR), the ``arm`` and the policy ``seed``."""

    name: str
    arm: ArmSpec
    seed: int

    def training_seed(self, config_seed: int) -> int:
        """The seed GRPO trains with: the config seed + the policy seed (seed 0 trains with the config seed)."""
        return int(config_seed) + int(self.seed)


def parse_arms(policy: PolicySettings) -> dict[str, ArmSpec]:
    """All arms of the ``policy`` settings, validated (an arm's name is checked with the config)."""
    if not policy.arms:
        raise ConfigError("no arms declared", where="config key 'policy.arms'")
    default_lam = float(policy.lam)
    default_seeds = _seeds(policy.seeds, where="config key 'policy.seeds'")
    out = {}
    for name, spec in policy.arms.items():
        where = f"config key 'policy.arms.{name}'"
        if spec.external:
            if any(v is not None for v in (spec.w_rm, spec.w_grm, spec.lam, spec.seeds, spec.beta)) \
                    or spec.reward != "committee":
                raise ConfigError("an external arm is not trained here: give `external` alone (no weights, reward "
                                  "or seeds)", where=where)
            out[name] = ArmSpec(name=name, external=str(spec.external), seeds=(0,))
            continue
        reward = str(spec.reward)
        if reward not in REWARDS:
            raise ConfigError(f"reward must be one of {', '.join(REWARDS)}, got {reward!r}", where=where)
        seeds = _seeds(spec.seeds, where=f"{where}.seeds") if spec.seeds is not None else default_seeds
        lam = float(spec.lam if spec.lam is not None else default_lam)
        if reward == "bradley_terry":
            if spec.w_rm is not None or spec.w_grm is not None:
                raise ConfigError("a bradley_terry arm is rewarded by the Bradley-Terry model alone: no w_rm / w_grm",
                                  where=where)
            weights = CommitteeWeights(w_rm=1.0, w_grm=0.0, lam=lam)
        else:
            try:  # a weight the arm leaves out is 0
                weights = CommitteeWeights(w_rm=float(spec.w_rm or 0.0), w_grm=float(spec.w_grm or 0.0), lam=lam)
            except ValueError as exc:
                raise ConfigError(str(exc), where=where) from None
        beta = float(spec.beta) if spec.beta is not None else None
        out[name] = ArmSpec(name=name, weights=weights, reward=reward, seeds=seeds, beta=beta)
    return out


def _seeds(values, *, where: str) -> tuple[int, ...]:
    seeds = tuple(int(v) for v in values or ())
    if not seeds:
        raise ConfigError("at least one seed is needed", where=where)
    if len(set(seeds)) != len(seeds) or any(s < 0 for s in seeds):
        raise ConfigError(f"seeds must be distinct integers >= 0, got {list(seeds)}", where=where)
    return seeds


def instance_name(arm: ArmSpec, seed: int) -> str:
    """The folder name of ``arm`` trained with policy seed ``seed``: the arm's name when it has one seed."""
    return arm.name if len(arm.seeds) == 1 else f"{arm.name}{SEED_SEPARATOR}{seed}"


def arm_instances(policy: PolicySettings) -> dict[str, ArmInstance]:
    """Every (arm, seed) of the ``policy`` settings by instance name, arms in name order, seeds in config order."""
    out = {}
    for _, arm in sorted(parse_arms(policy).items()):
        for seed in arm.seeds:
            inst = ArmInstance(instance_name(arm, seed), arm, seed)
            out[inst.name] = inst
    return out


def instance_groups(policy: PolicySettings) -> dict[str, list[str]]:
    """Arm name -> its instance names, for the arms trained with several seeds (the summary pools them)."""
    groups: dict[str, list[str]] = {}
    for inst in arm_instances(policy).values():
        groups.setdefault(inst.arm.name, []).append(inst.name)
    return {arm: names for arm, names in groups.items() if len(names) > 1}


def arm_instance(policy: PolicySettings, name: str) -> ArmInstance:
    """The instance called ``name`` (an arm with one seed is its own instance); a ConfigError naming the known ones."""
    instances = arm_instances(policy)
    if name not in instances:
        raise ConfigError(f"unknown arm instance {name!r} (declared: {', '.join(instances)})",
                          where="config key 'policy.arms'")
    return instances[name]


def arm_spec(policy: PolicySettings, name: str) -> ArmSpec:
    """The arm called ``name``; a ConfigError naming the known arms otherwise."""
    arms = parse_arms(policy)
    if name not in arms:
        raise ConfigError(f"unknown arm {name!r} (declared: {', '.join(sorted(arms))})", where="config key 'policy.arms'")
    return arms[name]


def wildcard_pattern(names: list[str]) -> str:
    """A regex matching exactly ``names`` (a never-matching one when empty)."""
    return "|".join(re.escape(n) for n in names) if names else "(?!x)x"


def resolve_model_dir(model_dir: str | Path) -> str:
    """The weights behind ``results/policy/<arm>/model``: itself, or the checkpoint an external arm points to."""
    pointer = Path(model_dir) / EXTERNAL_POINTER
    if pointer.is_file():
        return str(json.loads(pointer.read_text())["checkpoint"])
    return str(model_dir)
