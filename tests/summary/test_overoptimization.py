"""The overoptimization table: gold peaking then falling while the proxy rises is found, and only then."""

from __future__ import annotations

import numpy as np
import pandas as pd

from reappraisal.summary.overoptimization import overoptimization_row, overoptimization_table


def _log(gold, proxy, kl=None):
    n = len(gold)
    frame = {"step": np.arange(1, n + 1), "gold": gold, "reward": proxy}
    if kl is not None:
        frame["kl"] = kl
    return pd.DataFrame(frame)


def test_gold_peaking_while_the_proxy_keeps_rising_is_overoptimization():
    rng = np.random.default_rng(0)
    t = np.linspace(0, 1, 80)
    gold = 1.0 - 4 * (t - 0.4) ** 2 + rng.normal(0, 0.05, 80)  # peaks at 40% of the run, then falls
    proxy = t + rng.normal(0, 0.05, 80)
    row = overoptimization_row(_log(gold, proxy, kl=t**2), window=10)
    assert row["overoptimized"] and 25 <= row["gold_peak_step"] <= 45
    assert row["gold_drop"] > 2 * row["gold_drop_se"] > 0
    assert row["sqrt_kl_last"] > row["sqrt_kl_at_peak"]


def test_gold_rising_with_the_proxy_is_not_and_no_kl_leaves_kl_empty():
    rng = np.random.default_rng(1)
    t = np.linspace(0, 1, 80)
    row = overoptimization_row(_log(t + rng.normal(0, 0.05, 80), t + rng.normal(0, 0.05, 80)), window=10)
    assert not row["overoptimized"] and row["sqrt_kl_last"] is None
    # gold falling while the proxy falls too is not overoptimization either
    row = overoptimization_row(_log(1 - t, 1 - t), window=10)
    assert not row["overoptimized"]


def test_an_arm_without_gold_gets_a_note_not_a_number():
    table = overoptimization_table(["a", "b"], {"a": _log([0.1] * 30, [0.2] * 30), "b": pd.DataFrame({"step": [1]})},
                                   {}, window=10)
    frame = table.frame.set_index("arm")
    assert frame.loc["a", "overoptimized"] is False or not frame.loc["a", "overoptimized"]
    assert "gold" in frame.loc["b", "note"]


def test_a_proxy_that_moved_only_by_float32_rounding_has_not_risen():
    """Rewards are float32: a last window whose proxy equals the peak's up to rounding is not a rise (a demo arm's
    two windows of rewards, all multiples of 0.375 up to rounding, once differed by 1e-8 and read as risen)."""
    rng = np.random.default_rng(3)
    gold = np.r_[np.linspace(0, 1, 40), np.linspace(1, 0, 40)] + rng.normal(0, 0.02, 80)  # peaks near step 40
    proxy = rng.choice([-1.125, -0.75, -0.375, 0.0], size=80)
    row = overoptimization_row(_log(gold, proxy), window=20)
    proxy[-20:] = proxy[row["gold_peak_step"] - 20:row["gold_peak_step"]] + np.float32(3e-8)  # the peak window, rounded
    row = overoptimization_row(_log(gold, proxy), window=20)
    assert row["gold_drop"] > 2 * row["gold_drop_se"]
    assert 0 < row["proxy_last"] - row["proxy_at_peak"] < 1e-6 and not row["overoptimized"]
    proxy[-1] += 0.375  # one step's reward up by one notch: a rise
    assert overoptimization_row(_log(gold, proxy), window=20)["overoptimized"]
