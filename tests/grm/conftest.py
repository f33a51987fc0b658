"""Fixtures for the GRM tests: small synthetic tables shaped like the data contract,
a tiny random-init Qwen3 judge, and one tiny trained GRM shared by the slow tests.

Synthetic quality: a reappraisal offering an alternative interpretation
("Maybe ...") is good, a dismissive one ("Forget it ...") bad; z-scores follow
with a fixed jitter, so pairs across the two kinds are clearly separated.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from reappraisal.grm.prompts import SYSTEM_PROMPT, USER_TEMPLATE
from reappraisal.settings import DataSettings, GrmSettings

DIMENSIONS = ["effectiveness", "empathy", "novelty", "specificity"]
#: The data section of the GRM commands' ``--params`` (the ingestion is not theirs: no sources), and its settings.
DATA_CFG = {"source": "bundled", "dimensions": DIMENSIONS, "primary_dimension": "effectiveness",
            "ingest": {"vignettes": [], "reappraisals": [], "ratings": []}}
DATA = DataSettings.from_config(DATA_CFG)

SCENARIOS = {
    "v1": "Your friend did not come to your birthday dinner and did not answer your messages.",
    "v2": "Your coworker presented your plan as her own work in the team meeting.",
    "v3": "Your partner has not replied to your texts all afternoon after an argument.",
}
GOOD = ["Maybe they were overwhelmed and forgot.", "Perhaps something urgent came up for them.",
        "It could be that they did not mean to hurt you.", "Maybe they were nervous about telling you.",
        "Perhaps they value you more than this moment shows.", "It could be that they had a hard week."]
BAD = ["Forget it and move on.", "Nothing can be done about it.", "Just ignore them from now on.",
       "It does not matter at all.", "Stop thinking about it.", "People are like that."]


def make_tables(seed: int = 0) -> dict[str, pd.DataFrame]:
    """vignettes, targets and pairs (train: 8 per scenario, val: 4 per scenario)."""
    rng = np.random.default_rng(seed)
    vignettes = pd.DataFrame([{"vignette_id": v, "text": t, "emotion": "sadness", "pool": "train"}
                              for v, t in SCENARIOS.items()])
    rows = []
    for v in SCENARIOS:
        texts = [(t, 1.0) for t in GOOD] + [(t, -1.0) for t in BAD]
        order = rng.permutation(len(texts))
        for k, idx in enumerate(order):
            text, q = texts[idx]
            row = {"reappraisal_id": f"{v}_r{k:02d}", "vignette_id": v, "author_type": "human", "study": "1",
                   "text": text, "split": "train" if k < 8 else "val", "n_ratings": 12}
            for d, load in zip(DIMENSIONS, (1.0, 0.8, 0.3, 0.6)):
                row[f"z_{d}"] = float(load * q + rng.normal(0, 0.15))
                row[f"n_{d}"] = 3
            rows.append(row)
    targets = pd.DataFrame(rows)
    pairs = []
    for (v, split), group in targets.groupby(["vignette_id", "split"], sort=True):
        for i, j in itertools.combinations(range(len(group)), 2):
            a, b = group.iloc[i], group.iloc[j]
            if rng.random() < 0.5:
                a, b = b, a
            za, zb = a["z_effectiveness"], b["z_effectiveness"]
            pairs.append({
                "pair_id": f"{v}_{split}_{len(pairs):04d}", "vignette_id": v, "split": split,
                "id_a": a["reappraisal_id"], "id_b": b["reappraisal_id"], "text_a": a["text"], "text_b": b["text"],
                "z_a": za, "z_b": zb, "margin": abs(za - zb), "preferred": "A" if za > zb else "B",
            })
    return {"vignettes": vignettes, "targets": targets, "pairs": pd.DataFrame(pairs)}


@pytest.fixture(scope="session")
def tables() -> dict[str, pd.DataFrame]:
    return make_tables()


@pytest.fixture(scope="session")
def tiny_base(tmp_path_factory, tables) -> Path:
    """A random-init tiny Qwen3 causal LM + BPE tokenizer (with the chat template) saved to disk."""
    from reappraisal.base_models.tiny import save_tiny_model, train_tokenizer

    corpus = list(tables["targets"]["text"]) + list(tables["vignettes"]["text"]) + [
        SYSTEM_PROMPT, USER_TEMPLATE, "ANSWER: A", "ANSWER: B", "Effectiveness A; empathy B; novelty even.",
    ]
    out = tmp_path_factory.mktemp("grm_base") / "base"
    save_tiny_model(out, train_tokenizer(corpus, vocab_size=600), seed=3)
    return out


def tiny_cfg(**overrides) -> dict:
    """A GRM config small enough for a CPU test (validated shape of config.yaml's grm section)."""
    cfg = {
        "delta": 1.0,
        "traces_file": None,
        "rationale_tie": 0.1,
        "scorer_mode": "generate",
        "engine": "hf",
        "eval_logprob": True,
        "sft": {"num_train_epochs": 12, "learning_rate": 5e-3, "per_device_train_batch_size": 8, "max_length": 256, "max_pairs": 24,
                "logging_steps": 5},
        "grpo": {"max_steps": 2, "num_generations": 2, "prompts_per_step": 2, "beta": 0.04, "learning_rate": 1e-4,
                 "max_completion_length": 24, "temperature": 0.7},
        "max_new_tokens": 24,
        "batch_size": 32,
        "eval_max_pairs": None,
    }
    for key, value in overrides.items():
        if isinstance(value, dict):
            cfg[key] = {**cfg[key], **value}
        else:
            cfg[key] = value
    return cfg


def grm_settings(**overrides) -> GrmSettings:
    """:func:`tiny_cfg` as the settings a command builds from it."""
    return GrmSettings.from_config(tiny_cfg(**overrides))


@pytest.fixture(scope="session")
def trained_grm(tmp_path_factory, tables, tiny_base) -> dict:
    """One tiny two-stage training run (SFT, then 2 GRPO steps) shared by the slow tests."""
    from reappraisal.grm.train_io import train_grm

    root = tmp_path_factory.mktemp("grm_trained")
    cfg = tiny_cfg()
    summary = train_grm(
        str(tiny_base), tables["pairs"], tables["targets"], tables["vignettes"], grm=GrmSettings.from_config(cfg), data=DATA,
        seed=7, out_dir=root / "grm", sft_out_dir=root / "grm_sft",
    )
    return {"root": root, "final": root / "grm", "sft": root / "grm_sft", "summary": summary, "cfg": cfg}
