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
import re
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


_DECIMAL = re.compile(r"^-?\d+\.\d+$")


def numeric_mangling(defined: Iterable[str], used: Iterable[str]) -> list[str] | None:
    """The zero-padded decimal ids of ``defined`` (``4.10``) when ``used`` looks turned into numbers: every used id
    a decimal, none ending in 0, and each zero-padded defined id's number (4.1) among the used; else None."""
    defined, used = [str(v) for v in defined], [str(v) for v in used]
    padded = sorted(v for v in defined if _DECIMAL.match(v) and v.endswith("0"))
    if not padded or not used or not all(_DECIMAL.match(v) for v in used) or any(v.endswith("0") for v in used):
        return None
    as_numbers = {float(v) for v in used}
    return padded if any(float(v) in as_numbers for v in padded) else None


_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)"
#: How a spreadsheet shows a date it made of a cell: ISO (with a zero time), month/day/year, day-month, month-year.
_DATE = re.compile(rf"^(?:\d{{4}}-\d{{1,2}}-\d{{1,2}}(?:[ T]00:00(?::00)?)?|\d{{1,2}}/\d{{1,2}}/\d{{2,4}}"
                   rf"|\d{{1,2}}-{_MONTH}(?:-\d{{2,4}})?|{_MONTH}-\d{{2,4}})$", re.IGNORECASE)


def looks_like_a_date(value: str) -> bool:
    return bool(_DATE.match(str(value).strip()))


def date_mangling(ids: Iterable[str]) -> tuple[str, str] | None:
    """``(a date, an id)`` when an id column mixes dates with other ids (``10-Apr`` beside ``4-32``): a spreadsheet
    made dates of the ids it could read as one; else None (no date, or only dates: ids that are dates throughout)."""
    values = [str(v) for v in ids]
    dates = [v for v in values if looks_like_a_date(v)]
    others = [v for v in values if not looks_like_a_date(v)]
    return (dates[0], others[0]) if dates and others else None
