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
from datetime import date, timedelta
from typing import Callable, Iterable, Sequence

HASH_DIGITS = 16  # 64 bits: a collision among a million ids has probability ~3e-8


def hashed_id(values: Sequence[str], prefix: str = "") -> str:
    joined = "\x1f".join(str(v).strip() for v in values)
    return prefix + hashlib.sha256(joined.encode("utf-8")).hexdigest()[:HASH_DIGITS]


def hashed_ids(columns: Sequence[Iterable[str]], prefix: str = "") -> list[str]:
    """One hashed id per row of the given columns (equal lengths)."""
    return [hashed_id(row, prefix) for row in zip(*columns)]


def row_number_ids(lines: Iterable[int], prefix: str = "") -> list[str]:
    return [f"{prefix}{int(line)}" for line in lines]


def _variants(ids: Iterable[str], key: Callable[[str], str]) -> list[list[str]]:
    groups: dict[str, set[str]] = {}
    for value in ids:
        groups.setdefault(key(str(value)), set()).add(str(value))
    return sorted(sorted(g) for g in groups.values() if len(g) > 1)


def case_variants(ids: Iterable[str]) -> list[list[str]]:
    """Groups of distinct ids that are equal but for case (``["S4_P001", "s4_p001"]``), each sorted."""
    return _variants(ids, str.casefold)


def _without_leading_zeros(value: str) -> str:
    return value.lstrip("0") or "0" if value.isdigit() else value


def zero_variants(ids: Iterable[str]) -> list[list[str]]:
    """Groups of distinct numeric ids that are equal but for leading zeros (``["007", "7"]``: a spreadsheet read
    ``007`` as the number 7), each sorted, the longest (the form as typed) first."""
    groups = _variants((v for v in ids if str(v).isdigit()), _without_leading_zeros)
    return sorted(sorted(g, key=lambda v: (-len(v), v)) for g in groups)


_DECIMAL = re.compile(r"^-?\d+\.\d+$")


def numeric_mangling(defined: Iterable[str], used: Iterable[str]) -> list[str] | None:
    """The zero-padded decimal ids of ``defined`` (``4.10``) when ``used`` (the ids of one file) looks turned into
    numbers: its decimal ids never end in 0 and the number of a zero-padded defined id (4.1) is among them; else
    None. Ids that are not decimals (``s1_r0001``, another study's ids in the same file) are left aside."""
    defined = [str(v) for v in defined]
    decimals = [str(v) for v in used if _DECIMAL.match(str(v))]
    padded = sorted(v for v in defined if _DECIMAL.match(v) and v.endswith("0"))
    if not padded or not decimals or any(v.endswith("0") for v in decimals):
        return None
    as_numbers = {float(v) for v in decimals}
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


_MONTH_DAY = re.compile(r"^(\d{1,2})([-/.])(\d{1,2})$")
#: Excel's day numbers of 1950-01-01 and 2099-12-31: a date a spreadsheet made of a month-day id (it adds the
#: year it was typed in) is shown as one of these when its cell is formatted as a number.
SERIAL_DAYS = (18264, 73050)
_EXCEL_DAY_ZERO = date(1899, 12, 30)


def serial_date(value: str) -> date | None:
    """The date a spreadsheet's serial day number stands for (``45363`` → 2024-03-12); None for other ids."""
    value = str(value).strip()
    if not value.isdigit() or not SERIAL_DAYS[0] <= int(value) <= SERIAL_DAYS[1]:
        return None
    return _EXCEL_DAY_ZERO + timedelta(days=int(value))


def _month_day(value: str) -> bool:
    m = _MONTH_DAY.match(str(value).strip())
    return bool(m) and (1 <= int(m.group(1)) <= 12 and 1 <= int(m.group(3)) <= 31
                        or 1 <= int(m.group(3)) <= 12 and 1 <= int(m.group(1)) <= 31)


def _written(day: date, sep: str) -> set[str]:
    """A date as a month-day or day-month id, with or without leading zeros."""
    forms = set()
    for a, b in ((day.month, day.day), (day.day, day.month)):
        forms |= {f"{a}{sep}{b}", f"{a:02d}{sep}{b:02d}", f"{a}{sep}{b:02d}", f"{a:02d}{sep}{b}"}
    return forms


def serial_date_mangling(ids: Iterable[str]) -> dict[str, list[str]] | None:
    """When an id column mixes month-day ids (``3-12``) with serial day numbers (``45363``, a spreadsheet's number
    of the date it made of ``3-12``): each such number with the month-day ids of the column its date can be
    written as (one: the id it stands for; none or two, ``3-12`` and ``12-3``: unknown); else None."""
    values = list(dict.fromkeys(str(v).strip() for v in ids))
    written = [v for v in values if _month_day(v)]
    serials = {v: serial_date(v) for v in values if serial_date(v) is not None}
    if not written or not serials:
        return None
    seps = {_MONTH_DAY.match(v).group(2) for v in written}
    known = set(written)
    return {v: sorted(known & set().union(*(_written(day, sep) for sep in seps))) for v, day in serials.items()}


def variant_of(value: str, known: Iterable[str]) -> str | None:
    """A known id that ``value`` is the same as but for case, leading zeros or a spreadsheet's serial date number
    (``S4_P001`` / ``s4_p001``, ``7`` / ``007``, ``45363`` / ``3-12``); None when there is none."""
    value = str(value)
    known = [str(k) for k in known]
    for key in (str.casefold, _without_leading_zeros):
        near = [k for k in known if k != value and key(k) == key(value)]
        if near:
            return sorted(near, key=lambda v: (-len(v), v))[0]
    found = serial_date_mangling([value, *known]) or {}
    return found[value][0] if len(found.get(value, [])) == 1 else None
