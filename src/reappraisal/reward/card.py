"""The model card (README.md) written beside each trained reward-model seed.

Rendered from ``templates/card_seed.md.j2`` through the shared Markdown
environment (:mod:`reappraisal.markdown_templates`, as the report's cards).
Every number in it is read from the seed's ``metrics.json`` summary, never
typed by hand. The card carries the one-at-a-time reference snippet that
defines a seed's score and the ensemble score; the batched
:class:`~.ensemble.EnsembleScorer` must reproduce it (tested).
"""

from __future__ import annotations

from pathlib import Path

from reappraisal.markdown_templates import markdown_environment, write_markdown

from .prompts import PROMPT_TEMPLATE


def _fmt(x, digits: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def render_model_card(summary: dict) -> str:
    env = markdown_environment("reappraisal.reward", filters={"num": _fmt, "pyrepr": repr})
    return env.get_template("card_seed.md.j2").render(summary=summary, prompt=PROMPT_TEMPLATE)


def write_model_card(path: str | Path, summary: dict) -> None:
    write_markdown(path, render_model_card(summary))
