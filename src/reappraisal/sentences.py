"""The one sentence splitter (core layer): the two-sentence format gate and the demo data both count with it.

Rules, applied in order (each tested in ``tests/test_sentences.py``):

1. A line break ends a sentence: every non-blank line is split on its own, so
   a bulleted list counts one sentence per item at least.
2. Inside a line, a candidate boundary is a run of terminal punctuation
   (``.``, ``!``, ``?``, the ellipsis ``...``/``…``), optionally followed by
   closing quotes or brackets, then whitespace or the end of the line.
3. A candidate is *not* a boundary when the next word starts with a lowercase
   letter (``"busy... or tired"``, ``"e.g. your friend"``), or when a single
   period follows a known abbreviation (:data:`ABBREVIATIONS`: ``Mr. Mrs.
   Ms. Dr. Prof. St. Jr. Sr. vs. cf. approx. No. Mt. etc. Fig. Dept.``), a
   dotted abbreviation (``e.g. i.e. U.S. a.m.``) or a one-letter capital
   initial other than ``I`` (``J. Smith``).
4. Otherwise it is a boundary, including an ellipsis followed by a capital
   (``"Maybe they forgot... Ask them."`` is two sentences).
5. A line without terminal punctuation is one sentence; decimals (``3.5``)
   never split because no whitespace follows the period.

Whitespace-only text has zero sentences.
"""

from __future__ import annotations

import re

#: Abbreviations (lowercase, without the final period) after which a single
#: period does not end a sentence.
ABBREVIATIONS = frozenset(
    {"mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "vs", "cf", "approx", "no", "mt", "etc", "fig", "dept"}
)

_CANDIDATE = re.compile(r"(\.{3}|…|[.!?]+)([\"'”’)\]]*)(?=\s|$)")
_DOTTED = re.compile(r"(?:[A-Za-z]\.)+[A-Za-z]")
_LAST_TOKEN = re.compile(r"(\S+)$")
_OPENERS = "\"'“‘([*-–—"


def split_sentences(text: str) -> list[str]:
    """Split ``text`` into sentences by the rules in the module docstring."""
    sentences: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if line:
            sentences.extend(_split_line(line))
    return sentences


def count_sentences(text: str) -> int:
    """Number of sentences in ``text`` (0 for empty or whitespace-only text)."""
    return len(split_sentences(text))


def _split_line(line: str) -> list[str]:
    out: list[str] = []
    start = 0
    for m in _CANDIDATE.finditer(line):
        end = m.end()
        if _is_boundary(line, m):
            piece = line[start:end].strip()
            if piece:
                out.append(piece)
            start = end
    rest = line[start:].strip()
    if rest:
        out.append(rest)
    return out


def _is_boundary(line: str, m: re.Match) -> bool:
    following = line[m.end():].lstrip()
    if not following:
        return True
    first = following.lstrip(_OPENERS)[:1]
    if first and first.islower():
        return False
    if m.group(1) == ".":
        token_match = _LAST_TOKEN.search(line[: m.start()])
        token = token_match.group(1) if token_match else ""
        token = token.lstrip(_OPENERS)
        if token.lower() in ABBREVIATIONS:
            return False
        if _DOTTED.fullmatch(token):
            return False
        if len(token) == 1 and token.isalpha() and token.isupper() and token != "I":
            return False
    return True
