"""The reward model's input text, fixed by the published model card.

One (scenario, reappraisal) pair becomes one plain-text prompt (no chat
template, no special tokens added by us); the sequence-classification head
reads the last token. Truncation keeps the first ``max_length`` tokens (512
in the card), so an over-long reappraisal loses its end: training and
scoring count and report how often that happens.
"""

from __future__ import annotations

from typing import Sequence

from reappraisal.base_models.prompts import REWARD_PROMPT_TEMPLATE

#: Verbatim from the model card; ``{v}`` is the scenario, ``{r}`` the reappraisal.
PROMPT_TEMPLATE = REWARD_PROMPT_TEMPLATE

def format_prompt(scenario: str, reappraisal: str) -> str:
    """The card's prompt for one pair (``str.format``; braces in the texts are kept as is)."""
    return PROMPT_TEMPLATE.format(v=scenario, r=reappraisal)


def format_prompts(scenarios: Sequence[str], reappraisals: Sequence[str]) -> list[str]:
    """Prompts for aligned sequences of scenarios and reappraisals (equal lengths required)."""
    if len(scenarios) != len(reappraisals):
        raise ValueError(
            f"scenarios and reappraisals must have equal lengths, got {len(scenarios)} and {len(reappraisals)}"
        )
    return [format_prompt(str(v), str(r)) for v, r in zip(scenarios, reappraisals)]


def resolve_pad_token_id(tokenizer, model_config=None) -> int:
    """The pad id used to batch reward-model inputs.

    Order: the model config's ``pad_token_id`` (the head pools the last token
    that is not this id, so batching must pad with it), the tokenizer's pad
    token, then the tokenizer's EOS token (documented fallback for tokenizers
    without a pad token, e.g. Llama's: the prompt never contains EOS because
    nothing appends it). Raises ``ValueError`` when none is defined.
    """
    for candidate in (
        getattr(model_config, "pad_token_id", None) if model_config is not None else None,
        tokenizer.pad_token_id,
        tokenizer.eos_token_id,
    ):
        if isinstance(candidate, list):
            candidate = candidate[0] if candidate else None
        if candidate is not None:
            return int(candidate)
    raise ValueError("the tokenizer has neither a pad token nor an EOS token, so inputs cannot be batched")


def encode_prompts(
    tokenizer, prompts: Sequence[str], max_length: int, *, count_truncated: bool = True
) -> tuple[list[list[int]], int | None]:
    """Token ids of each prompt, truncated to ``max_length``, and how many were truncated.

    The count needs a second, untruncated pass; with ``count_truncated=False``
    it is skipped and ``None`` is returned in its place.

    Same call as the model card's snippet (``tokenizer(text, truncation=True,
    max_length=...)``, default special tokens), so batched and one-at-a-time
    scoring see identical ids.
    """
    if max_length < 1:
        raise ValueError(f"max_length must be >= 1, got {max_length}")
    if not prompts:
        return [], 0
    cut = [list(c) for c in tokenizer(list(prompts), truncation=True, max_length=max_length)["input_ids"]]
    if not count_truncated:
        return cut, None
    full = tokenizer(list(prompts), truncation=False, verbose=False)["input_ids"]
    return cut, sum(len(f) > len(c) for f, c in zip(full, cut))
