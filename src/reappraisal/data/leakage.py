"""n-gram overlap between texts, and which texts training, evaluation and the OOD pool hold. Pure.

Texts are lower-cased and split into word tokens (``[a-z0-9']+``); an n-gram
is n consecutive tokens (default 8). A training text *leaks* a held-out text
when they share more than ``max_shared`` distinct n-grams. Any leak fails the
run: a reward model or policy that has seen an evaluation answer makes the
evaluation meaningless.

Two texts are *identical* when their :func:`normalized_text` (Unicode NFKC,
casefolded, whitespace collapsed) is equal. The split keeps identical texts on
one side (:mod:`reappraisal.data.split`); :func:`identical_texts` finds those
that are not (a validation text that is a copy of a training text, a short
held-out answer copied below the n-gram length). Validation is compared with
training by identity, not by n-grams: distinct human answers share phrases.

:class:`TextPools` says once which rows are training text, held-out answers
and training or OOD scenarios; the leakage check (:mod:`.leakage_io`) and the
OOD disjointness gate (:mod:`reappraisal.evaluation.ood_gate`) both compare
those pools with :func:`find_overlaps`.
"""

from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from dataclasses import dataclass
from typing import Mapping

import pandas as pd

TOKEN = re.compile(r"[a-z0-9']+")
#: The splits a reward model or policy trains on.
TRAINING_SPLITS = ("train", "val")


def normalized_text(text: str) -> str:
    """The text two copies share: Unicode NFKC, casefolded, runs of whitespace one space, no outer whitespace."""
    return " ".join(unicodedata.normalize("NFKC", str(text)).casefold().split())


def identical_texts(first: Mapping[str, str], second: Mapping[str, str]) -> list[dict]:
    """Pairs (id in ``first``, id in ``second``) whose texts are identical after :func:`normalized_text`.

    Returns dicts with ``first_id``, ``second_id`` and ``text`` (the first's), sorted by ids.
    """
    index: dict[str, list[str]] = defaultdict(list)
    for sid, text in second.items():
        index[normalized_text(text)].append(sid)
    hits = [
        {"first_id": fid, "second_id": sid, "text": text}
        for fid, text in first.items()
        for sid in index.get(normalized_text(text), ())
    ]
    return sorted(hits, key=lambda h: (h["first_id"], h["second_id"]))


def tokens(text: str) -> list[str]:
    return TOKEN.findall(text.lower())


def ngrams(text: str, n: int) -> set[tuple[str, ...]]:
    words = tokens(text)
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


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


def _texts(frame: pd.DataFrame, id_column: str) -> dict[str, str]:
    return dict(zip(frame[id_column].astype(str), frame["text"].astype(str)))


@dataclass(frozen=True)
class TextPools:
    """The texts the checks compare, id -> text (from ``targets`` and ``vignettes``, the data contract)."""

    training: dict[str, str]  # train and validation reappraisals
    heldout: dict[str, str]  # held-out answers (GPT-4 references, opponents' answers)
    heldout_on_training_scenarios: dict[str, str]  # the held-out answers written for a training scenario
    training_scenarios: dict[str, str]
    ood_scenarios: dict[str, str]
    train: dict[str, str]  # the training side of ``training``
    val: dict[str, str]  # its validation side

    @classmethod
    def from_tables(cls, targets: pd.DataFrame, vignettes: pd.DataFrame) -> TextPools:
        pools = vignettes["pool"].astype(str)
        train_scen = vignettes[pools == "train"]
        heldout = targets[targets["split"] == "heldout"]
        on_training = heldout["vignette_id"].astype(str).isin(set(train_scen["vignette_id"].astype(str)))
        return cls(
            training=_texts(targets[targets["split"].isin(TRAINING_SPLITS)], "reappraisal_id"),
            heldout=_texts(heldout, "reappraisal_id"),
            heldout_on_training_scenarios=_texts(heldout[on_training], "reappraisal_id"),
            training_scenarios=_texts(train_scen, "vignette_id"),
            ood_scenarios=_texts(vignettes[pools == "ood"], "vignette_id"),
            train=_texts(targets[targets["split"] == "train"], "reappraisal_id"),
            val=_texts(targets[targets["split"] == "val"], "reappraisal_id"),
        )
