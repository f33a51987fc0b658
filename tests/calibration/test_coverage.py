"""Across worlds: coverage per table, false-hold rate and power per claim, from per-world tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from reappraisal.calibration.coverage import (
    claim_calibration,
    interval_coverage,
    overoptimization_agreement,
)


def _intervals(coverage: float, n_worlds: int = 50, per_world: int = 20, seed: int = 0) -> pd.DataFrame:
    """Intervals of half-width 0.1 around estimates whose error makes them cover their truth ``coverage`` of the
    time (the truth is outside the interval with that complement, below or above alike)."""
    rng = np.random.default_rng(seed)
    n = n_worlds * per_world
    truth = rng.uniform(0.2, 0.8, n)
    miss = rng.random(n) > coverage
    side = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    estimate = truth + np.where(miss, side * rng.uniform(0.11, 0.2, n), rng.uniform(-0.09, 0.09, n))
    return pd.DataFrame({"world": np.repeat(np.arange(n_worlds), per_world), "table": "headline",
                         "method": "reported", "low": estimate - 0.1, "high": estimate + 0.1, "truth": truth})


def test_an_interval_that_covers_80_percent_is_caught_and_one_that_covers_95_is_not():
    bad = interval_coverage(_intervals(0.80)).iloc[0]
    assert bad["coverage_high"] < 0.95 and bad["intervals"] == 1000 and bad["worlds"] == 50
    assert bad["miss_below"] + bad["miss_above"] == pytest.approx(1 - bad["coverage"])
    assert bad["median_width"] == pytest.approx(0.2)
    good = interval_coverage(_intervals(0.95, seed=1)).iloc[0]
    assert good["coverage_low"] <= 0.95 <= good["coverage_high"]


def test_a_rule_that_holds_when_false_in_half_the_worlds_is_caught():
    rng = np.random.default_rng(2)
    rows = []
    for world in range(40):
        truth = "holds" if world % 4 == 0 else "fails"  # the truth holds in a quarter of the worlds
        careless = "holds" if truth == "holds" or rng.random() < 0.5 else "fails"
        careful = truth if rng.random() < 0.97 else "fails"
        rows += [{"world": world, "claim": "careless", "rule": "x > bar", "rule_verdict": careless,
                  "truth_verdict": truth},
                 {"world": world, "claim": "careful", "rule": "low > bar", "rule_verdict": careful,
                  "truth_verdict": truth},
                 {"world": world, "claim": "by_design", "rule": "y > 0", "rule_verdict": "fails",
                  "truth_verdict": "fails"},
                 {"world": world, "claim": "no_truth", "rule": "z", "rule_verdict": "holds", "truth_verdict": None}]
    table = claim_calibration(pd.DataFrame(rows)).set_index("claim")
    assert set(table.index) == {"careless", "careful", "by_design"}  # a claim without a truth verdict is left out
    careless, careful = table.loc["careless"], table.loc["careful"]
    assert careless["false_hold_low"] > 0.2 and careless["false_hold_rate"] == pytest.approx(
        careless["holds_when_false"] / 30)
    assert careful["false_hold_rate"] == 0 and careful["power"] > 0.8
    assert careless["truth_held_rate"] == pytest.approx(0.25) and careless["worlds"] == 40
    assert table.loc["by_design", "decided_by_design"] and not careless["decided_by_design"]
    assert np.isnan(table.loc["by_design", "power"])  # the truth never held: power is not measured


def test_the_log_s_overoptimization_verdict_is_set_against_the_truth_s():
    log = pd.DataFrame({"world": [0, 1, 2, 0, 1, 2], "arm": ["a"] * 3 + ["b"] * 3,
                        "overoptimized": [False, False, False, True, False, True]})
    truth = log.assign(overoptimized=[True, False, True, True, False, True])
    table = overoptimization_agreement(log, truth).set_index("arm")
    assert table.loc["a", "agree"] == 1 and table.loc["a", "truth_overoptimized"] == 2
    assert table.loc["b", "agreement"] == 1.0


def test_the_calibration_s_numbers_are_latex_macros_named_after_their_row():
    from reappraisal.calibration.coverage_io import calibration_numbers

    coverage = interval_coverage(_intervals(0.80))
    claims = claim_calibration(pd.DataFrame([{"world": w, "claim": "committee_beats_gpt4", "rule": "r",
                                              "rule_verdict": "fails", "truth_verdict": "fails"} for w in range(3)]))
    tex = calibration_numbers(50, coverage, claims)
    assert "\\newcommand{\\CalibrationWorlds}{50}" in tex
    assert f"\\newcommand{{\\CalibrationHeadlineReportedCoverage}}{{{coverage['coverage'].iloc[0]:.3f}}}" in tex
    assert "\\newcommand{\\CalibrationCommitteeBeatsGptFourFalseHoldRate}{0.000}" in tex
    assert "\\newcommand{\\CalibrationCommitteeBeatsGptFourPower}{--}" in tex  # its truth never held: no power
