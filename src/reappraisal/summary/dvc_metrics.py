"""The summary's metrics file for DVC (``dvc metrics show``/``diff``, ``dvc exp show``): headline and verdicts.

A flat view of what the summary already computed, nothing new: per headline
row (arm vs opponent, under the headline judge) its pooled win rate and
headline interval, and per claim its verdict. DVC flattens nested keys with
dots, so keys here hold none (``qwen2.5-72b`` is written ``qwen2_5-72b``).
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import pandas as pd

HEADLINE_FIGURES = {"win_rate": "win_rate", "ci_low": "headline_low", "ci_high": "headline_high"}


def metric_key(text: Any) -> str:
    return str(text).replace(".", "_")


def _number(value: Any) -> float | None:
    if value is None or value is pd.NA:
        return None
    value = float(value)
    return None if math.isnan(value) else round(value, 6)


def dvc_metrics(headline: pd.DataFrame | None, claims: Sequence[Mapping]) -> dict[str, Any]:
    """``{"headline": {"<arm> vs <opponent>": {win_rate, ci_low, ci_high}}, "claims": {id: verdict}}``."""
    rows: dict[str, dict[str, float | None]] = {}
    for r in ([] if headline is None else headline.to_dict("records")):
        key = metric_key(f"{r['arm']} vs {r['opponent']}")
        if key in rows:  # a second judge's row: the headline judge's comes first
            continue
        rows[key] = {name: _number(r.get(column)) for name, column in HEADLINE_FIGURES.items()}
    return {"headline": rows, "claims": {metric_key(c["id"]): str(c["verdict"]) for c in claims}}
