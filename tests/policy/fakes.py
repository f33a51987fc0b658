"""Test doubles and data for the policy tests: small synthetic tables, a tiny policy builder, fake judges.

The fake judges are deterministic functions of the answer text; they stand in
for the real scorers where the property under test is the group logic (the
real scorers are tested by their owners).
"""

from __future__ import annotations

import hashlib
import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from reappraisal.policy.prompts import SYSTEM_PROMPT, USER_TEMPLATE

# One intra-op thread: on a shared 2-core machine two OpenMP threads that
# compete with other processes run tiny models ~10x slower, not faster.
torch.set_num_threads(1)

SCENARIOS = {
    "v01": ("Your friend did not come to your birthday dinner and did not answer your messages.", "sadness"),
    "v02": ("Your coworker presented your plan as her own work in the team meeting.", "anger"),
    "v03": ("Your partner has not replied to your texts all afternoon after an argument.", "fear"),
    "v04": ("Your sister told everyone else about her move before she told you.", "sadness"),
    "ood01": ("Your neighbour left an angry note about noise on your door.", "anger"),
}
OPENERS = ["Maybe", "Perhaps", "It could be that", "Possibly", "You might consider that"]
MIDDLES = [
    "they were overwhelmed and forgot",
    "something urgent came up for them",
    "they did not mean to hurt you",
    "they value you more than this moment shows",
    "they were nervous about telling you",
]
ENDINGS = ["", " You can ask them calmly tomorrow.", " This does not define your friendship."]


def _reappraisals(vid: str) -> list[str]:
    out = []
    for i, (o, m, e) in enumerate(itertools.product(OPENERS, MIDDLES, ENDINGS)):
        if (i + len(vid)) % 3 == 0:
            out.append(f"{o} {m}.{e}")
    return out


def make_vignettes() -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"vignette_id": vid, "text": text, "emotion": emo, "pool": "ood" if vid.startswith("ood") else "train"}
            for vid, (text, emo) in SCENARIOS.items()
        ]
    )


def make_targets() -> pd.DataFrame:
    rows = []
    rng = np.random.default_rng(0)
    for vid in SCENARIOS:
        for j, text in enumerate(_reappraisals(vid)):
            rows.append(
                {
                    "reappraisal_id": f"{vid}_r{j:03d}",
                    "vignette_id": vid,
                    "author_type": "human",
                    "study": "1",
                    "text": text,
                    "split": "val" if j % 5 == 4 else "train",
                    "z_effectiveness": float(rng.normal()),
                    "n_effectiveness": 3,
                    "n_ratings": 3,
                }
            )
        rows.append(
            {
                "reappraisal_id": f"{vid}_gpt4",
                "vignette_id": vid,
                "author_type": "gpt4",
                "study": "1",
                "text": "HELDOUT gpt4 answer that must never be used.",
                "split": "heldout",
                "z_effectiveness": 0.0,
                "n_effectiveness": 3,
                "n_ratings": 3,
            }
        )
    return pd.DataFrame(rows)


def _h(text: str, salt: str) -> float:
    return int(hashlib.sha256((salt + text).encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


class FakeRM:
    """Deterministic ensemble stand-in: a hash of (scenario, answer) plus a length term."""

    def __init__(self):
        self.calls = []

    def score(self, scenarios, reappraisals):
        self.calls.append(len(reappraisals))
        return np.array([_h(s + "|" + r, "rm") + 0.01 * len(r.split()) for s, r in zip(scenarios, reappraisals)])


class FakeGRM:
    """Deterministic GRM stand-in: a win rate in {0, 0.5, 1} from a hash of the answer."""

    def __init__(self):
        self.calls = []

    def score(self, vignette_ids, scenarios, candidates):
        self.calls.append(len(candidates))
        return np.array([round(2 * _h(v + "|" + c, "grm")) / 2 for v, c in zip(vignette_ids, candidates)])


def build_tiny_policy(out_dir: Path) -> Path:
    """A random-init tiny Qwen3 policy with a tokenizer trained on the synthetic corpus and the prompts."""
    from reappraisal.base_models.tiny import save_tiny_model, train_tokenizer

    corpus = [SYSTEM_PROMPT, USER_TEMPLATE] + [t for t, _ in SCENARIOS.values()] + list(make_targets()["text"])
    corpus += ["They feel sadness anger fear upset. I can offer a kinder reading of what happened."] * 5
    tok = train_tokenizer(corpus * 3, vocab_size=600)
    return save_tiny_model(out_dir, tok)
