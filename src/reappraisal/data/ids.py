"""Ids for rows whose file has none: derived, deterministic, stable across reruns. Pure.

A *hashed id* is ``prefix`` + the first 16 hex digits of the SHA-256 of the
declared cells (each stripped of surrounding whitespace, joined by the unit
separator U+001F), so the same text gets the same id in every file and in
every order of rows (e.g. a reappraisal's id in its own file and on the
rating rows that repeat its text). A *row-number id* is ``prefix`` + the
line the record starts on in its file: stable as long as the file is.
"""

from __future__ import annotations

import hashlib
from typing import Iterable, Sequence

HASH_DIGITS = 16  # 64 bits: a collision among a million ids has probability ~3e-8


def hashed_id(values: Sequence[str], prefix: str = "") -> str:
    joined = "\x1f".join(str(v).strip() for v in values)
    return prefix + hashlib.sha256(joined.encode("utf-8")).hexdigest()[:HASH_DIGITS]


def hashed_ids(columns: Sequence[Iterable[str]], prefix: str = "") -> list[str]:
    """One hashed id per row of the given columns (equal lengths)."""
    return [hashed_id(row, prefix) for row in zip(*columns)]


def row_number_ids(lines: Iterable[int], prefix: str = "") -> list[str]:
    return [f"{prefix}{int(line)}" for line in lines]


def case_variants(ids: Iterable[str]) -> list[list[str]]:
    """Groups of distinct ids that are equal but for case (``["S4_P001", "s4_p001"]``), each sorted."""
    groups: dict[str, set[str]] = {}
    for value in ids:
        groups.setdefault(str(value).casefold(), set()).add(str(value))
    return sorted(sorted(g) for g in groups.values() if len(g) > 1)
