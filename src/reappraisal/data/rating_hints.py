"""Which setting fixes a rating cell that is not a number: the hint of the ingest stage's one-line error. Pure.

Told apart, in this order, from the cell and the file's other ratings:

- a decimal comma (``4,5``): ``decimal: ","``;
- the first records after the header are not data (a survey tool's
  question-text and ImportId rows; every later record is numbers):
  ``skip_rows_after_header``, counting the rows already declared as well;
- answer labels instead of values (``2 - Disagree``, ``Agree (4)``, or
  most cells words, in several spellings): the survey tool's export setting that
  writes numbers (Qualtrics: "Use numeric values"); ``missing_values``
  would blank every such rating;
- else a code that means missing (``NA``, ``-99``): ``missing_values``.
"""

from __future__ import annotations

import re

import pandas as pd

_DECIMAL_COMMA = re.compile(r"^-?\d+,\d+$")
#: A number with its answer's words: "2 - Disagree", "2. Disagree", "2 = Disagree", "Disagree (2)", "Disagree = 2".
_NUMBERED_LABEL = re.compile(r"^-?\d+(?:[.,]\d+)?\s*[-–—=:.)]\s*[^\W\d_]|^[^\W\d_].*?(?:\(\s*-?\d+\s*\)|[-–—=:]\s*-?\d+)$")
_WORDS = re.compile(r"[^\W\d_]{2,}")
#: At most this many records at the file's start count as header rows a survey tool added.
MAX_HEADER_ROWS = 3
#: Distinct wordy cells (in most of the non-numbers) that read as a scale's answer labels, not a missing code.
MIN_LABELS = 3


def not_a_number_hint(ratings: pd.Series, numeric: pd.Series, lines: pd.Series, cell: str, key: str,
                      skipped: int | None) -> str:
    """The hint for rating ``cell``, not a number, of source ``key`` (see module doc).

    ``ratings``: the file's rating cells as read; ``numeric``: them as numbers (NaN where not one); ``lines``:
    each cell's record line; ``skipped``: the declared ``skip_rows_after_header`` (None: the format has no header
    rows, JSON or Parquet)."""
    if _DECIMAL_COMMA.match(str(cell).strip()):
        return f"a decimal comma: declare config key '{key}.decimal: \",\"'"
    bad = numeric.isna().groupby(lines).any()
    leading = int(bad.cummin().sum())  # the file's first records, each with a cell that is not a number
    if skipped is not None and 0 < leading <= MAX_HEADER_ROWS and leading < len(bad) and not bad.iloc[leading:].any():
        total = skipped + leading
        already = f" (besides the {skipped} declared)" if skipped else ""
        return (f"the first {leading} record(s) after the header{already} are not data, as a survey tool's "
                f"question-text and ImportId rows: declare config key '{key}.skip_rows_after_header: {total}'")
    texts = ratings[numeric.isna()].astype(str).str.strip()
    labels = texts[texts.map(lambda t: bool(_NUMBERED_LABEL.match(t)))]
    wordy = texts[texts.map(lambda t: bool(_WORDS.search(t)))]
    mostly_words = len(texts) * 2 > len(ratings) and len(wordy) * 2 > len(texts) and wordy.nunique() >= MIN_LABELS
    if _NUMBERED_LABEL.match(str(cell).strip()) or mostly_words:
        example = labels.iloc[0] if len(labels) else str(cell).strip()
        return (f"the cells are the survey's answer labels ({example!r}), not their numbers: export the ratings as "
                "numeric values (Qualtrics: Export Data > 'Use numeric values'); declaring them missing would drop "
                "every rating")
    return f"declare missing-value codes in config key '{key}.missing_values'"
