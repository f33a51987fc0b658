"""Each claim carries what its design could have seen: the minimum detectable effect of its rule on its own row."""

from __future__ import annotations

import pandas as pd
import pytest

from reappraisal.stats import cluster_korn_graubard_interval, cluster_t_interval
from reappraisal.summary.claim_power import claim_power, power_note
from reappraisal.summary.claims import evaluate_claims
from reappraisal.summary.paper_numbers import claim_numbers, numbers_tex
from reappraisal.summary.summary_table import Table

SETTINGS = {"bar": 0.608, "confidence": 0.95}
HEADLINE = {"table": "headline", "where": {"arm": "a"}, "column": "headline_low", "op": ">", "than": {"setting": "bar"}}


def _headline(per_scenario: int, rates) -> Table:
    g = len(rates)
    low, high = cluster_korn_graubard_interval(rates, g * per_scenario)
    t_low, t_high = cluster_t_interval(rates)
    frame = pd.DataFrame({"arm": ["a"], "win_rate": [sum(rates) / g], "scenarios": [g], "contests": [g * per_scenario],
                          "headline_low": [low], "headline_high": [high], "cluster_t_low": [t_low],
                          "cluster_t_high": [t_high]})
    return Table("headline", "T", "c", "e", frame, [("f",)])


def _paired(low: float, high: float, scenarios: int = 6) -> Table:
    frame = pd.DataFrame({"kind": ["paired"], "arm": ["a"], "versus": ["b"], "estimate": [(low + high) / 2],
                          "ci_low": [low], "ci_high": [high], "scenarios": [scenarios], "contests": [scenarios * 12]})
    return Table("head_to_head", "T", "c", "e", frame, [("f",)])


def test_a_failing_headline_claim_says_what_its_design_detects_and_more_contests_see_more():
    rates = [0.70, 0.66, 0.62, 0.60, 0.58, 0.55]
    small = claim_power(HEADLINE, {"headline": _headline(12, rates)}, SETTINGS)
    large = claim_power(HEADLINE, {"headline": _headline(120, rates)}, SETTINGS)
    assert small["rule"] == "headline_above_bar" and small["design"]["scenarios"] == 6
    assert large["mde"] < small["mde"]
    assert small["false_hold"] <= 0.04
    note = power_note("fails", small)
    assert note.startswith("fails; this design detects ≥ ") and f"{small['mde']:.3f}" in note
    assert power_note("holds", small) is None


def test_a_noisier_paired_difference_needs_a_larger_effect():
    rule = {"table": "head_to_head", "where": {"kind": "paired", "arm": "a"}, "column": "ci_high", "op": "<", "than": 0.0}
    tight = claim_power(rule, {"head_to_head": _paired(-0.1, 0.02)}, SETTINGS)
    loose = claim_power(rule, {"head_to_head": _paired(-0.3, 0.2)}, SETTINGS)
    assert tight["rule"] == "paired_difference" and tight["mde"] < loose["mde"]
    assert tight["false_hold"] == pytest.approx(0.025)


def test_rules_over_other_quantities_carry_no_power():
    frame = pd.DataFrame({"model": ["m"], "accuracy": [0.9]})
    rule = {"table": "reward_models", "where": {"model": "m"}, "column": "accuracy", "op": ">=", "than": 0.935}
    assert claim_power(rule, {"reward_models": Table("reward_models", "T", "c", "e", frame, [("f",)])}, SETTINGS) is None
    assert claim_power({"card_interval": {"rate": 0.8, "n": 100, "quoted_low": 0.7, "decimals": 3}}, {}, SETTINGS) is None


def test_numbers_tex_carries_the_mde_of_a_claim_under_its_standing():
    tables = {"headline": _headline(12, [0.70, 0.66, 0.62, 0.60, 0.58, 0.55])}
    (record,) = evaluate_claims([{"id": "a_beats_bar", "text": "t", "rule": HEADLINE}], tables, SETTINGS)
    record["power"] = claim_power(HEADLINE, tables, SETTINGS)
    assert record["verdict"] == "fails"
    macros = {r["macro"]: r for r in claim_numbers([record], tables)}
    assert macros["RefusedABeatsBarMde"]["value"] == record["power"]["mde"]
    assert "\\newcommand{\\RefusedABeatsBarMde}" in numbers_tex(list(macros.values()))
