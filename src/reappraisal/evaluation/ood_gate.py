"""The out-of-distribution pool's disjointness gate. Pure.

OOD scenarios exist to test the policy on situations nothing in training
resembles. Before they are used, each must share no word n-gram (the
leakage check's tokenisation and text pools, :mod:`reappraisal.data.leakage`) with:

- any training scenario,
- any training reappraisal (train and validation splits),
- any held-out answer written for a training scenario (the GPT-4 references
  and the opponents' answers), which the policy's evaluation also uses;

and no two OOD scenarios may share one (a duplicate, or a near-copy, would
count the same situation twice). A scenario with fewer words than ``n``
holds no n-gram at all, so the gate cannot vouch for it: such scenarios are
listed, and fail the gate unless ``allow_short`` is set.
"""

from __future__ import annotations

import pandas as pd

from ..data.leakage import TextPools, find_overlaps, tokens


def ood_disjointness(vignettes: pd.DataFrame, targets: pd.DataFrame, *, n: int, allow_short: bool = False) -> dict:
    """The gate's report: counts, every offending pair, short scenarios, and ``passed``."""
    texts = TextPools.from_tables(targets, vignettes)
    ood_texts = texts.ood_scenarios
    sources = {
        "training scenario": texts.training_scenarios,
        "training reappraisal": texts.training,
        "held-out answer on a training scenario": texts.heldout_on_training_scenarios,
    }
    overlaps = []
    for kind, others in sources.items():
        for hit in find_overlaps(others, ood_texts, n=n, max_shared=0):
            overlaps.append({"ood_scenario": hit["heldout_id"], "other": hit["train_id"], "other_kind": kind,
                             "shared": hit["shared"], "example": hit["example"]})
    ids = sorted(ood_texts)
    for i, a in enumerate(ids):
        later = {b: ood_texts[b] for b in ids[i + 1:]}
        for hit in find_overlaps({a: ood_texts[a]}, later, n=n, max_shared=0):
            overlaps.append({"ood_scenario": hit["heldout_id"], "other": a, "other_kind": "another OOD scenario",
                             "shared": hit["shared"], "example": hit["example"]})
    short = sorted(v for v, t in ood_texts.items() if len(tokens(t)) < n)
    return {
        "ngram": n,
        "ood_scenarios": len(ood_texts),
        "compared_with": {kind: len(others) for kind, others in sources.items()},
        "overlaps": overlaps,
        "too_short": short,
        "allow_short": bool(allow_short),
        "passed": not overlaps and (allow_short or not short),
    }
