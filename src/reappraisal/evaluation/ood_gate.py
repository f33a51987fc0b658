"""The out-of-distribution pool's disjointness gate. Pure.

OOD scenarios exist to test the policy on situations nothing in training
resembles. Before they are used, each must share no word n-gram (the
leakage check's tokenisation, :func:`reappraisal.data.leakage.ngrams`) with:

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

from typing import Mapping

import pandas as pd

from ..data.leakage import TOKEN, find_overlaps


def ood_disjointness(vignettes: pd.DataFrame, targets: pd.DataFrame, *, n: int, allow_short: bool = False) -> dict:
    """The gate's report: counts, every offending pair, short scenarios, and ``passed``."""
    pools = vignettes["pool"].astype(str)
    train_scen = vignettes[pools == "train"]
    ood = vignettes[pools == "ood"]
    ood_texts: Mapping[str, str] = dict(zip(ood["vignette_id"].astype(str), ood["text"].astype(str)))
    train_ids = set(train_scen["vignette_id"].astype(str))
    training = targets[targets["split"].isin(["train", "val"])]
    heldout = targets[(targets["split"] == "heldout") & targets["vignette_id"].astype(str).isin(train_ids)]
    sources = {
        "training scenario": dict(zip(train_scen["vignette_id"].astype(str), train_scen["text"].astype(str))),
        "training reappraisal": dict(zip(training["reappraisal_id"].astype(str), training["text"].astype(str))),
        "held-out answer on a training scenario": dict(zip(heldout["reappraisal_id"].astype(str),
                                                           heldout["text"].astype(str))),
    }
    overlaps = []
    for kind, texts in sources.items():
        for hit in find_overlaps(texts, ood_texts, n=n, max_shared=0):
            overlaps.append({"ood_scenario": hit["heldout_id"], "other": hit["train_id"], "other_kind": kind,
                             "shared": hit["shared"], "example": hit["example"]})
    ids = sorted(ood_texts)
    for i, a in enumerate(ids):
        later = {b: ood_texts[b] for b in ids[i + 1:]}
        for hit in find_overlaps({a: ood_texts[a]}, later, n=n, max_shared=0):
            overlaps.append({"ood_scenario": hit["heldout_id"], "other": a, "other_kind": "another OOD scenario",
                             "shared": hit["shared"], "example": hit["example"]})
    short = sorted(v for v, t in ood_texts.items() if len(TOKEN.findall(t.lower())) < n)
    return {
        "ngram": n,
        "ood_scenarios": len(ood_texts),
        "compared_with": {kind: len(texts) for kind, texts in sources.items()},
        "overlaps": overlaps,
        "too_short": short,
        "allow_short": bool(allow_short),
        "passed": not overlaps and (allow_short or not short),
    }
