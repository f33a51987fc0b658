"""Reading a stage's input table (core layer): one function, one kind of error.

Every stage that reads a table it did not make (the processed tables, a
teacher-traces file) reads it here, so a missing file, an unreadable file and
a missing column each read the same way, naming the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import pandas as pd

from .errors import DataValidationError, PipelineInputError

#: Suffixes :func:`read_table` understands.
FORMATS = (".parquet", ".csv", ".tsv", ".jsonl", ".json")


def read_table(path: str | Path, columns: Sequence[str] = (), *, where: str | None = None) -> pd.DataFrame:
    """The table at ``path`` (format by suffix: parquet, csv, tsv, jsonl, json), checked to hold ``columns``.

    CSV/TSV cells are read as text (no type guessing, empty stays empty).
    ``where`` names the input in errors (default: the path):
    :class:`PipelineInputError` when the file is absent,
    :class:`DataValidationError` when it cannot be parsed, has another
    format or lacks a required column.
    """
    path = Path(path)
    where = where or str(path)
    if not path.is_file():
        raise PipelineInputError("file not found", where=where)
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise DataValidationError(f"unsupported file type {suffix!r} (use parquet, csv, tsv or jsonl)", where=where)
    try:
        if suffix == ".parquet":
            df = pd.read_parquet(path)
        elif suffix in (".csv", ".tsv"):
            df = pd.read_csv(path, sep="\t" if suffix == ".tsv" else ",", dtype=str, keep_default_na=False)
        else:
            df = pd.read_json(path, lines=suffix == ".jsonl", dtype=False)
    except (ValueError, OSError) as exc:
        raise DataValidationError(f"cannot be read as {suffix[1:]} ({exc.__class__.__name__}: {exc})", where=where) from None
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise DataValidationError(f"missing column(s) {missing}", where=where)
    return df
