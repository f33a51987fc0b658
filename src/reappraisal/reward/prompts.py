"""The reward model's input text, fixed by the published model card.

One (scenario, reappraisal) pair becomes one plain-text prompt (no chat
template, no special tokens added by us); the sequence-classification head
reads the last token. Truncation keeps the first ``max_length`` tokens (512
in the card), so an over-long reappraisal loses its end: training and
scoring count and report how often that happens.
"""

from __future__ import annotations

from typing import Sequence

#: Verbatim from the model card; ``{v}`` is the scenario, ``{r}`` the reappraisal.
PROMPT_TEMPLATE = (
    "Rate how effective this reappraisal is for the person in the scenario."
    "\n\nSCENARIO:\n{v}\n\nREAPPRAISAL:\n{r}"
)

#: The card's truncation limit in tokens.
CARD_MAX_LENGTH = 512


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
