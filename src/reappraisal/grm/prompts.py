"""The GRM's prompt (fixed by the model card) and how a judge reply is laid out.

One prompt is used everywhere a GRM is trained or asked: distillation SFT,
GRPO, the scorer the committee calls, and the evaluation. The prompt is the
model card's system prompt and user template rendered by the tokenizer's own
chat template with the generation prompt, so the same code serves the tiny
demo models and ``Qwen/Qwen3-1.7B``.

A reply is ``reasoning`` then the verdict line ``ANSWER: A`` (or ``B``).
Where the chat template's generation prompt already opens a thinking block
(``<think>\\n``, as the tiny models' template does) the reply closes it before
the verdict; where the tokenizer knows ``<think>`` but the prompt does not
open it (Qwen3 with thinking on) the reply carries the whole block; otherwise
the reasoning is plain text. :func:`completion_style` tells which.
"""

from __future__ import annotations

from typing import Literal, Sequence

import pandas as pd

from reappraisal.base_models.prompts import GRM_SYSTEM_PROMPT, GRM_USER_TEMPLATE
from reappraisal.errors import DataValidationError

#: The model card's system prompt and user turn (see :mod:`reappraisal.base_models.prompts`).
SYSTEM_PROMPT, USER_TEMPLATE = GRM_SYSTEM_PROMPT, GRM_USER_TEMPLATE

#: The verdict line's marker; the reply ends with ``ANSWER_MARKER + " A"`` or ``" B"``.
ANSWER_MARKER = "ANSWER:"

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"

CompletionStyle = Literal["open", "tags", "plain"]


def judge_messages(scenario: str, first: str, second: str) -> list[dict[str, str]]:
    """The chat messages asking which of ``first`` (slot A) and ``second`` (slot B) is better."""
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": USER_TEMPLATE.format(v=scenario, a=first, b=second)},
    ]


def judge_prompt(tokenizer, scenario: str, first: str, second: str) -> str:
    """The prompt text (chat template + generation prompt) the judge continues."""
    return tokenizer.apply_chat_template(
        judge_messages(scenario, first, second), tokenize=False, add_generation_prompt=True
    )


def completion_style(tokenizer) -> CompletionStyle:
    """How a reply must be laid out for this tokenizer's chat template (see module doc)."""
    probe = tokenizer.apply_chat_template(
        [{"role": "user", "content": "x"}], tokenize=False, add_generation_prompt=True
    )
    if probe.rstrip().endswith(THINK_OPEN):
        return "open"
    if THINK_OPEN in tokenizer.get_vocab():
        return "tags"
    return "plain"


def format_completion(reasoning: str, verdict: str, style: CompletionStyle) -> str:
    """A reply: ``reasoning`` then ``ANSWER: <verdict>``, thinking tags per ``style``.

    The end-of-sequence token is not included (the trainer appends it).
    """
    if verdict not in ("A", "B"):
        raise ValueError(f"verdict must be 'A' or 'B', got {verdict!r}")
    reasoning = reasoning.strip()
    answer = f"{ANSWER_MARKER} {verdict}"
    if style == "open":
        return f"{reasoning}\n{THINK_CLOSE}\n\n{answer}"
    if style == "tags":
        return f"{THINK_OPEN}\n{reasoning}\n{THINK_CLOSE}\n\n{answer}"
    if style == "plain":
        return f"{reasoning}\n{answer}" if reasoning else answer
    raise ValueError(f"unknown completion style {style!r}")


def answer_prefix(style: CompletionStyle) -> str:
    """What follows the prompt when the verdict is asked for at once (logprob mode).

    The reasoning is empty and the text stops right after the marker, so the
    next token is the verdict letter (``" A"`` or ``" B"``).
    """
    if style == "open":
        return f"\n{THINK_CLOSE}\n\n{ANSWER_MARKER}"
    if style == "tags":
        return f"{THINK_OPEN}\n\n{THINK_CLOSE}\n\n{ANSWER_MARKER}"
    if style == "plain":
        return ANSWER_MARKER
    raise ValueError(f"unknown completion style {style!r}")


# ---------------------------------------------------------------------- scenarios
def scenario_texts(vignettes: pd.DataFrame, needed: Sequence[str], where: str = "vignettes") -> dict[str, str]:
    """vignette_id -> scenario text; every id in ``needed`` must be present."""
    missing_cols = [c for c in ("vignette_id", "text") if c not in vignettes.columns]
    if missing_cols:
        raise DataValidationError(f"missing column(s) {missing_cols}", where=where)
    texts = dict(zip(vignettes["vignette_id"].astype(str), vignettes["text"].astype(str)))
    missing = sorted(set(map(str, needed)) - set(texts))
    if missing:
        raise DataValidationError(f"no text for scenario(s) {missing[:5]}", where=where)
    return texts
