"""Parsing of the ``--params`` JSON a rule passes to a stage (core layer).

Stage modules import :func:`parse_params` from here, never from
:mod:`reappraisal.cli` (the dispatcher imports the stages, so importing it
back from a stage would run uphill).
"""

from __future__ import annotations

import json
from typing import Any

from .errors import PipelineInputError


def parse_params(text: str | None) -> dict[str, Any]:
    """Parse the JSON object a rule passes as ``--params``."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PipelineInputError(f"--params is not valid JSON ({exc.msg})") from None
    if not isinstance(value, dict):
        raise PipelineInputError("--params must be a JSON object")
    return value
