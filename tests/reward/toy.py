"""Toy reward-model tables (targets, vignettes, pairs) following the data contract.

The toy set has 3 training scenarios and one out-of-distribution one; a
reappraisal's quality is planted in its text (an alternative interpretation
with "Perhaps"/"Maybe" and a second-person address raise it, filler sentences
lower it); its mean z-ratings are that quality plus noise.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

DIMS = ["effectiveness", "empathy", "novelty", "specificity"]
#: The data section of the toy commands' ``--params`` (the ingestion is not theirs: no sources).
DATA = {"source": "bundled", "dimensions": DIMS, "primary_dimension": "effectiveness",
        "ingest": {"vignettes": [], "reappraisals": [], "ratings": []}}

SCENARIOS = {
    "t1": "My friend Jordan missed my birthday dinner and did not answer my messages.",
    "t2": "My coworker Priya presented my project plan as her own in the meeting.",
    "t3": "My partner Alex has not replied to my texts since our argument last night.",
}
OPENERS = ["Perhaps they had a hard day", "They did it on purpose", "Maybe it was a mix-up", "It is what it is"]
ENDINGS = ["and you can ask them about it.", "and nothing can be done.", "so you will be fine.", "so forget it."]
FILLER = " It happens. People are busy. Life goes on."


def _quality(opener: str, ending: str, filler: bool) -> float:
    q = 1.0 * (opener.startswith(("Perhaps", "Maybe"))) + 0.8 * ("you" in ending) - 0.7 * filler
    return q


def make_toy_tables(n_per_scenario: int = 24, seed: int = 0, val_fraction: float = 0.25, scenarios=SCENARIOS):
    """``scenarios``: vignette id -> text (default: the 3 of :data:`SCENARIOS`)."""
    rng = np.random.default_rng(seed)
    vignettes = pd.DataFrame(
        {
            "vignette_id": list(scenarios),
            "text": list(scenarios.values()),
            "emotion": [("sadness", "anger", "fear")[i % 3] for i in range(len(scenarios))],
            "pool": ["train"] * len(scenarios),
        }
    )
    vignettes = pd.concat(
        [vignettes, pd.DataFrame([{"vignette_id": "o1", "text": "An out-of-distribution scenario.", "emotion": "fear", "pool": "ood"}])],
        ignore_index=True,
    )
    rows = []
    combos = list(itertools.product(OPENERS, ENDINGS, [False, True]))
    for vid in scenarios:
        picks = rng.permutation(len(combos))[:n_per_scenario]
        for k, c in enumerate(picks):
            opener, ending, filler = combos[c]
            text = f"{opener} {ending}" + (FILLER if filler else "")
            q = _quality(opener, ending, filler)
            rid = f"{vid}_r{k:02d}"
            row = {"reappraisal_id": rid, "vignette_id": vid, "author_type": "human", "study": "1", "text": text}
            for d in DIMS:
                row[f"z_{d}"] = q + rng.normal(0, 0.3) - 0.5
                row[f"n_{d}"] = 8
            row["n_ratings"] = 32
            rows.append(row)
    targets = pd.DataFrame(rows)
    targets["split"] = np.where(rng.random(len(targets)) < val_fraction, "val", "train")
    # a held-out GPT-4 answer that must never be trained on
    gpt = {"reappraisal_id": "g1", "vignette_id": "t1", "author_type": "gpt4", "study": "1", "text": "Held out answer.", "split": "heldout", "n_ratings": 0}
    gpt.update({f"z_{d}": np.nan for d in DIMS})
    gpt.update({f"n_{d}": 0 for d in DIMS})
    targets = pd.concat([targets, pd.DataFrame([gpt])], ignore_index=True)
    return targets, vignettes, make_pairs(targets)


def make_pairs(targets: pd.DataFrame, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    out = []
    human = targets[targets["author_type"] == "human"]
    for (vid, split), g in human.groupby(["vignette_id", "split"]):
        for (_, a), (_, b) in itertools.combinations(g.iterrows(), 2):
            if a["z_effectiveness"] == b["z_effectiveness"]:
                continue
            if rng.random() < 0.5:
                a, b = b, a
            out.append(
                {
                    "vignette_id": vid,
                    "split": split,
                    "id_a": a["reappraisal_id"],
                    "id_b": b["reappraisal_id"],
                    "text_a": a["text"],
                    "text_b": b["text"],
                    "z_a": a["z_effectiveness"],
                    "z_b": b["z_effectiveness"],
                }
            )
    pairs = pd.DataFrame(out)
    pairs.insert(0, "pair_id", [f"p{i:05d}" for i in range(len(pairs))])
    pairs["margin"] = (pairs["z_a"] - pairs["z_b"]).abs()
    pairs["preferred"] = np.where(pairs["z_a"] > pairs["z_b"], "A", "B")
    return pairs
