"""Thin TRL adapter: the committee reward as a GRPO reward function.

TRL calls a reward function with only the local process's completions, and a
prompt's group of ``num_generations`` completions may straddle processes
(TRL's own group statistics are computed after gathering). The adapter
therefore:

1. extracts each local answer (text after ``</think>``), applies the format
   gate and scores the passing answers with each judge in **one batched
   call** per judge (only local candidates: scoring is per candidate);
2. gathers the per-candidate records (group key, gate verdict, raw scores)
   from every process with :func:`accelerate.utils.gather_object`, in process
   order, which is TRL's global order;
3. checks that the global batch is consecutive whole groups of one prompt
   each and computes the committee on it (:mod:`reappraisal.policy.committee`);
4. returns this process's slice, and logs the batch summaries through TRL's
   ``log_metric`` (identical on every process, so TRL's cross-process mean
   is the global value).

Scorers are anything with the judges' ``score`` signatures (see
:class:`RMScorer`, :class:`GRMScorer`), so tests can use deterministic fakes.

With ``rewards_log`` the main process appends one JSON line per call: the
global batch in TRL's order (``vignette_id``, ``answer``, ``passed``,
``rm``, ``grm`` (raw scores, null where not scored), ``reward``) and the
training step, so every reward can be audited or recomputed offline. A
line a kill left half-written is cut off before the first append
(:func:`reappraisal.atomic.cut_torn_tail`), so the next line is not glued to it,
and so are the lines of the steps a resumed training redoes (``log_from_step``:
the checkpoint's step), so the log of a resumed training is the uninterrupted one's.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from ..atomic import atomic_path, cut_torn_tail
from .answer import decode_completions, extract_answer
from .committee import CommitteeResult, CommitteeWeights, FormatGate, committee_rewards

METRIC_PREFIX = "committee/"


class RMScorer(Protocol):
    """The reward-model ensemble: one float per (scenario, reappraisal)."""

    def score(self, scenarios: Sequence[str], reappraisals: Sequence[str]) -> np.ndarray: ...


class GRMScorer(Protocol):
    """The generative judge: win rate in [0, 1] per candidate against its scenario's reference."""

    def score(self, vignette_ids: Sequence[str], scenarios: Sequence[str], candidates: Sequence[str]) -> np.ndarray: ...


def score_candidates(
    vignette_ids: Sequence[str],
    scenarios: Sequence[str],
    answers: Sequence[str],
    passed: Sequence[bool],
    *,
    weights: CommitteeWeights,
    rm_scorer: RMScorer | None,
    grm_scorer: GRMScorer | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Raw judge scores of the passing answers (NaN for failing ones and unused judges).

    Each judge used by ``weights`` is called once, on all passing answers.
    """
    n = len(answers)
    rm = np.full(n, np.nan)
    grm = np.full(n, np.nan)
    idx = [i for i in range(n) if passed[i]]
    if not idx:
        return rm, grm
    sc = [scenarios[i] for i in idx]
    ans = [answers[i] for i in idx]
    if weights.uses_rm:
        if rm_scorer is None:
            raise ValueError("the arm weights the reward-model ensemble but no ensemble scorer was given")
        rm[idx] = _as_scores(rm_scorer.score(sc, ans), len(idx), "ensemble")
    if weights.uses_grm:
        if grm_scorer is None:
            raise ValueError("the arm weights the GRM but no GRM scorer was given")
        grm[idx] = _as_scores(grm_scorer.score([vignette_ids[i] for i in idx], sc, ans), len(idx), "GRM")
    return rm, grm


def _as_scores(values, n: int, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64).reshape(-1)
    if arr.size != n:
        raise ValueError(f"the {name} scorer returned {arr.size} scores for {n} candidates")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"the {name} scorer returned a non-finite score: {arr.tolist()}")
    return arr


def completion_texts(completions: Sequence[Any]) -> list[str]:
    """Plain text of TRL completions (strings, or conversational ``[{"role", "content"}]`` lists)."""
    out = []
    for c in completions:
        if isinstance(c, str):
            out.append(c)
        else:
            out.append("".join(str(m.get("content") or "") for m in c))
    return out


def completion_answers(completions: Sequence[Any], completion_ids: Sequence[Sequence[int]] | None = None,
                       tokenizer=None) -> list[str]:
    """Each completion's answer (text after ``</think>``): decoded from ``completion_ids`` with the policy's
    ``tokenizer`` when both are given (keeps ``</think>``), else from TRL's decoded ``completions``."""
    if tokenizer is not None and completion_ids is not None:
        texts = decode_completions(tokenizer, completion_ids)
    else:
        texts = completion_texts(completions)
    return [extract_answer(t) for t in texts]


def _nullable(values: Sequence[float]) -> list[float | None]:
    return [None if math.isnan(v) else float(v) for v in values]


def _process_info() -> tuple[int, int]:
    from accelerate import PartialState

    state = PartialState()
    return state.process_index, state.num_processes


def _gather(records: list) -> list:
    from accelerate.utils import gather_object

    return gather_object(records)


class CommitteeReward:
    """GRPO reward function computing the committee over whole groups across processes.

    ``tokenizer`` (the policy's) lets the adapter decode ``completion_ids``
    keeping ``</think>`` (see :func:`reappraisal.policy.answer.decode_completions`);
    without it the decoded ``completions`` TRL passes are used. After each
    call, :attr:`last_result` holds the global :class:`CommitteeResult` and
    :attr:`last_answers` the local answers.
    """

    __name__ = "committee"

    def __init__(
        self,
        *,
        weights: CommitteeWeights,
        gate: FormatGate,
        num_generations: int,
        rm_scorer: RMScorer | None = None,
        grm_scorer: GRMScorer | None = None,
        tokenizer=None,
        process_info: Callable[[], tuple[int, int]] = _process_info,
        gather: Callable[[list], list] = _gather,
        rewards_log: str | Path | None = None,
        log_from_step: int | None = None,
    ):
        self.weights = weights
        self.gate = gate
        self.num_generations = num_generations
        self.rm_scorer = rm_scorer
        self.grm_scorer = grm_scorer
        self.tokenizer = tokenizer
        self._process_info = process_info
        self._gather = gather
        self.rewards_log = Path(rewards_log) if rewards_log is not None else None
        # Before the first append: a torn last line (a killed earlier run) is cut, and so is every line of a step
        # at or after ``log_from_step`` (a resumed training redoes them; 0 for a training that starts anew;
        # None keeps every line).
        self._log_tail_checked = False
        self.log_from_step = log_from_step
        self.last_result: CommitteeResult | None = None
        self.last_answers: list[str] = []

    def __call__(
        self,
        prompts: Sequence[Any],
        completions: Sequence[Any],
        completion_ids: Sequence[Sequence[int]] | None = None,
        *,
        vignette_id: Sequence[str],
        scenario: Sequence[str],
        log_metric: Callable[[str, float], None] | None = None,
        **kwargs: Any,
    ) -> list[float]:
        n = len(completions)
        if len(vignette_id) != n or len(scenario) != n:
            raise ValueError("vignette_id and scenario must come with every completion (keep remove_unused_columns=False)")
        answers = completion_answers(completions, completion_ids, self.tokenizer)
        gates = [self.gate.check(a) for a in answers]
        passed = [g.passed for g in gates]
        rm, grm = score_candidates(
            vignette_id, scenario, answers, passed,
            weights=self.weights, rm_scorer=self.rm_scorer, grm_scorer=self.grm_scorer,
        )
        local = [
            (str(vignette_id[i]), bool(passed[i]), gates[i].reason, float(rm[i]), float(grm[i]),
             answers[i] if self.rewards_log else None)
            for i in range(n)
        ]
        rank, world = self._process_info()
        records = self._gather(local) if world > 1 else local
        if len(records) != n * world:
            raise ValueError(f"processes hold unequal numbers of completions ({len(records)} gathered, {n} here)")
        keys, g_passed, reasons, g_rm, g_grm, g_answers = (list(col) for col in zip(*records))
        result = committee_rewards(
            keys, g_passed, g_rm, g_grm,
            group_size=self.num_generations, weights=self.weights, penalty=self.gate.penalty, reasons=reasons,
        )
        self.last_result = result
        self.last_answers = answers
        if self.rewards_log is not None and rank == 0:
            state = kwargs.get("trainer_state")
            line = {"step": getattr(state, "global_step", None), "vignette_id": keys, "answer": g_answers,
                    "passed": g_passed, "rm": _nullable(g_rm), "grm": _nullable(g_grm),
                    "reward": result.rewards.tolist()}
            if not self._log_tail_checked:
                cut_torn_tail(self.rewards_log)
                if self.log_from_step is not None:
                    keep_steps_before(self.rewards_log, self.log_from_step)
                self._log_tail_checked = True
            with self.rewards_log.open("a") as fh:
                fh.write(json.dumps(line) + "\n")
        if log_metric is not None:
            for name, value in sorted(result.metrics().items()):
                if name != "reward":
                    log_metric(METRIC_PREFIX + name, value)
            # The GRM's unparseable verdicts (counted 0.5), as a share of this process's judge calls;
            # TRL averages it over processes. Logged on every process alike (same key set everywhere).
            n_scored = int(sum(passed)) if self.weights.uses_grm else 0
            errors = getattr(self.grm_scorer, "last_error_count", None)
            if self.weights.uses_grm and isinstance(errors, (int, np.integer)):
                log_metric(METRIC_PREFIX + "grm_error_rate", float(errors) / (2 * n_scored) if n_scored else 0.0)
        return result.rewards[rank * n : (rank + 1) * n].tolist()


def keep_steps_before(path: Path, step: int) -> int:
    """Rewrite the JSONL rewards log at ``path`` without the lines of steps ``>= step``; return how many went."""
    if not path.is_file():
        return 0
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    kept = [line for line in lines if (json.loads(line).get("step") or 0) < step]
    if len(kept) < len(lines):
        with atomic_path(path, suffix=path.suffix or ".jsonl") as tmp:
            Path(tmp).write_text("".join(kept), encoding="utf-8")
    return len(lines) - len(kept)
