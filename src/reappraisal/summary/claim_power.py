"""What each claim's design could have seen: its rule's minimum detectable effect on the row it read (pure).

A claim that fails says little unless the reader knows whether its design could have seen the effect. For every
claim whose rule compares a contest rate or a paired difference with a threshold, this module reads the design
from the row the rule selected (scenarios, contests, and the spread of scenario rates or of per-scenario
differences its own interval implies) and asks :mod:`reappraisal.stats.power` for the rule's power curve there:
the minimum detectable effect at 80 % power (``mde``, win-rate units, the distance from the rule's threshold) and
the rule's false-hold rate at effect 0. A rule of several conditions reports its largest MDE (it needs them all).
Rules over other quantities (accuracies, health verdicts, card figures) get none.

The spread is read from the row's interval: its half-width over t_{G-1} times sqrt(G) is the sd of the G
scenario rates (or differences); for a rate, the binomial share θ(1 − θ)/m is taken off to leave the spread of
the true rates (at least 0.02). A rate row's cluster t interval (``cluster_t_low``, ``cluster_t_high``: t on the
scenario means) gives it exactly, from its longer arm where a bound is clipped at 0 or 1; the headline interval
would not (its cap near a bound widens it beyond the spread). The spread observed at the row's own rate is
simulated at the threshold plus the effect.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from scipy import stats as sps

from ..stats.power import TARGET_POWER, headline_power, paired_power, reversion_power
from .claims import NotComputable, rule_conditions, select_row
from .summary_table import Table

#: How a condition (table, column) is read: the kind of rule, and the row's estimate and interval columns.
RATE_RULES = {
    ("headline", "headline_low"): ("win_rate", "cluster_t_low", "cluster_t_high"),
    ("head_to_head", "ci_low"): ("estimate", "cluster_t_low", "cluster_t_high"),
    ("confirmation", "ci_low"): ("win_rate", "cluster_t_low", "cluster_t_high"),
}
DIFFERENCE_RULES = {
    ("head_to_head", "ci_low"): ("ci_low", "ci_high"),
    ("head_to_head", "ci_high"): ("ci_low", "ci_high"),
    ("ablation", "diff_ci_high"): ("diff_ci_low", "diff_ci_high"),
    ("ablation", "diff_ci_low"): ("diff_ci_low", "diff_ci_high"),
    ("best_of_n", "diff_ci_low"): ("diff_ci_low", "diff_ci_high"),
    ("best_of_n", "diff_ci_high"): ("diff_ci_low", "diff_ci_high"),
}
REVERSION_RULES = {("confirmation", "ci_high"): ("win_rate", "cluster_t_low", "cluster_t_high")}
#: The smallest between-scenario sd a row is taken to have (a spread the data cannot see is not zero).
SPREAD_FLOOR = 0.02


def _number(row: Mapping, column: str) -> float:
    value = row.get(column)
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise NotComputable(f"{column} is undefined") from None
    if not math.isfinite(value):
        raise NotComputable(f"{column} is undefined")
    return value


def _design(row: Mapping) -> tuple[int, float]:
    g, n = int(_number(row, "scenarios")), _number(row, "contests")
    if g < 2 or n < g:
        raise NotComputable(f"a design of {g} scenarios and {n:g} contests has no interval to power")
    return g, n / g


def _sd_of_scenarios(half_width: float, g: int, confidence: float) -> float:
    """The sd of G scenario values that a t interval of this half-width implies."""
    return half_width / sps.t.isf((1 - confidence) / 2, df=g - 1) * math.sqrt(g)


def _rate_spread(row: Mapping, columns, g: int, m: float, confidence: float) -> tuple[float, float]:
    estimate, low, high = (_number(row, c) for c in columns)
    # the longer arm: a bound clipped at 0 or 1 shortens one side only
    sd = _sd_of_scenarios(max(high - estimate, estimate - low), g, confidence)
    between = sd**2 - estimate * (1 - estimate) / m
    return estimate, max(math.sqrt(max(between, 0.0)), SPREAD_FLOOR)


def condition_power(cond: Mapping, tables: Mapping[str, Table], settings: Mapping[str, Any]) -> dict | None:
    """The power curve (as a dict) of one condition of a rule, or None when its kind has no power model."""
    key = (cond["table"], cond["column"])
    if key not in RATE_RULES and key not in DIFFERENCE_RULES and key not in REVERSION_RULES:
        return None
    row, _ = select_row(tables[cond["table"]], cond["where"])
    confidence = float(settings["confidence"])
    g, m = _design(row)
    than = cond["than"]
    if isinstance(than, Mapping) and "setting" in than:
        than = settings.get(than["setting"])
    elif isinstance(than, Mapping):
        than = row.get(than["column"])
    if key in REVERSION_RULES:
        truth, spread = _rate_spread(row, REVERSION_RULES[key], g, m, confidence)
        curve = reversion_power(truth=truth, scenarios=g, contests_per_scenario=m, spread=spread,
                                confidence=confidence)
    elif key in DIFFERENCE_RULES and (cond["table"] != "head_to_head" or row.get("kind") == "paired"):
        low, high = (_number(row, c) for c in DIFFERENCE_RULES[key])
        curve = paired_power(scenarios=g, sd_difference=max(_sd_of_scenarios((high - low) / 2, g, confidence), 1e-9),
                             confidence=confidence)
    elif key in RATE_RULES and than is not None and cond["op"] in (">", ">="):
        _, spread = _rate_spread(row, RATE_RULES[key], g, m, confidence)
        curve = headline_power(bar=float(than), scenarios=g, contests_per_scenario=m, spread=spread,
                               confidence=confidence)
    else:
        return None
    return curve.as_dict()


def claim_power(rule: Mapping, tables: Mapping[str, Table], settings: Mapping[str, Any]) -> dict | None:
    """The claim's minimum detectable effect: {mde, target_power, false_hold, rule, design, curves} with the
    largest MDE over its conditions (None: no effect up to the grid's end reaches the power), or None when no
    condition has a power model or its rows are not computable."""
    if "card_interval" in rule:
        return None
    curves = []
    try:
        for cond in rule_conditions(rule):
            curve = condition_power(cond, tables, settings)
            if curve is not None:
                curves.append(curve)
    except NotComputable:
        return None
    if not curves:
        return None
    worst = max(curves, key=lambda c: math.inf if c["mde"] is None else c["mde"])
    return {"mde": worst["mde"], "target_power": TARGET_POWER, "false_hold": max(c["false_hold"] for c in curves),
            "rule": worst["rule"], "design": worst["design"], "grid_end": worst["effects"][-1]}


def power_note(verdict: str, power: Mapping | None) -> str | None:
    """The sentence beside a failing claim: whether its design could have seen the effect."""
    if verdict != "fails" or not power:
        return None
    level = f"{round(100 * power['target_power'])} %"
    if power["mde"] is None:
        return f"fails; this design detects no effect up to {power['grid_end']:.2f} with {level} power"
    return f"fails; this design detects ≥ {power['mde']:.3f} (at {level} power)"
