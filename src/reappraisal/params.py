"""Parsing of the ``--params`` JSON a rule passes to a stage (core layer).

Stage modules import :func:`parse_params` from here, never from
:mod:`reappraisal.cli` (the dispatcher imports the stages, so importing it
back from a stage would run uphill).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .errors import PipelineInputError


def parse_params(text: str | None) -> dict[str, Any]:
    """Parse the JSON object a rule passes as ``--params``: inline, or ``@<file>`` holding it.

    Rules pass ``@<file>`` (``section_file`` in ``workflow/rules/common.smk``)
    so that the shell command Snakemake echoes on failure stays one short line.
    """
    if not text:
        return {}
    where = None
    if text.startswith("@"):
        where = text[1:]
        try:
            text = Path(where).read_text(encoding="utf-8")
        except OSError as exc:
            raise PipelineInputError(f"cannot read the --params file ({exc.strerror})", where=where) from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PipelineInputError(f"--params is not valid JSON ({exc.msg})", where=where) from None
    if not isinstance(value, dict):
        raise PipelineInputError("--params must be a JSON object", where=where)
    return value
