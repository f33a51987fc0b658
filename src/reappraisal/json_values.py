"""Values made ready for strict JSON (core layer): one rule for every artifact that carries numbers.

Undefined numbers (NaN, ±inf) become ``null`` — strict JSON has no ``NaN``
token — and numpy scalars become the Python numbers ``json`` writes.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def json_ready(value: Any) -> Any:
    """``value`` with non-finite floats replaced by None and numpy scalars by Python ones, recursively."""
    if isinstance(value, dict):
        return {key: json_ready(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(item) for item in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value
