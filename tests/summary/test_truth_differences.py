"""A difference's truth: the truth stage's own row where two systems read one opponent's draws, else the sum."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from reappraisal.summary.truth_tables import Truths


def _truths() -> Truths:
    rows = [
        ("a", "", "base-policy", "train", "arm", 0.60, 0.008),
        ("b", "", "base-policy", "train", "arm", 0.45, 0.008),
        ("a", "b", "base-policy", "train", "difference", 0.15, 0.006),
        ("a", "", "gpt-4-0314", "train", "arm", 0.30, 0.007),
        ("b", "", "gpt-4-0314", "train", "arm", 0.20, 0.007),
    ]
    return Truths(pd.DataFrame(rows, columns=["system", "versus", "opponent", "pool", "kind", "truth", "truth_se"]))


def test_a_difference_row_gives_the_difference_and_never_shadows_a_systems_own_truth():
    truths = _truths()
    assert truths.get("a", "base-policy", "train") == (0.60, 0.008)  # not the difference row's 0.15
    assert truths.diff("a", "b", "base-policy", "train") == (0.15, 0.006)
    value, se = truths.diff("b", "a", "base-policy", "train")
    assert value == pytest.approx(-0.15) and se == 0.006
    # against answers in the data the two truths' draws are independent: their errors add
    value, se = truths.diff("a", "b", "gpt-4-0314", "train")
    assert value == pytest.approx(0.10) and se == pytest.approx(math.hypot(0.007, 0.007))
    assert truths.diff("a", "c", "gpt-4-0314", "train") is None
