"""The Jinja environment every Markdown model card is rendered with (core layer).

Templates live in a ``templates/`` folder of the package that renders them
(``reappraisal.reward`` for a reward-model seed's card, ``reappraisal.report``
for the ensemble, GRM and policy cards), so a stage reads only its own
templates and imports still run downhill. Markdown is not escaped; an
undefined name is an error, never an empty string; block tags leave no blank
lines behind and a template's final newline is kept.
"""

from __future__ import annotations

import os
from typing import Any, Callable

from .atomic import atomic_path


def markdown_environment(package: str, *, filters: dict[str, Callable[..., Any]] | None = None,
                         globals: dict[str, Any] | None = None, folder: str = "templates"):
    """A ``jinja2.Environment`` loading ``<package>/<folder>/``, with the given filters and globals."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader(package, folder),
        autoescape=False,  # Markdown
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(filters or {})
    env.globals.update(globals or {})
    return env


def write_markdown(path: str | os.PathLike, text: str) -> None:
    """Write a rendered card atomically (UTF-8), so a crash never leaves half a card."""
    with atomic_path(path, suffix=".md") as tmp:
        tmp.write_text(text, encoding="utf-8")
