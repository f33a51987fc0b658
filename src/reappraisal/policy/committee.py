"""Committee reward: pure math over prompt groups (no models, no I/O).

For one prompt group of G candidate answers (the model card's recipe):

* **Format gate.** An answer that is empty (including a completion that never
  closed ``</think>``) or has more than ``max_sentences`` sentences (see
  :mod:`reappraisal.sentences`) gets exactly ``penalty`` and takes no
  part in the group statistics; it is not scored by any model.
* **z within the group.** Over the candidates that pass the gate,
  ``z_rm = z(ensemble scores)`` and ``z_grm = z(GRM scores)`` with
  ``z(x) = (x − mean(x)) / std(x)`` (population std, ddof 0); a group whose
  std is below ``1e-6`` (all equal, or a single passing candidate) gets zeros.
* **Reward.** ``reward = w_rm·z_rm + w_grm·z_grm − λ·std([z_rm, z_grm])``,
  where the guard ``std([a, b]) = |a − b| / 2`` (ddof 0) penalizes answers the
  two judges disagree on. An arm that uses one judge only (weight 0 for the
  other, e.g. ``rm_only``) never computes the unused component and has no
  guard: the guard is defined only between two judges.

Units: rewards are in group standard deviations; the penalty is a constant in
the same units (the default −3 lies below nearly every passing reward, since
``|z| ≤ √(G − 1)`` and in practice far less).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Hashable, Sequence

import numpy as np

from reappraisal.sentences import count_sentences
from reappraisal.settings import FormatGateSettings

#: A group whose scores have a std below this gets z = 0 for every candidate.
ZERO_STD = 1e-6


@dataclass(frozen=True)
class CommitteeWeights:
    """Weights of the two judges and the disagreement guard λ of one arm."""

    w_rm: float
    w_grm: float
    lam: float

    def __post_init__(self):
        if self.w_rm < 0 or self.w_grm < 0 or self.lam < 0:
            raise ValueError(f"committee weights must be >= 0 (got w_rm={self.w_rm}, w_grm={self.w_grm}, lam={self.lam})")
        if self.w_rm + self.w_grm <= 0:
            raise ValueError("at least one of w_rm, w_grm must be > 0")

    @property
    def uses_rm(self) -> bool:
        return self.w_rm > 0

    @property
    def uses_grm(self) -> bool:
        return self.w_grm > 0

    @property
    def uses_guard(self) -> bool:
        return self.uses_rm and self.uses_grm and self.lam > 0


@dataclass(frozen=True)
class GateResult:
    """Verdict of the format gate on one answer; ``reason`` is ``ok``, ``empty`` or ``too_long``."""

    passed: bool
    reason: str
    n_sentences: int


@dataclass(frozen=True)
class FormatGate:
    """Empty answers and answers of more than ``max_sentences`` sentences get ``penalty``."""

    max_sentences: int = 2
    penalty: float = -3.0

    @classmethod
    def from_settings(cls, gate: FormatGateSettings) -> "FormatGate":
        """The gate of the ``policy.format_gate`` settings."""
        return cls(max_sentences=int(gate.max_sentences), penalty=float(gate.penalty))

    def check(self, answer: str) -> GateResult:
        n = count_sentences(answer)
        if n == 0:
            return GateResult(False, "empty", 0)
        if n > self.max_sentences:
            return GateResult(False, "too_long", n)
        return GateResult(True, "ok", n)


def group_z(x: Sequence[float]) -> np.ndarray:
    """z-scores within one group (ddof 0); zeros when the std is below :data:`ZERO_STD`."""
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return x.copy()
    if not np.all(np.isfinite(x)):
        raise ValueError(f"non-finite score in a group: {x.tolist()}")
    sd = x.std()
    if sd < ZERO_STD:
        return np.zeros_like(x)
    return (x - x.mean()) / sd


@dataclass
class GroupReward:
    """Per-candidate reward and its parts for one group (failing candidates: z = guard = 0)."""

    rewards: np.ndarray
    z_rm: np.ndarray
    z_grm: np.ndarray
    guard: np.ndarray


def committee_group(
    rm: Sequence[float],
    grm: Sequence[float],
    passed: Sequence[bool],
    weights: CommitteeWeights,
    penalty: float,
) -> GroupReward:
    """Committee reward of one group; scores of failing or unused components are ignored (may be NaN)."""
    passed = np.asarray(passed, dtype=bool)
    g = passed.size
    rm = np.asarray(rm, dtype=np.float64)
    grm = np.asarray(grm, dtype=np.float64)
    if rm.size != g or grm.size != g:
        raise ValueError(f"group of {g} candidates got {rm.size} RM and {grm.size} GRM scores")
    z_rm = np.zeros(g)
    z_grm = np.zeros(g)
    guard = np.zeros(g)
    rewards = np.full(g, float(penalty))
    if passed.any():
        if weights.uses_rm:
            z_rm[passed] = group_z(rm[passed])
        if weights.uses_grm:
            z_grm[passed] = group_z(grm[passed])
        if weights.uses_guard:
            guard[passed] = weights.lam * np.std(np.stack([z_rm[passed], z_grm[passed]]), axis=0)
        rewards[passed] = weights.w_rm * z_rm[passed] + weights.w_grm * z_grm[passed] - guard[passed]
    return GroupReward(rewards=rewards, z_rm=z_rm, z_grm=z_grm, guard=guard)


def group_slices(group_keys: Sequence[Hashable], group_size: int) -> list[slice]:
    """Contiguous groups of ``group_size`` candidates, checked to share one key each.

    GRPO lays a batch out as consecutive blocks of ``num_generations``
    completions of one prompt; anything else (a partial group, a block mixing
    prompts) means the layout assumption is broken and is refused rather than
    silently normalized across prompts.
    """
    n = len(group_keys)
    if group_size < 1 or n % group_size != 0:
        raise ValueError(f"{n} candidates do not form whole groups of {group_size}")
    slices = []
    for start in range(0, n, group_size):
        block = group_keys[start : start + group_size]
        if any(k != block[0] for k in block):
            raise ValueError(f"candidates {start}..{start + group_size - 1} mix prompts {sorted(set(map(str, block)))}")
        slices.append(slice(start, start + group_size))
    return slices


@dataclass
class CommitteeResult:
    """Committee rewards of a batch of whole groups, with the parts the trainer logs."""

    rewards: np.ndarray
    z_rm: np.ndarray
    z_grm: np.ndarray
    guard: np.ndarray
    passed: np.ndarray
    rm: np.ndarray
    grm: np.ndarray
    reasons: list[str] = field(default_factory=list)
    group_size: int = 0

    def metrics(self) -> dict[str, float]:
        """Batch summaries: gate rates, mean raw judge scores and guard over passing answers, mean reward.

        ``rm_score``/``grm_score`` are raw scores (the z's average to 0 in each
        group by construction, so their mean carries no information).
        ``rm_flat_rate``/``grm_flat_rate`` are the shares of groups (with at
        least two passing answers) in which that judge scores every passing
        answer the same, i.e. gives GRPO no signal. Keys whose value is
        undefined (no passing answer, unused judge) are omitted.
        """
        n = max(self.passed.size, 1)
        out = {
            "reward": float(self.rewards.mean()) if self.rewards.size else float("nan"),
            "gate_pass_rate": float(self.passed.sum() / n),
            "gate_empty_rate": float(sum(r == "empty" for r in self.reasons) / n),
            "gate_too_long_rate": float(sum(r == "too_long" for r in self.reasons) / n),
        }
        if self.passed.any():
            p = self.passed
            if np.all(np.isfinite(self.rm[p])):
                out["rm_score"] = float(self.rm[p].mean())
            if np.all(np.isfinite(self.grm[p])):
                out["grm_score"] = float(self.grm[p].mean())
            out["guard"] = float(self.guard[p].mean())
        if self.group_size > 0:
            for name, scores in (("rm", self.rm), ("grm", self.grm)):
                flat = []
                for start in range(0, self.passed.size, self.group_size):
                    sl = slice(start, start + self.group_size)
                    x = scores[sl][self.passed[sl]]
                    if x.size >= 2 and np.all(np.isfinite(x)):
                        flat.append(bool(x.std() < ZERO_STD))
                if flat:
                    out[f"{name}_flat_rate"] = float(np.mean(flat))
        return {k: v for k, v in out.items() if np.isfinite(v)}


def committee_rewards(
    group_keys: Sequence[Hashable],
    passed: Sequence[bool],
    rm: Sequence[float],
    grm: Sequence[float],
    *,
    group_size: int,
    weights: CommitteeWeights,
    penalty: float,
    reasons: Sequence[str] | None = None,
) -> CommitteeResult:
    """Committee rewards of consecutive whole groups (see :func:`group_slices`)."""
    passed = np.asarray(passed, dtype=bool)
    rm = np.asarray(rm, dtype=np.float64)
    grm = np.asarray(grm, dtype=np.float64)
    n = passed.size
    if len(group_keys) != n or rm.size != n or grm.size != n:
        raise ValueError("group_keys, passed, rm and grm must have one entry per candidate")
    rewards, z_rm, z_grm, guard = (np.zeros(n) for _ in range(4))
    for sl in group_slices(group_keys, group_size):
        gr = committee_group(rm[sl], grm[sl], passed[sl], weights, penalty)
        rewards[sl], z_rm[sl], z_grm[sl], guard[sl] = gr.rewards, gr.z_rm, gr.z_grm, gr.guard
    return CommitteeResult(
        rewards=rewards,
        z_rm=z_rm,
        z_grm=z_grm,
        guard=guard,
        passed=passed,
        rm=rm,
        grm=grm,
        reasons=list(reasons) if reasons is not None else ["ok" if p else "failed" for p in passed],
        group_size=group_size,
    )
