"""Canonical table schemas and their validation.

Each canonical table has required columns with a kind (``str`` or ``float``).
Validation errors name the table and, where rows carry their origin
(``_file``/``_line`` columns added by ingestion), the file and line.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..errors import DataValidationError
from .quoting import quote


@dataclass(frozen=True)
class TableSchema:
    name: str
    columns: dict[str, str]  # column -> "str" | "float"
    key: tuple[str, ...]  # columns that must be unique together
    non_empty_text: tuple[str, ...] = ()


VIGNETTES = TableSchema(
    "vignettes",
    {"vignette_id": "str", "text": "str", "emotion": "str", "pool": "str"},
    key=("vignette_id",),
    non_empty_text=("vignette_id", "text"),
)
REAPPRAISALS = TableSchema(
    "reappraisals",
    {"reappraisal_id": "str", "vignette_id": "str", "text": "str", "author_type": "str", "study": "str"},
    key=("reappraisal_id",),
    non_empty_text=("reappraisal_id", "vignette_id", "text", "author_type"),
)
RATINGS = TableSchema(
    "ratings",
    {"study": "str", "rater_id": "str", "reappraisal_id": "str", "dimension": "str", "rating": "float"},
    key=("study", "rater_id", "reappraisal_id", "dimension"),
    non_empty_text=("rater_id", "reappraisal_id"),
)

POOLS = ("train", "ood")
#: author_type of reappraisals written by study participants (everything else is held out of training).
HUMAN = "human"


def where(row: pd.Series | None, table: str) -> str:
    """Human-readable origin of a row: ``file, line N`` when known, else the table."""
    if row is not None and "_file" in row.index and isinstance(row.get("_file"), str):
        return f"{row['_file']}, line {int(row['_line'])}"
    return f"table {table}"


def validate_table(df: pd.DataFrame, schema: TableSchema) -> pd.DataFrame:
    """Check required columns, kinds, non-empty text and key uniqueness; return typed copy."""
    missing = [c for c in schema.columns if c not in df.columns]
    if missing:
        raise DataValidationError(f"missing column(s) {missing}", where=f"table {schema.name}")
    out = df.copy()
    for col, kind in schema.columns.items():
        if kind == "float":
            values = pd.to_numeric(out[col], errors="coerce")
            bad = values.isna() & out[col].notna()
            if bad.any() or values.isna().any():
                row = out.loc[(bad | values.isna()).idxmax()]
                raise DataValidationError(
                    f"column {col!r} must be a number, got {quote(row[col])}", where=where(row, schema.name)
                )
            out[col] = values.astype("float64")
        else:
            out[col] = out[col].astype("string").fillna("").astype(str)
    for col in schema.non_empty_text:
        empty = out[col].str.strip() == ""
        if empty.any():
            row = out.loc[empty.idxmax()]
            raise DataValidationError(f"column {col!r} is empty", where=where(row, schema.name))
    dup = out.duplicated(list(schema.key), keep="first")
    if dup.any():
        row = out.loc[dup.idxmax()]
        key = ", ".join(f"{k}={quote(row[k])}" for k in schema.key)
        raise DataValidationError(f"duplicate {schema.name} key ({key})", where=where(row, schema.name))
    return out


def strip_origin(df: pd.DataFrame, schema: TableSchema) -> pd.DataFrame:
    """Keep only the schema's columns, in order, with a clean index."""
    return df[list(schema.columns)].reset_index(drop=True)


def in_key_order(df: pd.DataFrame, schema: TableSchema) -> pd.DataFrame:
    """The rows sorted by the schema's key (unique once validated), with a clean index: a table's bytes and
    everything computed from it then depend on its content only, not on the order of the export's rows or files."""
    return df.sort_values(list(schema.key), kind="mergesort").reset_index(drop=True)
