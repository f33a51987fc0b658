"""Best-of-N systems: N answers sampled from an arm's policy, the one a named scorer prefers kept. Pure.

Declared in config ``evaluation.best_of_n`` as ``bon:<arm>:<scorer>:<N>``
(``<arm>`` an arm, or one instance ``<arm>-seed<s>`` of an arm trained with
several seeds). A declaration on an arm with several seeds is one system per
seed, pooled by the summary like the arm's own seeds. A system is named
``<instance>-bon<N>-<scorer>`` (``committee-bon16-ensemble``) and is
generated per evaluation run and judged against every opponent exactly like
an arm; :mod:`.best_of_n_io` generates it.

Scorers (each scores a candidate against its scenario; higher is better):

- ``ensemble``: the regression reward-model ensemble (mean - penalty over seeds);
- ``bradley_terry``: the Bradley-Terry reward model;
- ``grm``: the GRM's win rate against the scenario's median human reappraisal (both orders);
- ``committee``: the committee reward over the N candidates as one group
  (z-scores within the group; weights 0.5/0.5, guard ``policy.lam``), the
  reward GRPO trains the committee arm with.

A system scored by the GRM (or the committee) plays the study scenarios only:
the OOD scenarios have no human reference. A candidate the format gate refuses (empty, too long) is never kept unless
all N are refused (then the first sample is kept); ties keep the earlier sample.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ..errors import ConfigError
from ..policy.arms import ArmInstance

SCORERS = ("ensemble", "bradley_terry", "grm", "committee")
DECLARATION = re.compile(r"^bon:(?P<arm>[a-z][a-z0-9_]*(?:-seed\d+)?):(?P<scorer>[a-z_]+):(?P<n>\d+)$")


@dataclass(frozen=True)
class BestOfN:
    """One best-of-N system: ``n`` samples of ``instance``'s policy, the one ``scorer`` prefers kept."""

    name: str
    instance: str
    arm: str
    scorer: str
    n: int
    declared: str

    @property
    def uses_ensemble(self) -> bool:
        return self.scorer in ("ensemble", "committee")

    @property
    def uses_grm(self) -> bool:
        return self.scorer in ("grm", "committee")

    @property
    def uses_bradley_terry(self) -> bool:
        return self.scorer == "bradley_terry"

    def scorer_calls(self, ensemble_size: int) -> int:
        """Reward-model forward passes (GRM judgments) per kept answer: N candidates times the scorer's calls
        per candidate (each ensemble seed, the Bradley-Terry model, the GRM's two orders)."""
        per = ensemble_size * self.uses_ensemble + self.uses_bradley_terry + 2 * self.uses_grm
        return int(self.n * per)

    @property
    def pools(self) -> tuple[str, ...]:
        """The GRM scores against the scenario's human reference, which only the study scenarios have: a system
        scored by the GRM (or the committee) plays the train pool only; the others play both pools."""
        return ("train",) if self.uses_grm else ("train", "ood")


def system_name(instance: str, scorer: str, n: int) -> str:
    return f"{instance}-bon{n}-{scorer}"


def parse_best_of_n(declared: Sequence[str] | None, instances: Mapping[str, ArmInstance]) -> dict[str, BestOfN]:
    """Best-of-N systems by name from ``evaluation.best_of_n`` (``instances``: the evaluated arm instances)."""
    out: dict[str, BestOfN] = {}
    arms: dict[str, list[str]] = {}
    for inst in instances.values():
        arms.setdefault(inst.arm.name, []).append(inst.name)
    for i, text in enumerate(declared or ()):
        where = f"config evaluation.best_of_n[{i}]"
        m = DECLARATION.match(str(text))
        if not m:
            raise ConfigError(f"{text!r} is not bon:<arm>:<scorer>:<N> (e.g. bon:committee:ensemble:16)", where=where)
        target, scorer, n = m["arm"], m["scorer"], int(m["n"])
        if scorer not in SCORERS:
            raise ConfigError(f"unknown scorer {scorer!r} (known: {', '.join(SCORERS)})", where=where)
        if n < 2:
            raise ConfigError(f"N must be >= 2 (best of {n} is the arm itself)", where=where)
        if target in instances:
            chosen = [target]
        elif target in arms:
            chosen = arms[target]
        else:
            known = sorted({*arms, *instances})
            raise ConfigError(f"{target!r} is not an evaluated arm or arm instance (known: {', '.join(known)})",
                              where=where)
        for inst in chosen:
            name = system_name(inst, scorer, n)
            if name in out:
                raise ConfigError(f"{text!r} declares {name!r} twice", where=where)
            out[name] = BestOfN(name=name, instance=inst, arm=instances[inst].arm.name, scorer=scorer, n=n,
                                declared=str(text))
    return out


def pooled_groups(systems: Mapping[str, BestOfN], arm_groups: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """Pooled name -> its per-seed systems, for the systems declared on an arm with several seeds."""
    groups: dict[str, list[str]] = {}
    for s in systems.values():
        if s.arm in arm_groups and s.instance in arm_groups[s.arm]:
            groups.setdefault(system_name(s.arm, s.scorer, s.n), []).append(s.name)
    return groups


def choose(scores: Sequence[float], passed: Sequence[bool], n: int) -> np.ndarray:
    """Index (0..n-1) of the kept candidate of each consecutive group of ``n``: the highest score among the
    candidates the gate passed (the earlier one on ties); the first when the gate passed none."""
    scores = np.asarray(scores, dtype=np.float64)
    passed = np.asarray(passed, dtype=bool)
    if scores.size != passed.size or scores.size % n:
        raise ValueError(f"{scores.size} scores and {passed.size} gate flags are not whole groups of {n}")
    masked = np.where(passed & np.isfinite(scores), scores, -np.inf).reshape(-1, n)
    picks = masked.argmax(axis=1)  # the first maximum: ties keep the earlier sample
    picks[~np.isfinite(masked).any(axis=1)] = 0
    return picks
