"""The policy's prompt, fixed by the published model card.

A prompt is a two-message conversation: the card's system prompt and a user
turn that embeds the scenario. It is passed to TRL as messages, so the
policy's own chat template renders it; thinking stays on (the template is
never called with ``enable_thinking=False``): for Qwen3-4B-Thinking-2507 and
the demo's tiny model alike, the generation prompt opens ``<think>\\n`` and
the completion is ``reasoning</think>answer``.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from reappraisal.base_models.prompts import POLICY_SYSTEM_PROMPT, POLICY_USER_TEMPLATE

#: System prompt and user turn, verbatim from the model card (``{scenario}`` is the vignette text).
SYSTEM_PROMPT, USER_TEMPLATE = POLICY_SYSTEM_PROMPT, POLICY_USER_TEMPLATE


def build_messages(scenario: str) -> list[dict[str, str]]:
    """The conversation (system + user) that asks for a reappraisal of ``scenario``."""
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": USER_TEMPLATE.format(scenario=scenario)},
    ]


def prompt_rows(vignettes: Iterable[Mapping[str, object]]) -> list[dict[str, object]]:
    """One GRPO dataset row per vignette: ``prompt`` (messages), ``vignette_id``, ``scenario``.

    ``vignettes`` are records with ``vignette_id`` and ``text`` (the data
    contract's vignettes table); the reward function receives ``vignette_id``
    and ``scenario`` back as keyword arguments.
    """
    rows = []
    for v in vignettes:
        scenario = str(v["text"])
        rows.append({"prompt": build_messages(scenario), "vignette_id": str(v["vignette_id"]), "scenario": scenario})
    return rows
