"""Policy arms declared in ``config.yaml`` under ``policy.arms``.

An arm is either *trained here* with committee weights (``w_rm``, ``w_grm``
and optionally its own ``lam``, default ``policy.lam``), or *external*: a
checkpoint trained elsewhere (e.g. the earlier Bradley-Terry-reward policy),
given by ``external: <path or hub id>``, evaluated without training.
Snakemake uses these helpers to constrain the ``{arm}`` wildcard of each rule,
and downstream stages use :func:`resolve_model_dir` on ``results/policy/<arm>/model``
(or :func:`policy_model_path` on the config) to find an arm's weights.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from reappraisal.config import with_defaults
from reappraisal.errors import ConfigError

from .committee import CommitteeWeights

ARM_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
#: The policy stage's results folder: ``<arm>/`` per arm, and the demo's warm start.
POLICY_DIR = "results/policy"
#: The warm start's folder in POLICY_DIR, so no arm may take its name.
WARM_START = "warm_start"
#: File in ``results/policy/<arm>/model/`` of an external arm, naming its checkpoint.
EXTERNAL_POINTER = "EXTERNAL.json"


@dataclass(frozen=True)
class ArmSpec:
    """One arm: committee ``weights`` when trained here, else the ``external`` checkpoint."""

    name: str
    weights: CommitteeWeights | None = None
    external: str | None = None

    @property
    def trained(self) -> bool:
        return self.external is None


def parse_arms(policy: Mapping[str, Any]) -> dict[str, ArmSpec]:
    """All arms of a ``policy`` config section (the schema's defaults filled), validated."""
    for name in policy.get("arms") or {}:  # before the schema, whose message could not say why
        where = f"config key 'policy.arms.{name}'"
        if not ARM_NAME.match(name):
            raise ConfigError("arm names are lowercase letters, digits and '_'", where=where)
        if name == WARM_START:
            raise ConfigError(f"{WARM_START!r} names the warm start's folder in {POLICY_DIR}/; pick another arm name",
                              where=where)
    policy = with_defaults("policy", policy)
    arms = policy["arms"]
    if not arms:
        raise ConfigError("no arms declared", where="config key 'policy.arms'")
    default_lam = float(policy["lam"])
    out = {}
    for name, spec in arms.items():
        where = f"config key 'policy.arms.{name}'"
        spec = spec or {}
        if spec.get("external"):
            if any(k in spec for k in ("w_rm", "w_grm", "lam")):
                raise ConfigError("an external arm is not trained here: give `external` or weights, not both", where=where)
            out[name] = ArmSpec(name=name, external=str(spec["external"]))
            continue
        try:
            weights = CommitteeWeights(
                w_rm=float(spec.get("w_rm", 0.0)), w_grm=float(spec.get("w_grm", 0.0)), lam=float(spec.get("lam", default_lam))
            )
        except ValueError as exc:
            raise ConfigError(str(exc), where=where) from None
        out[name] = ArmSpec(name=name, weights=weights)
    return out


def arm_spec(policy: Mapping[str, Any], name: str) -> ArmSpec:
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


def policy_model_path(policy: Mapping[str, Any], name: str) -> str:
    """Where an arm's weights are: ``results/policy/<arm>/model`` or the external checkpoint."""
    spec = arm_spec(policy, name)
    return spec.external if spec.external else f"{POLICY_DIR}/{name}/model"
