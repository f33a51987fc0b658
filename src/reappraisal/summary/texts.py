"""Text that is not code, kept in YAML files beside the code that shows it (pure apart from reading them).

A text file maps names to strings; a string may be a Jinja2 template over
the values its user passes (a judge's name, the bar, the confidence level),
filled by :func:`fill` (an unknown name is an error, not an empty string).
The summary tables' titles and captions are in ``table_texts.yaml`` beside
this module (:func:`table_text`); the report keeps its own file beside its
code and reads it with :func:`load_texts`.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jinja2
import yaml

#: The summary tables' titles and captions (``tables``: {name: {title, caption}}) and the ``snippets`` they include.
TABLE_TEXTS = Path(__file__).with_name("table_texts.yaml")

_ENV = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


@functools.cache
def load_texts(path: Path) -> dict[str, Any]:
    """The parsed text file (read once per process)."""
    return yaml.safe_load(Path(path).read_text(encoding="utf-8"))


def fill(template: str, **values: Any) -> str:
    """``template`` with its ``{{ name }}`` fields filled from ``values``."""
    return _ENV.from_string(template).render(**values)


def percent(confidence: float) -> str:
    """A confidence level as the headings write it: 0.95 -> "95%"."""
    return f"{float(confidence) * 100:g}%"


def table_text(name: str, **values: Any) -> tuple[str, str]:
    """(title, caption) of the summary table ``name``; a caption may include the file's ``snippets``."""
    texts = load_texts(TABLE_TEXTS)
    env = _ENV.overlay(loader=jinja2.DictLoader(texts["snippets"]))
    entry = texts["tables"][name]
    return env.from_string(entry["title"]).render(**values), env.from_string(entry["caption"]).render(**values)
