"""Power of the claim rules: what each design can and cannot see, and that the numbers are the rules' own."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from reappraisal.stats.power import (
    headline_power,
    minimum_detectable_effect,
    paired_power,
    reversion_power,
    unpaired_power,
)


def test_the_minimum_detectable_effect_is_read_where_the_curve_first_reaches_the_power():
    assert minimum_detectable_effect([0.0, 0.1, 0.2], [0.02, 0.6, 0.9]) == pytest.approx(0.1 + 0.2 / 0.3 * 0.1)
    assert minimum_detectable_effect([0.0, 0.1], [0.1, 0.5]) is None
    assert minimum_detectable_effect([0.0, 0.1], [0.85, 0.9]) == 0.0


def test_the_headline_rule_rarely_holds_at_the_bar_and_sees_more_with_more_contests():
    demo = headline_power(bar=0.608, scenarios=6, contests_per_scenario=12, spread=0.056, datasets=1500)
    paper = headline_power(bar=0.608, scenarios=6, contests_per_scenario=120, spread=0.056, datasets=1500)
    for curve in (demo, paper):
        assert curve.false_hold <= 0.04  # at the bar the rule holds no more often than the interval's tail
        # rises with the effect (common random numbers) up to a truth of 0.9; nearer 1 the cap near a bound
        # widens the interval and the power plateaus a little below 1 (about 0.95-0.99)
        rising = np.asarray(curve.power)[np.asarray(curve.effects) <= 0.3]
        assert np.all(np.diff(rising) >= -0.02)
    assert paper.mde < demo.mde
    assert 0.05 < paper.mde < 0.15 and paper.at(0.2) > 0.95  # the card's design: sees 0.2 above the bar, not 0.02
    assert paper.at(0.02) < 0.2


def test_the_paired_power_is_the_t_tests_own():
    rng = np.random.default_rng(0)
    g, sd, effect = 6, 0.1, 0.12
    d = effect + sd * rng.standard_normal((40000, g))
    t = d.mean(1) / (d.std(1, ddof=1) / np.sqrt(g))
    simulated = np.mean(t > stats.t.isf(0.025, g - 1))
    curve = paired_power(scenarios=g, sd_difference=sd, effects=(0.0, effect))
    assert curve.power[1] == pytest.approx(simulated, abs=0.01)
    assert curve.false_hold == pytest.approx(0.025)


def test_pairing_sees_more_than_ignoring_it_at_no_more_false_holds():
    # two arms sharing each scenario's difficulty (sd 0.1), differing by scenario with sd 0.05
    sd_arm, tau = np.sqrt(0.1**2 + 0.05**2 / 2), 0.05
    paired = paired_power(scenarios=6, sd_difference=tau)
    unpaired = unpaired_power(scenarios=6, sd_arm=sd_arm, correlation=0.1**2 / sd_arm**2)
    assert paired.mde < unpaired.mde
    assert paired.false_hold <= 0.03 and unpaired.false_hold <= 0.03


def test_a_reversion_is_claimed_rarely_when_there_is_none_and_often_when_it_is_large():
    curve = reversion_power(truth=0.6, scenarios=7, contests_per_scenario=30, spread=0.056, datasets=1500)
    assert curve.false_hold <= 0.04
    assert curve.at(0.3) > 0.95 and curve.mde is not None


def test_the_paired_t_sees_more_than_the_sign_flip_test_of_the_same_differences_at_six_scenarios():
    from reappraisal.stats.power import sign_flip_power

    t = paired_power(scenarios=6, sd_difference=0.08)
    flips = sign_flip_power(scenarios=6, sd_difference=0.08, datasets=4000)
    assert flips.false_hold <= 0.025  # all six on one side: 1/64 under the null
    assert t.mde < flips.mde
