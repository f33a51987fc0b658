"""Which human pairs the GRM learns from and is judged on, in both orders. Pure.

A *clearly separated* pair has a human score gap (``margin`` = |z_a − z_b|
on the primary dimension) of at least δ from the config; the selection uses
human evidence only, never the judge's confidence. Every pair is asked in
both orders: ``AB`` shows ``text_a`` in slot A, ``BA`` swaps the slots, and
the correct letter follows the swap.
"""

from __future__ import annotations

import pandas as pd

from reappraisal.errors import DataValidationError, PipelineInputError

from .verdict import flip
from ..table_contracts import GRM_PAIR_COLUMNS


#: Columns of :func:`both_orders`' result.
ITEM_COLUMNS = (
    "pair_id", "vignette_id", "order", "first_id", "second_id", "first", "second", "correct", "margin",
)


def check_pairs(pairs: pd.DataFrame, where: str) -> None:
    """Raise :class:`DataValidationError` unless ``pairs`` has the contract's columns and letters."""
    missing = [c for c in GRM_PAIR_COLUMNS if c not in pairs.columns]
    if missing:
        raise DataValidationError(f"missing column(s) {missing}", where=where)
    bad = ~pairs["preferred"].isin(["A", "B"])
    if bad.any():
        row = int(bad.to_numpy().nonzero()[0][0])
        raise DataValidationError(
            f"'preferred' must be 'A' or 'B', got {pairs['preferred'].iloc[row]!r}", where=f"{where} row {row}"
        )


def select_pairs(pairs: pd.DataFrame, *, split: str, delta: float, where: str = "pairs") -> pd.DataFrame:
    """The clearly separated pairs (``margin >= delta``) of one split; error when none are left."""
    check_pairs(pairs, where)
    in_split = pairs[pairs["split"] == split]
    if in_split.empty:
        raise PipelineInputError(f"no pairs in split {split!r}", where=where)
    chosen = in_split[in_split["margin"] >= delta]
    if chosen.empty:
        raise PipelineInputError(
            f"delta = {delta} leaves no clearly separated {split!r} pairs (largest margin there is "
            f"{in_split['margin'].max():.3f}); lower it",
            where="config key 'grm.delta'",
        )
    return chosen.reset_index(drop=True)


def both_orders(pairs: pd.DataFrame) -> pd.DataFrame:
    """Two judged items per pair: ``AB`` (text_a first) and ``BA`` (slots swapped).

    Items of one pair are adjacent (AB then BA), pairs keep their order.
    """
    ab = pd.DataFrame({
        "pair_id": pairs["pair_id"].to_numpy(),
        "vignette_id": pairs["vignette_id"].to_numpy(),
        "order": "AB",
        "first_id": pairs["id_a"].to_numpy(),
        "second_id": pairs["id_b"].to_numpy(),
        "first": pairs["text_a"].to_numpy(),
        "second": pairs["text_b"].to_numpy(),
        "correct": pairs["preferred"].to_numpy(),
        "margin": pairs["margin"].to_numpy(),
    })
    ba = ab.assign(
        order="BA",
        first_id=ab["second_id"], second_id=ab["first_id"],
        first=ab["second"], second=ab["first"],
        correct=ab["correct"].map(flip),
    )
    out = pd.concat([ab, ba], ignore_index=True)
    n = len(pairs)
    interleave = [i for k in range(n) for i in (k, k + n)]
    return out.iloc[interleave].reset_index(drop=True)[list(ITEM_COLUMNS)]
