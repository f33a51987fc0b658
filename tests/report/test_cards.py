"""A policy arm's model card: tables filled from the summary and health artifacts, claims with verdicts."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from reappraisal.errors import PipelineInputError
from reappraisal.report.cards_io import CardInputs, claims_about, policy_card
from reappraisal.report.inputs import parse_manifest
from tests.report.summary_fixture import manifest

POLICY = {"arms": {"committee": {"w_rm": 0.5, "w_grm": 0.5}}, "lam": 0.5, "learning_rate": 8e-6, "beta": 0.04, "num_generations": 12,
          "max_steps": 500, "max_completion_length": 2048, "bf16": True, "temperature": 1.0,
          "format_gate": {"penalty": -3.0, "max_sentences": 2}, "warm_start": {"enabled": False}}


@pytest.fixture
def inputs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return CardInputs(parse_manifest(manifest(Path("."))), {"preset": "paper", "policy": POLICY,
                                                            "base_models": {"policy_base": "Qwen/Qwen3-4B-Thinking-2507"}})


def test_policy_card_tables_come_from_the_artifacts(inputs, tmp_path):
    card = policy_card(inputs, "committee")
    head = pd.read_csv(tmp_path / "results/summary/tables/headline.csv").set_index("arm").loc["committee"]
    assert f"| **{head['win_rate']:.4f}** | {head['contests']} | {head['scenarios']} | [{head['headline_low']:.3f}, {head['headline_high']:.3f}]" in card
    assert "| learning rate | 8e-06 |" in card and "| β (KL) | 0.0400 |" in card
    assert "base_model: Qwen/Qwen3-4B-Thinking-2507" in card and "DEMO PRESET" not in card
    per_scenario = pd.read_csv(tmp_path / "results/summary/tables/per_scenario.csv")
    assert card.count("| gpt-4-0314 | demo-judge | v") == len(per_scenario.query("arm == 'committee' and pool == 'train'"))
    health = json.loads((tmp_path / "results/policy/committee/health.json").read_text())
    assert f"### Training health: **{health['verdict']}**" in card
    # Provenance: this arm's files only, each with its hash.
    assert "results/policy/committee/health.json" in card and "results/policy/rm_only/health.json" not in card


def test_policy_card_claims_carry_verdicts_and_retractions(inputs, tmp_path):
    card = policy_card(inputs, "committee")
    claims = json.loads((tmp_path / "results/summary/claims.json").read_text())["claims"]
    retracted = next(c for c in claims if c["verdict"] == "retracted")
    assert f"~~{retracted['text']}~~" in card and retracted["retraction"]["reason"] in card
    about = {c["id"] for c in claims_about(claims, names=("committee",))}
    assert "committee_beats_gpt4" in about and "r1_reference" not in about
    assert "`r1_reference`" not in card
    # "committee" does not match inside another arm's name.
    assert claims_about([{"id": "x", "text": "committee_rm_heavy is worse", "rule": "", "lineage": []}], names=("committee",)) == []


def test_unknown_arm_is_an_error(inputs):
    with pytest.raises(PipelineInputError, match="no training health for arm 'nope'"):
        policy_card(inputs, "nope")
