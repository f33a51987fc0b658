"""A policy arm's model card: tables filled from the summary and health artifacts, claims with verdicts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from reappraisal.errors import PipelineInputError
from reappraisal.report.cards_io import CardInputs, claims_about, policy_card
from reappraisal.report.inputs import SummaryTable, parse_manifest
from reappraisal.settings import Settings
from tests.report.summary_fixture import manifest

POLICY = {"arms": {"committee": {"w_rm": 0.5, "w_grm": 0.5}}, "lam": 0.5, "learning_rate": 8e-6, "beta": 0.04, "num_generations": 12,
          "max_steps": 500, "max_completion_length": 2048, "bf16": True, "temperature": 1.0,
          "format_gate": {"penalty": -3.0, "max_sentences": 2}, "warm_start": {"enabled": False}}


@pytest.fixture
def inputs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return CardInputs(parse_manifest(manifest(Path("."))),
                      Settings.from_params({"preset": "paper", "policy": POLICY,
                                            "base_models": {"policy_base": "Qwen/Qwen3-4B-Thinking-2507"}}))


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


def test_the_reward_model_card_shows_the_bradley_terry_model_beside_the_ensemble(tmp_path, monkeypatch):
    from reappraisal.report.cards_io import ensemble_card

    monkeypatch.chdir(tmp_path)
    pairwise = lambda acc: {"accuracy": acc, "n_pairs": 300, "n_scenarios": 6,
                            "ci_cluster_t": {"method": "cluster_t", "low": acc - 0.05, "high": acc + 0.05},
                            "ci_iid_wilson": {"method": "iid_wilson", "low": acc - 0.03, "high": acc + 0.03}}
    seed = Path("results/reward/seed0")
    seed.mkdir(parents=True)
    (seed / "metrics.json").write_text(json.dumps({"seed": 0, "effective_seed": 1, "base": "b", "n_train": 10,
                                                   "global_steps": 3, "train_loss": 0.5,
                                                   "validation": {"pairwise": pairwise(0.7)}}))
    bon = lambda p: {"n": 8, "win_vs_random": p, "chance_win_vs_random": 0.5, "ci_cluster_t": {"low": p - 0.1, "high": p + 0.1}}
    Path("results/reward/metrics.json").write_text(json.dumps({
        "n_seeds": 1, "primary_dimension": "effectiveness", "split": "val", "held_out": "held-out pairs",
        "ensemble_formula": "mean - 0.5 * std over seeds", "penalty": "std", "lam": 0.5, "max_length": 256,
        "per_seed": {"seed0": {"pairwise": pairwise(0.7)}}, "mean_of_seeds_pairwise_accuracy": 0.7,
        "ensemble": {"pairwise": pairwise(0.72), "best_of_n": bon(0.55)},
        "bradley_terry": {"model_dir": "results/reward/bradley_terry", "pairwise": pairwise(0.8125),
                          "best_of_n": bon(0.6375),
                          "best_of_n_vs_ensemble": {"difference": 0.0875, "n_scenarios": 6,
                                                    "ci_cluster_t": {"low": 0.01, "high": 0.16}},
                          "training": {"n_train_pairs": 421, "n_split_pairs": 900, "min_gap": 0.5, "global_steps": 53,
                                       "train_loss": 0.41, "train_seconds": 12.5, "config": {"learning_rate": 0.003}}}}))
    inp = CardInputs(parse_manifest({"reward_models": "results/reward/metrics.json"}),
                     Settings.from_params({"preset": "demo"}))
    card = ensemble_card(inp, [seed])
    assert "| Bradley–Terry | 0.8125 | [0.762, 0.863] | [0.782, 0.843] | 300 | 6 |" in card
    assert "421 of the\n900 train-split human preference pairs" in card and "`results/reward/bradley_terry`" in card
    assert "0.6375" in card and "ensemble's 0.5500" in card and "difference 0.0875" in card


def _committee_log(fell: bool, rng: np.random.Generator) -> pd.DataFrame:
    """80 logged steps whose health checks all pass and whose log-only gold either falls from its peak by far more
    than its noise (``fell``) or only wobbles."""
    t = np.linspace(0, 1, 80)
    drop = 0.3 * np.clip(t - 0.25, 0, None) if fell else 0.0
    return pd.DataFrame({"step": np.arange(1, 81), "reward": rng.normal(-0.4, 0.02, 80), "kl": 0.02 * t,
                         "rm_score": 0.2 * t, "grm_score": 0.45 + 0.1 * t,
                         "gold": -0.35 - drop + rng.normal(0, 0.05, 80)})


def test_a_run_whose_gold_fell_beyond_noise_is_not_called_healthy(tmp_path, monkeypatch):
    """Every health check passes, but the demo's log-only gold fell from its peak by far more than its noise: the card
    says gold fell and by how much, and never "healthy"; a gold that only wobbles keeps the verdict."""
    monkeypatch.chdir(tmp_path)
    m = manifest(Path("."))
    log_path = tmp_path / "results/policy/committee/training_log.csv"
    rng = np.random.default_rng(4)
    log = _committee_log(True, rng)
    log.to_csv(log_path, index=False)
    card = policy_card(CardInputs(parse_manifest(m), Settings.from_params({"preset": "demo", "policy": POLICY})), "committee")
    assert json.loads((tmp_path / "results/policy/committee/health.json").read_text())["verdict"] == "healthy"
    assert "healthy" not in card
    assert "### Training health: **gold fell from its peak**" in card and "Gold fell:" in card
    assert "more than 2 standard errors" in card
    log.assign(gold=-0.35 + rng.normal(0, 0.05, 80)).to_csv(log_path, index=False)  # the same run, gold wobbling
    card = policy_card(CardInputs(parse_manifest(m), Settings.from_params({"preset": "demo", "policy": POLICY})), "committee")
    assert "### Training health: **healthy**" in card and "is within 2 standard errors" in card


def test_on_the_demo_the_truths_along_training_decide_whether_gold_fell(tmp_path, monkeypatch):
    """An arm with checkpoints drawn fresh (the ``trajectory_fit`` table) is judged by those truths, not by the log's
    noisy per-step gold: a drop of more than 3 standard errors is "gold fell" though the log's gold only wobbles,
    and a drop within noise keeps "healthy" though the log's gold fell."""
    monkeypatch.chdir(tmp_path)
    m = manifest(Path("."))
    log_path = tmp_path / "results/policy/committee/training_log.csv"
    rng = np.random.default_rng(4)
    _committee_log(False, rng).to_csv(log_path, index=False)
    fit = {"arm": "committee", "best_step": 20, "best_truth": 0.53, "last_truth": 0.46, "gold_drop": 0.12,
           "gold_drop_se": 0.02}

    def card_with(fit_row):
        inputs = CardInputs(parse_manifest(m), Settings.from_params({"preset": "demo", "policy": POLICY}))
        inputs.tables["trajectory_fit"] = SummaryTable("trajectory_fit", "Gold along training", "", None,
                                                       log_path, pd.DataFrame([fit_row]), {})
        return policy_card(inputs, "committee")

    card = card_with(fit)
    flat = " ".join(card.split())
    assert "### Training health: **gold fell from its peak**" in card
    assert "fresh answers drawn at the kept checkpoints" in flat and "0.1200" in flat and "more than 3 standard" in flat
    _committee_log(True, rng).to_csv(log_path, index=False)
    card = card_with(fit | {"gold_drop": 0.03})
    assert "### Training health: **healthy**" in card and "is within 3 standard errors" in " ".join(card.split())


def _reward_metrics() -> dict:
    pairwise = lambda acc: {"accuracy": acc, "n_pairs": 300, "n_scenarios": 6,
                            "ci_cluster_t": {"method": "cluster_t", "confidence": 0.95, "low": acc - 0.05, "high": acc + 0.05},
                            "ci_iid_wilson": {"method": "iid_wilson", "low": acc - 0.03, "high": acc + 0.03}}
    bon = {"n": 8, "win_vs_random": 0.55, "chance_win_vs_random": 0.5, "ci_cluster_t": {"low": 0.45, "high": 0.65}}
    return {"n_seeds": 1, "primary_dimension": "effectiveness", "split": "val", "held_out": "held-out pairs",
            "ensemble_formula": "mean - 0.5 * std over seeds", "penalty": "std", "lam": 0.5, "max_length": 256,
            "per_seed": {"seed0": {"pairwise": pairwise(0.7)}}, "mean_of_seeds_pairwise_accuracy": 0.7,
            "ensemble": {"pairwise": pairwise(0.72), "best_of_n": bon}}


def _grm_metrics() -> dict:
    acc = lambda a: {"accuracy": a, "n_pairs": 100, "ci_cluster_t": {"method": "cluster_t", "confidence": 0.95,
                                                                     "low": a - 0.1, "high": a + 0.1}}
    return {"headline_model": "final", "delta": 1.0, "statement": "The GRM judges held-out pairs.",
            "heldout": {"split": "val", "n_pairs": 100, "n_scenarios": 6}, "decoding": {"max_new_tokens": 64},
            "models": {"sft": {"mode": "generate", "accuracy": acc(0.66), "parseable_rate": 0.9,
                               "position_consistency": {"consistency": 0.7}},
                       "final": {"mode": "generate", "accuracy": acc(0.78), "parseable_rate": 0.95,
                                 "position_consistency": {"consistency": 0.8}}}}


def test_every_card_parses_with_huggingface_hub_and_carries_its_evaluation_results(tmp_path, monkeypatch):
    """Each card's front matter is what the Hub reads: huggingface_hub's own parser (no network) accepts it and
    finds a model-index whose metrics are the card's numbers: a policy's win rate against each opponent with the
    headline interval, a reward model's and the GRM's held-out accuracy with theirs. The prose has no glued
    sentences where a template's block tags met ("`</think>`).Reward:", "format gate(penalty")."""
    import re

    from huggingface_hub import ModelCard

    from reappraisal.report.cards_io import ensemble_card, grm_card
    from tests.report.summary_fixture import ARMS

    monkeypatch.chdir(tmp_path)
    m = manifest(Path("."))
    seed = Path("results/reward/seed0")
    seed.mkdir(parents=True)
    (seed / "metrics.json").write_text(json.dumps({"seed": 0, "effective_seed": 1, "base": "b", "n_train": 10,
                                                   "global_steps": 3, "train_loss": 0.5,
                                                   "validation": {"pairwise": _reward_metrics()["ensemble"]["pairwise"]}}))
    Path("results/reward/metrics.json").write_text(json.dumps(_reward_metrics()))
    Path("results/grm").mkdir(parents=True)
    Path("results/grm/metrics.json").write_text(json.dumps(_grm_metrics()))
    m |= {"reward_models": "results/reward/metrics.json", "grm": "results/grm/metrics.json"}
    for preset in ("demo", "paper"):
        inp = CardInputs(parse_manifest(m), Settings.from_params({
            "preset": preset, "policy": POLICY, "base_models": {"policy_base": "Qwen/Qwen3-4B-Thinking-2507"}}))
        cards = {"ensemble": ensemble_card(inp, [seed]), "grm": grm_card(inp, Path("results/grm/model")),
                 **{arm: policy_card(inp, arm) for arm in ARMS}}
        head = pd.read_csv("results/summary/tables/headline.csv")
        for name, text in cards.items():
            card = ModelCard(text, ignore_metadata_errors=False)  # raises on a malformed model-index
            data = card.data.to_dict()
            assert data["model-index"] and card.data.eval_results, name
            assert all(r.verified is False for r in card.data.eval_results)
            assert not re.search(r"[a-z`)][.)](Reward|Arm)\b|gate\(", text), name
            body = text.split("\n---\n", 1)[1]
            assert body.lstrip().startswith("# "), name
            if name in ARMS:
                results = {r.metric_args["opponent"]: r for r in card.data.eval_results if r.metric_type == "win_rate"}
                rows = head[head["arm"] == name]
                assert set(results) == set(rows["opponent"]), name
                for row in rows.to_dict("records"):
                    r = results[row["opponent"]]
                    assert r.metric_value == pytest.approx(row["win_rate"]) and r.dataset_config == "study"
                    assert r.metric_args["ci_low"] == pytest.approx(row["headline_low"])
                    assert r.metric_args["ci_high"] == pytest.approx(row["headline_high"])
                    assert r.metric_args["ci_level"] == 0.95 and r.metric_args["contests"] == row["contests"]
            elif name == "ensemble":
                ens = next(r for r in card.data.eval_results if r.metric_name == "pairwise accuracy (ensemble)")
                assert ens.metric_value == 0.72 and ens.metric_args["ci_low"] == pytest.approx(0.67)
            else:
                final = card.data.eval_results[0]
                assert final.metric_name == "judging accuracy (final)" and final.metric_value == 0.78
                assert final.metric_args["ci_high"] == pytest.approx(0.88)
