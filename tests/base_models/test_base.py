"""prepare_base_models: tiny models built like real ones (demo), hub ids / paths verified (paper)."""

from __future__ import annotations

import json

import huggingface_hub.constants
import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, AutoModelForSequenceClassification, AutoTokenizer

from reappraisal.errors import ConfigError, PipelineInputError
from reappraisal.base_models.manifest import check_model_location, read_manifest
from reappraisal.base_models.prepare_io import ROLES, prepare_base_models, tokenizer_corpus
from reappraisal.settings import BaseModelsSettings
from reappraisal.base_models.tiny import TinyArchitecture, save_tiny_model, train_tokenizer

from tests.reward.toy import make_toy_tables

SMALL = {"vocab_size": 600, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2,
         "num_key_value_heads": 1, "head_dim": 16, "intermediate_size": 64}


def _tiny_cfg(root):
    tiny = dict(SMALL, role_overrides={"reward": {"hidden_size": 48, "head_dim": 24}})
    return {"source": "tiny", **{f"{r}_base": str(root / r) for r in ROLES}, "tiny": tiny}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("base")
    targets, vignettes, _ = make_toy_tables()
    manifest = prepare_base_models(BaseModelsSettings.from_config(_tiny_cfg(root)), {r: root / r for r in ROLES}, targets=targets, vignettes=vignettes, global_seed=10)
    return root, manifest


def test_tiny_roles_load_like_hub_models(built):
    root, manifest = built
    assert set(manifest["roles"]) == set(ROLES) and manifest["source"] == "tiny"
    for role in ROLES:
        entry = manifest["roles"][role]
        model = AutoModelForCausalLM.from_pretrained(entry["location"])
        assert type(model).__name__ == "Qwen3ForCausalLM" == entry["architectures"][0]
        assert entry["model_type"] == "qwen3"
        assert entry["n_parameters"] == sum(p.numel() for p in model.parameters())
    assert AutoModelForCausalLM.from_pretrained(root / "reward").config.hidden_size == 48  # role override
    assert AutoModelForCausalLM.from_pretrained(root / "grm").config.hidden_size == 32
    # the reward stage adds a regression head exactly as on Qwen/Qwen3-1.7B
    rm = AutoModelForSequenceClassification.from_pretrained(root / "reward", num_labels=4, problem_type="regression")
    assert rm.score.out_features == 4


def test_roles_have_distinct_seeds_and_weights(built):
    root, manifest = built
    seeds = [manifest["roles"][r]["seed"] for r in ROLES]
    assert len(set(seeds)) == len(ROLES)
    w = {r: load_file(str(root / r / "model.safetensors")) for r in ROLES}
    key = next(k for k in w["grm"] if "layers.0" in k and "weight" in k and "norm" not in k)
    assert not torch.equal(w["grm"][key], w["policy"][key])
    assert not torch.equal(w["grm"][key], w["judge"][key])


def test_chat_template_opens_a_thinking_block(built):
    root, _ = built
    tok = AutoTokenizer.from_pretrained(root / "policy")
    msgs = [{"role": "user", "content": "Help me reappraise this."}]
    text = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    assert text.endswith("<|im_start|>assistant\n<think>\n")
    closed = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True, enable_thinking=False)
    assert closed.endswith("<think>\n\n</think>\n\n")
    for special in ("<think>", "</think>", "<|im_end|>"):
        assert len(tok(special, add_special_tokens=False)["input_ids"]) == 1
    assert tok.pad_token == "<|endoftext|>" and tok.eos_token == "<|im_end|>"


def test_tokenizer_corpus_leaves_out_held_out_answers_and_ood_scenarios():
    targets, vignettes, _ = make_toy_tables()
    texts = tokenizer_corpus(targets, vignettes)
    assert "Held out answer." not in texts  # GPT-4 (held-out split)
    assert "An out-of-distribution scenario." not in texts
    assert set(targets.loc[targets["split"].isin(["train", "val"]), "text"]) <= set(texts)
    assert any(t.startswith("Rate how effective") for t in texts)


def test_manifest_round_trip_and_errors(tmp_path, built):
    root, manifest = built
    (tmp_path / "M.json").write_text(json.dumps(manifest))
    assert read_manifest(tmp_path / "M.json")["roles"]["reward"]["location"] == str(root / "reward")
    with pytest.raises(PipelineInputError, match="run prepare_base_models"):
        read_manifest(tmp_path / "missing.json")


def test_tiny_source_requires_the_configured_paths_to_be_its_outputs(tmp_path):
    targets, vignettes, _ = make_toy_tables()
    cfg = _tiny_cfg(tmp_path)
    cfg["reward_base"] = "Qwen/Qwen3-1.7B"
    with pytest.raises(ConfigError, match="base_models.reward_base"):
        prepare_base_models(BaseModelsSettings.from_config(cfg), {r: tmp_path / r for r in ROLES}, targets=targets, vignettes=vignettes)
    cfg = _tiny_cfg(tmp_path)
    cfg["tiny"]["seeds"] = {"reward": 1, "grm": 1, "policy": 3, "judge": 4}
    with pytest.raises(ConfigError, match="distinct seeds"):
        prepare_base_models(BaseModelsSettings.from_config(cfg), {r: tmp_path / r for r in ROLES}, targets=targets, vignettes=vignettes)


@pytest.fixture(scope="module")
def local_checkpoint(tmp_path_factory):
    """A local directory standing in for a downloaded Qwen3 checkpoint."""
    targets, vignettes, _ = make_toy_tables()
    tok = train_tokenizer(tokenizer_corpus(targets, vignettes), vocab_size=500)
    arch = TinyArchitecture(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1, head_dim=16, intermediate_size=64)
    return save_tiny_model(tmp_path_factory.mktemp("ckpt") / "Qwen3-local", tok, arch, seed=0)


def _paper_cfg(location, judge_type="qwen3"):
    return {
        "source": "pretrained",
        **{f"{r}_base": str(location) for r in ROLES},
        "expected_model_type": {"reward": "qwen3", "grm": "qwen3", "policy": "qwen3", "judge": judge_type},
    }


def test_paper_local_path_is_verified_and_recorded(tmp_path, local_checkpoint):
    out = {r: tmp_path / r for r in ROLES}
    manifest = prepare_base_models(BaseModelsSettings.from_config(_paper_cfg(local_checkpoint)), out)
    entry = manifest["roles"]["reward"]
    assert entry["source"] == "pretrained" and entry["hub_id"] is None
    assert entry["model_type"] == "qwen3" and entry["architectures"] == ["Qwen3ForCausalLM"]
    assert entry["n_parameters"] == sum(p.numel() for p in AutoModelForCausalLM.from_pretrained(local_checkpoint).parameters())
    assert json.loads((tmp_path / "reward" / "SOURCE.json").read_text())["location"] == str(local_checkpoint)


def test_paper_wrong_architecture_fails_before_training(tmp_path, local_checkpoint):
    with pytest.raises(PipelineInputError, match="expected 'llama'"):
        prepare_base_models(BaseModelsSettings.from_config(_paper_cfg(local_checkpoint, judge_type="llama")), {r: tmp_path / r for r in ROLES})


def test_paper_missing_path_and_unreachable_hub_id(tmp_path, monkeypatch, local_checkpoint):
    cfg = _paper_cfg(local_checkpoint)
    cfg["policy_base"] = str(tmp_path / "no" / "such" / "model")
    with pytest.raises(PipelineInputError, match="does not exist"):
        prepare_base_models(BaseModelsSettings.from_config(cfg), {r: tmp_path / r for r in ROLES})
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    cfg = _paper_cfg(local_checkpoint)
    cfg["judge_base"] = "no-such-org-zz/no-such-model"
    with pytest.raises(PipelineInputError, match="local Hugging Face cache"):
        prepare_base_models(BaseModelsSettings.from_config(cfg), {r: tmp_path / r for r in ROLES})


def test_check_model_location(tmp_path, local_checkpoint):
    assert check_model_location(local_checkpoint, where="x") == str(local_checkpoint)
    assert check_model_location("Qwen/Qwen3-1.7B", where="x") == "Qwen/Qwen3-1.7B"
    (tmp_path / "empty").mkdir()
    with pytest.raises(PipelineInputError, match="no config.json"):
        check_model_location(tmp_path / "empty", where="x")
    with pytest.raises(PipelineInputError, match="does not exist"):
        check_model_location("results/base_models/nope", where="x")


def test_cli_writes_manifest(tmp_path):
    from reappraisal.cli import main

    targets, vignettes, _ = make_toy_tables()
    targets.to_parquet(tmp_path / "t.parquet")
    vignettes.to_parquet(tmp_path / "v.parquet")
    root = tmp_path / "base"
    params = {"base_models": _tiny_cfg(root), "seed": 1, "preset": "demo"}
    rc = main(["prepare-base-models", "--out-root", str(root), "--manifest", str(root / "MANIFEST.json"),
               "--targets", str(tmp_path / "t.parquet"), "--vignettes", str(tmp_path / "v.parquet"),
               "--params", json.dumps(params)])
    assert rc == 0 and read_manifest(root / "MANIFEST.json")["preset"] == "demo"
    assert (root / "reward" / "config.json").exists()


def test_cli_bad_input_exits_2(tmp_path, capsys):
    from reappraisal.cli import main

    params = {"base_models": _tiny_cfg(tmp_path / "base"), "seed": 1, "preset": "demo"}
    rc = main(["prepare-base-models", "--out-root", str(tmp_path / "base"), "--manifest", str(tmp_path / "M.json"),
               "--targets", str(tmp_path / "missing.parquet"), "--vignettes", str(tmp_path / "missing.parquet"),
               "--params", json.dumps(params)])
    assert rc == 2 and "not found" in capsys.readouterr().err
