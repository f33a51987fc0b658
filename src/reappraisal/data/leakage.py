"""n-gram leakage check between training text and held-out evaluation text. Pure.

Texts are lower-cased and split into word tokens (``[a-z0-9']+``); an n-gram
is n consecutive tokens (default 8). A training text *leaks* a held-out text
when they share more than ``max_shared`` distinct n-grams. Any leak fails the
run: a reward model or policy that has seen an evaluation answer makes the
evaluation meaningless.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Mapping

TOKEN = re.compile(r"[a-z0-9']+")


def ngrams(text: str, n: int) -> set[tuple[str, ...]]:
    tokens = TOKEN.findall(text.lower())
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


def find_overlaps(
    training: Mapping[str, str], heldout: Mapping[str, str], *, n: int = 8, max_shared: int = 0
) -> list[dict]:
    """Pairs (training id, held-out id) sharing more than ``max_shared`` n-grams.

    Returns dicts with ``train_id``, ``heldout_id``, ``shared`` (count) and
    ``example`` (one shared n-gram), sorted by descending count.
    """
    index: dict[tuple[str, ...], set[str]] = defaultdict(set)
    for hid, text in heldout.items():
        for g in ngrams(text, n):
            index[g].add(hid)
    hits = []
    for tid, text in training.items():
        shared: dict[str, list[tuple[str, ...]]] = defaultdict(list)
        for g in ngrams(text, n):
            for hid in index.get(g, ()):
                shared[hid].append(g)
        for hid, grams in shared.items():
            if len(grams) > max_shared:
                hits.append({"train_id": tid, "heldout_id": hid, "shared": len(grams), "example": " ".join(min(grams))})
    return sorted(hits, key=lambda h: (-h["shared"], h["train_id"], h["heldout_id"]))
