"""Parse a judge's final verdict. Pure: strings in, ``"A" | "B" | "error"`` out.

Only the *final* verdict counts: the last ``ANSWER:`` marker in the reply
(any case, after any reasoning), and what follows it must be a lone letter A
or B, optionally wrapped (``(A)``, ``[B]``, ``**A**``, quotes), optionally
preceded by the word "reappraisal" and followed only by punctuation and
whitespace until the end of the reply. Anything else is ``"error"``: no
marker, both letters after it, another letter, or more text after the
verdict (the system prompt asks the reply to *end* with the verdict, so a
reply that keeps reasoning after its last verdict has not given one).
Chat special tokens (``<|im_end|>``) and thinking tags are ignored.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Iterable

A, B, ERROR = "A", "B", "error"
VERDICTS = (A, B)

_SPECIAL = re.compile(r"<\|[^|>]*\|>|</?think>")
_MARKER = re.compile(r"\banswer\s*[:：]", re.IGNORECASE)
_OPEN = r"[\s(\[{\"'*`_]*"
_CLOSE = r"[\s)\]}\"'*`_]*"
_TAIL = re.compile(rf"{_OPEN}(?:reappraisal\s+)?([ab]){_CLOSE}[.!;,]*{_CLOSE}", re.IGNORECASE)


def parse_verdict(text: str | None) -> str:
    """``"A"`` or ``"B"`` from the reply's final ``ANSWER:`` line, else ``"error"``."""
    if not text:
        return ERROR
    clean = _SPECIAL.sub("", text)
    markers = list(_MARKER.finditer(clean))
    if not markers:
        return ERROR
    m = _TAIL.fullmatch(clean[markers[-1].end():])
    return m.group(1).upper() if m else ERROR


def flip(verdict: str) -> str:
    """The same verdict seen from the other order (A <-> B); ``error`` stays."""
    return {A: B, B: A}.get(verdict, verdict)


def verdict_counts(verdicts: Iterable[str]) -> dict[str, int]:
    """Counts of ``A``, ``B`` and ``error`` (all three keys always present)."""
    counts = Counter(verdicts)
    unknown = set(counts) - {A, B, ERROR}
    if unknown:
        raise ValueError(f"not verdicts: {sorted(unknown)}")
    return {A: counts.get(A, 0), B: counts.get(B, 0), ERROR: counts.get(ERROR, 0)}
