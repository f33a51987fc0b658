"""Fixtures shared by the reward tests: toy tables, a tiny base model, two trained seeds."""

from __future__ import annotations

import pytest

from .toy import DIMS, make_toy_tables


@pytest.fixture(scope="session")
def toy_tables():
    return make_toy_tables()


@pytest.fixture(scope="session")
def toy_files(tmp_path_factory, toy_tables):
    targets, vignettes, pairs = toy_tables
    d = tmp_path_factory.mktemp("toy_data")
    targets.to_parquet(d / "targets.parquet", index=False)
    vignettes.to_parquet(d / "vignettes.parquet", index=False)
    pairs.to_parquet(d / "pairs.parquet", index=False)
    return {"targets": d / "targets.parquet", "vignettes": d / "vignettes.parquet", "pairs": d / "pairs.parquet"}


@pytest.fixture(scope="session")
def tiny_base(tmp_path_factory, toy_tables):
    """A tiny random-init Qwen3 causal LM + BPE tokenizer saved as a reward base."""
    from reappraisal.base_models.prepare_io import tokenizer_corpus
    from reappraisal.base_models.tiny import TinyArchitecture, save_tiny_model, train_tokenizer

    targets, vignettes, _ = toy_tables
    tok = train_tokenizer(tokenizer_corpus(targets, vignettes), vocab_size=1000)
    arch = TinyArchitecture(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1, head_dim=16, intermediate_size=64)
    return save_tiny_model(tmp_path_factory.mktemp("base") / "reward", tok, arch, seed=3)


def tiny_train_config(**overrides):
    from reappraisal.reward.train_io import RewardTrainConfig
    from reappraisal.settings import RewardSettings

    base = dict(
        max_length=128,
        learning_rate=3e-3,
        num_train_epochs=2,
        per_device_train_batch_size=8,
        per_device_eval_batch_size=16,
        save_steps=3,
        eval_steps=100,
        logging_steps=100,
        warmup_ratio=0.0,
        weight_decay=0.0,
        lr_scheduler_type="linear",
        cpu_threads=1,
    )
    base.update(overrides)
    return RewardTrainConfig.from_settings(RewardSettings.from_config(base))  # the rest: the schema's defaults


def toy_examples(toy_tables):
    from reappraisal.reward.dataset import examples_for_split, pairs_for_split

    targets, vignettes, pairs = toy_tables
    return (
        examples_for_split(targets, vignettes, "train", DIMS),
        examples_for_split(targets, vignettes, "val", DIMS),
        pairs_for_split(pairs, "val"),
    )


@pytest.fixture(scope="session")
def trained_seeds(tmp_path_factory, tiny_base, toy_tables):
    """Two seeds trained on the toy data (a few optimizer steps each): (dirs, summaries)."""
    from reappraisal.reward.train_io import train_reward_model

    train, val, val_pairs = toy_examples(toy_tables)
    root = tmp_path_factory.mktemp("rm")
    dirs, summaries = [], []
    for seed in (0, 1):
        out = root / f"seed{seed}"
        summaries.append(
            train_reward_model(
                base=str(tiny_base), train=train, val=val, val_pairs=val_pairs, seed=seed, global_seed=100,
                out_dir=out, cfg=tiny_train_config(num_train_epochs=8), primary_dimension="effectiveness",
            )
        )
        dirs.append(out)
    return dirs, summaries
