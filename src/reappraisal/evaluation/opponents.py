"""Opponents: whom an arm's answers are judged against, each with one name.

Kinds (config ``evaluation.opponents``, ``evaluation.head_to_head``):

- ``answers``: answers already in the data, by author type: the held-out
  reference answers (``gpt-4-0314``, author type ``gpt4``) and other
  models' answer files (``deepseek-r1``, ``qwen2.5-72b``);
- ``model``: a model to generate with, exactly as an arm is generated (e.g.
  ``base-policy``, the policy before GRPO);
- ``arm``: another arm of this run (head-to-head), named ``arm:<name>``.

Each opponent plays on the scenario pools it lists (``train`` and/or
``ood``). Pure: config and tables in, specs and answer pools out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import pandas as pd

from ..errors import ConfigError, PipelineInputError
from ..settings import EvaluationSettings

ARM_PREFIX = "arm:"


@dataclass(frozen=True)
class Opponent:
    name: str
    kind: str  # answers | model | arm
    pools: tuple[str, ...]
    author_type: str | None = None
    model: str | None = None
    arm: str | None = None
    #: only these arms meet this opponent (None: every evaluated arm)
    arms: tuple[str, ...] | None = None

    def plays(self, arm: str) -> bool:
        return (self.arms is None or arm in self.arms) and self.arm != arm


def parse_opponents(evaluation: EvaluationSettings, arms: list[str],
                    instances: Mapping[str, Sequence[str]] | None = None) -> dict[str, Opponent]:
    """Opponent specs from the ``evaluation`` settings (``arms``: the evaluated arm instances;
    ``instances``: arm name -> its instances, so a head-to-head pair may name arms trained with several
    seeds: each instance of one then meets each instance of the other)."""
    instances = dict(instances or {})
    out: dict[str, Opponent] = {}
    for name, spec in evaluation.opponents.items():
        where = f"config evaluation.opponents.{name}"
        if name.startswith(ARM_PREFIX):
            raise ConfigError(f"names starting with {ARM_PREFIX!r} are reserved for head-to-head arms", where=where)
        kind = spec.source
        pools = tuple(spec.pools)
        if kind == "answers":
            if not spec.author_type:
                raise ConfigError("an `answers` opponent needs `author_type`", where=where)
            out[name] = Opponent(name, "answers", pools, author_type=str(spec.author_type))
        elif kind == "model":
            if not spec.model:
                raise ConfigError("a `model` opponent needs `model` (a path or hub id)", where=where)
            out[name] = Opponent(name, "model", pools, model=str(spec.model))
        else:
            raise ConfigError(f"source must be `answers` or `model`, got {kind!r}", where=where)
    for i, pair in enumerate(evaluation.head_to_head):
        where = f"config evaluation.head_to_head[{i}]"
        arm, other = pair.arm, pair.opponent_arm
        for a in (arm, other):
            if a not in arms and a not in instances:
                raise ConfigError(f"{a!r} is not an evaluated arm (evaluated: {', '.join(arms)})", where=where)
        if arm == other:
            raise ConfigError("an arm cannot meet itself", where=where)
        for mine in instances.get(arm, [arm]):
            for theirs in instances.get(other, [other]):
                name = f"{ARM_PREFIX}{theirs}"
                previous = out.get(name)
                players = tuple(sorted({mine, *(previous.arms if previous else ())}))
                out[name] = Opponent(name, "arm", tuple(pair.pools), arm=theirs, arms=players)
    return out


def generated_systems(arms: list[str], opponents: Mapping[str, Opponent]) -> list[str]:
    """Everything this evaluation generates answers with: the arms, then the `model` opponents."""
    return [*arms, *(o.name for o in opponents.values() if o.kind == "model")]


def answer_pools(opponent: Opponent, targets: pd.DataFrame, vignettes: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """An `answers` opponent's answers per scenario of its pools: vignette_id -> frame (answer_id, text).

    Every scenario of the opponent's pools must have at least one answer;
    otherwise the contest draw would silently skip it.
    """
    rows = targets[targets["author_type"] == opponent.author_type]
    scenarios = vignettes[vignettes["pool"].isin(opponent.pools)]["vignette_id"].astype(str).tolist()
    pools = {}
    for v in scenarios:
        sub = rows[rows["vignette_id"].astype(str) == v]
        if sub.empty:
            have = sorted(rows["vignette_id"].astype(str).unique())
            raise PipelineInputError(
                f"opponent {opponent.name!r} (author type {opponent.author_type!r}) has no answer for scenario {v!r} "
                f"of pool {sorted(opponent.pools)}; it has answers for {len(have)} scenario(s). Give it answers or "
                "narrow its `pools`", where=f"config evaluation.opponents.{opponent.name}")
        pools[v] = pd.DataFrame({"answer_id": sub["reappraisal_id"].astype(str).to_numpy(),
                                 "text": sub["text"].astype(str).to_numpy()}).sort_values("answer_id",
                                                                                         ignore_index=True)
    return pools
