"""Fixtures for the policy tests (data and fakes live in fakes.py)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from reappraisal.base_models.prompts import GRM_SYSTEM_PROMPT, GRM_USER_TEMPLATE
from reappraisal.policy.committee import FormatGate
from reappraisal.policy.prompts import SYSTEM_PROMPT, USER_TEMPLATE

from tests.shared_build import build_once

from .fakes import build_tiny_policy, make_targets, make_vignettes


@pytest.fixture(scope="session")
def vignettes() -> pd.DataFrame:
    return make_vignettes()


@pytest.fixture(scope="session")
def targets() -> pd.DataFrame:
    return make_targets()


@pytest.fixture(scope="session")
def tiny_policy(tmp_path_factory) -> Path:
    return build_tiny_policy(tmp_path_factory.mktemp("policy_base") / "policy")


@pytest.fixture(scope="session")
def warm_policy(request, tmp_path_factory, worker_id) -> Path:
    """The tiny policy after a short warm-start SFT (well-formed thinking completions); one for the suite's
    workers (tests/shared_build.py). Tests must not change it."""
    def build(folder: Path) -> Path:
        from reappraisal.policy.warm_start_io import run_warm_start, warm_start_examples
        from reappraisal.settings import WarmStartSettings

        targets, vignettes = request.getfixturevalue("targets"), request.getfixturevalue("vignettes")
        examples = warm_start_examples(targets, vignettes, seed=0, gate=FormatGate(2, -3.0))
        settings = WarmStartSettings.from_config({"max_steps": 150, "learning_rate": 3e-3,
                                                  "per_device_train_batch_size": 16, "max_length": 256,
                                                  "save_steps": 150})
        out = folder / "policy_warm"
        run_warm_start(request.getfixturevalue("tiny_policy"), examples, out, warm_start=settings, seed=0)
        return out

    return build_once(tmp_path_factory, worker_id, "policy_warm", build)


@pytest.fixture(scope="session")
def real_judges(tmp_path_factory) -> dict:
    """A real two-seed reward-model ensemble and a real (stage-1) GRM, trained for seconds on the
    reward and GRM tests' synthetic tables: ``{"rm_dirs": [...], "grm_dir": path, "reward": ..., "grm": ...}``."""
    from reappraisal.grm.train_io import train_grm
    from reappraisal.base_models.prepare_io import tokenizer_corpus
    from reappraisal.base_models.tiny import TinyArchitecture, save_tiny_model, train_tokenizer
    from reappraisal.reward.dataset import examples_for_split, pairs_for_split
    from reappraisal.reward.train_io import RewardTrainConfig, train_reward_model
    from reappraisal.settings import GrmSettings, RewardSettings
    from tests.grm.conftest import DATA, make_tables, tiny_cfg
    from tests.reward.toy import DIMS, make_toy_tables

    root = tmp_path_factory.mktemp("judges")
    targets, vigs, pairs = make_toy_tables()
    tok = train_tokenizer(tokenizer_corpus(targets, vigs), vocab_size=1000)
    arch = TinyArchitecture(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                            head_dim=16, intermediate_size=64)
    rm_base = save_tiny_model(root / "rm_base", tok, arch, seed=3)
    rm_section = {"max_length": 128, "learning_rate": 3e-3, "num_train_epochs": 1, "per_device_train_batch_size": 8,
                  "save_steps": 100, "eval_steps": 100, "logging_steps": 100, "cpu_threads": 1,
                  "ensemble": {"penalty": "std", "lam": 0.5, "batch_size": 32}}
    train, val = (examples_for_split(targets, vigs, s, DIMS) for s in ("train", "val"))
    rm_dirs = []
    for seed in (0, 1):
        out = root / "rm" / f"seed{seed}"
        train_reward_model(base=str(rm_base), train=train, val=val, val_pairs=pairs_for_split(pairs, "val"), seed=seed,
                           global_seed=0, out_dir=out, cfg=RewardTrainConfig.from_settings(RewardSettings.from_config(rm_section)),
                           primary_dimension="effectiveness")
        rm_dirs.append(out)

    t = make_tables()
    corpus = list(t["targets"]["text"]) + list(t["vignettes"]["text"]) + [SYSTEM_PROMPT, USER_TEMPLATE] + [
        GRM_SYSTEM_PROMPT, GRM_USER_TEMPLATE, "ANSWER: A", "ANSWER: B"] + list(make_targets()["text"])
    grm_base = save_tiny_model(root / "grm_base", train_tokenizer(corpus, vocab_size=600), seed=3)
    grm_cfg = tiny_cfg(sft={"num_train_epochs": 4}, grpo={"max_steps": 0})
    train_grm(str(grm_base), t["pairs"], t["targets"], t["vignettes"], grm=GrmSettings.from_config(grm_cfg), data=DATA, seed=7,
              out_dir=root / "grm", sft_out_dir=root / "grm_sft")
    return {"rm_dirs": rm_dirs, "grm_dir": root / "grm", "reward": rm_section, "grm": grm_cfg}
