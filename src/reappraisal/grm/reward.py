"""The verifiable reward of GRM stage 2 (RM-R1's RL stage).

+1 when the reply's final verdict matches the human preference, −1 when it
is wrong or unparseable. :func:`verdict_reward` is the pure rule;
:func:`trl_verdict_reward` adapts it to TRL's reward-function signature
(``prompts, completions, completion_ids, **dataset columns``), reading the
correct letter for each completion from the dataset column ``correct``.
"""

from __future__ import annotations

from typing import Any, Sequence

from .verdict import VERDICTS, parse_verdict

CORRECT, WRONG = 1.0, -1.0


def verdict_reward(completion: str, correct: str) -> float:
    """+1 if ``completion``'s final verdict is ``correct`` (``"A"``/``"B"``), else −1."""
    if correct not in VERDICTS:
        raise ValueError(f"correct must be 'A' or 'B', got {correct!r}")
    return CORRECT if parse_verdict(completion) == correct else WRONG


def _text(completion: Any) -> str:
    # Conversational datasets hand over [{"role": "assistant", "content": ...}].
    if isinstance(completion, list):
        return "".join(str(m.get("content", "")) for m in completion if isinstance(m, dict))
    return str(completion)


def trl_verdict_reward(
    prompts: Sequence[Any],
    completions: Sequence[Any],
    completion_ids: Sequence[Any] | None = None,
    *,
    correct: Sequence[str],
    **kwargs: Any,
) -> list[float]:
    """TRL ``GRPOTrainer`` reward function: one ±1 per completion.

    ``correct`` is the dataset column repeated by TRL for every generation,
    so it is aligned with ``completions`` whatever process holds them. Logs
    the share of unparseable replies as ``grm/unparseable`` when TRL offers
    ``log_metric``.
    """
    if len(correct) != len(completions):
        raise ValueError(f"{len(completions)} completions but {len(correct)} 'correct' labels")
    texts = [_text(c) for c in completions]
    rewards = [verdict_reward(t, c) for t, c in zip(texts, correct)]
    log_metric = kwargs.get("log_metric")
    if callable(log_metric) and texts:
        log_metric("grm/unparseable", sum(parse_verdict(t) not in VERDICTS for t in texts) / len(texts))
    return rewards
