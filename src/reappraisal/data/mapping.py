"""A source's declared mapping applied to its raw table: filters, missing-value codes, fields.

A *field* of a canonical table comes from the file as declared in the
source's ``columns``:

- ``"name"``: the column ``name``;
- ``{join: [a, b], sep: " "}``: text built from several columns (blank parts skipped);
- ``{hash: [a, ...], prefix: "r_"}``: an id the file lacks, derived from columns
  (see :mod:`reappraisal.data.ids`), stable across reruns and row order;
- ``{row_number: true, prefix: "p"}``: an id from the record's line in the file.

In a JSON source a column is a dotted field path (``response.text``, see
:mod:`reappraisal.data.sources`).

Every field but ``text`` (ids, study, author type, pool, emotion) is stripped
of surrounding whitespace, the one normalisation of ids: ``"p1 "`` and
``"p1"`` are one rater, in every file. Texts are kept as written.

``filters`` keep rows (e.g. finished responses, no attention-check items) and
are counted; a filter value is compared with the file's text (stripped). A
YAML boolean (``equals: true``) matches the usual spellings of that boolean
(:data:`BOOLEAN_SPELLINGS`: ``TRUE``/``True``/``true``/``1`` and
``FALSE``/``False``/``false``/``0``), and a column holding any other
non-blank text is refused, with a hint to quote the file's own spelling.
``missing_values`` are codes (``NA``, ``-99``) read as blank cells and
counted. Nothing is guessed: an unknown column, a filter that keeps nothing,
or an id derived from a blank value is an error naming the file, line or
config key.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import ConfigError, DataValidationError
from .ids import hashed_ids, row_number_ids
from .quoting import quote, quote_list
from .sources import RawTable

FILTER_OPS = ("equals", "not_equals", "in", "not_in")
#: The cell texts a YAML boolean in a filter matches.
BOOLEAN_SPELLINGS = {True: ("TRUE", "True", "true", "1"), False: ("FALSE", "False", "false", "0")}
#: Canonical fields kept as written; every other field is stripped of surrounding whitespace.
VERBATIM_FIELDS = ("text",)


def as_text(value: Any) -> str:
    """A config value compared with file cells (which are text): YAML 1 is "1"."""
    return str(value).strip()


def filter_texts(value: Any) -> list[str]:
    """The cell texts a filter value matches: a YAML boolean its usual spellings, anything else its text."""
    if isinstance(value, bool):
        return list(BOOLEAN_SPELLINGS[value])
    return [as_text(value)]


def _numeric_hits(values: pd.Series, given: list) -> pd.Series | None:
    """Cells equal to ``given`` as numbers, when every given value is a number and every non-blank cell is one
    (``0`` matches ``0``, ``0.0`` and ``0.00``); None where the comparison is one of texts."""
    if not given or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in given):
        return None
    numbers = pd.to_numeric(values.where(values != ""), errors="coerce")
    if (numbers.isna() & (values != "")).any():
        return None
    return numbers.isin([float(v) for v in given])


class SourceView:
    """One file of one declared source, after its filters, with its counts."""

    def __init__(self, raw: RawTable, source: Mapping[str, Any], key: str):
        self.raw = raw
        self.source = source
        self.key = key
        self.missing = {as_text(v) for v in source["missing_values"]}
        self.counts: dict[str, Any] = {"key": key, "file": raw.path, "rows_read": len(raw.frame)}
        self.frame = self._filtered(raw.frame)
        self.counts["rows_kept_by_filters"] = len(self.frame)
        self.counts["missing_code_cells"] = 0
        self._coded: dict[str, int] = {}

    @property
    def path(self) -> str:
        return self.raw.path

    def _filtered(self, frame: pd.DataFrame) -> pd.DataFrame:
        keep = pd.Series(True, index=frame.index)
        for i, flt in enumerate(self.source["filters"]):
            fkey = f"{self.key}.filters[{i}]"
            ops = [op for op in FILTER_OPS if op in flt]
            if "column" not in flt or len(ops) != 1:
                raise ConfigError(f"a filter names one column and exactly one of {list(FILTER_OPS)}", where=f"config key '{fkey}'")
            op = ops[0]
            values = self.raw.column(flt["column"], f"{fkey}.column").astype(str).str.strip()
            given = flt[op] if op in ("in", "not_in") else [flt[op]]
            if any(isinstance(v, bool) for v in given):
                self._check_boolean_column(values, flt["column"], given, f"{fkey}.{op}")
            hit = _numeric_hits(values, given)
            if hit is None:
                hit = values.isin([text for v in given for text in filter_texts(v)])
            this = hit if op in ("equals", "in") else ~hit
            if not (keep & this).any():
                seen = sorted(values[keep].unique().tolist())
                raise ConfigError(
                    f"filter on column {quote(flt['column'])} keeps no row of {self.path} (values there: {quote_list(seen, 8)})",
                    where=f"config key '{fkey}'",
                )
            keep &= this
        return frame[keep]

    def _check_boolean_column(self, values: pd.Series, column: str, given: list, key: str) -> None:
        """A YAML boolean filters only a column of boolean spellings (or blanks): anything else is refused."""
        known = {text for spellings in BOOLEAN_SPELLINGS.values() for text in spellings} | {""}
        known |= {as_text(v) for v in given if not isinstance(v, bool)}
        other = ~values.isin(known)
        if other.any():
            at = other.idxmax()
            raise ConfigError(
                f"the YAML boolean {str(next(v for v in given if isinstance(v, bool))).lower()} matches "
                f"{'/'.join(BOOLEAN_SPELLINGS[True])} or {'/'.join(BOOLEAN_SPELLINGS[False])}, but column {quote(column)} "
                f"of {self.path} holds {quote(values[at])} (line {int(self.raw.frame.loc[at, '_line'])}); "
                "quote the file's own text instead, e.g. equals: 'Yes'",
                where=f"config key '{key}'",
            )

    def column(self, name: str, key: str) -> pd.Series:
        """Cells of column ``name`` as stripped-of-nothing strings, declared missing codes blanked (and counted)."""
        values = self.raw.column(name, key).loc[self.frame.index].astype(str)
        if self.missing:
            coded = values.str.strip().isin(self.missing)
            self._coded[name] = int(coded.sum())  # per column: a column read twice counts once
            self.counts["missing_code_cells"] = sum(self._coded.values())
            values = values.mask(coded, "")
        return values

    def cells(self, names: list[str], key: str) -> np.ndarray:
        """Cells of many columns at once (rows × columns, object), as :meth:`column` reads each."""
        for name in names:
            self.raw.column(name, key)  # refuses a missing or duplicated name
        values = self.raw.frame.loc[self.frame.index, names].to_numpy(dtype=object).astype(str)
        if self.missing and values.size:
            coded = np.isin(np.char.strip(values.astype("U")), list(self.missing))
            for name, n in zip(names, coded.sum(axis=0)):
                self._coded[name] = int(n)
            self.counts["missing_code_cells"] = sum(self._coded.values())
            values = np.where(coded, "", values).astype(object)
        return values.astype(object)

    def field(self, spec: Any, key: str) -> pd.Series:
        """The canonical field declared by ``spec`` (config key ``key``)."""
        if isinstance(spec, str):
            return self.column(spec, key)
        if isinstance(spec, Mapping) and "join" in spec:
            parts = [self.column(c, f"{key}.join") for c in _names(spec["join"], f"{key}.join")]
            sep = spec.get("sep", " ")
            stripped = pd.concat([p.str.strip() for p in parts], axis=1)
            return stripped.apply(lambda row: sep.join(v for v in row if v), axis=1).astype(object)
        if isinstance(spec, Mapping) and "hash" in spec:
            names = _names(spec["hash"], f"{key}.hash")
            parts = [self.column(c, f"{key}.hash") for c in names]
            for name, part in zip(names, parts):
                blank = part.str.strip() == ""
                if blank.any():
                    line = int(self.frame.loc[blank.idxmax(), "_line"])
                    raise DataValidationError(
                        f"cannot derive an id (config key '{key}') from the blank cell in column {quote(name)}",
                        where=f"{self.path}, line {line}",
                    )
            return pd.Series(hashed_ids(parts, spec.get("prefix", "")), index=self.frame.index, dtype=object)
        if isinstance(spec, Mapping) and spec.get("row_number") is True:
            return pd.Series(row_number_ids(self.frame["_line"], spec.get("prefix", "")), index=self.frame.index, dtype=object)
        raise ConfigError(
            "a field is a column name, {join: [...]}, {hash: [...]} or {row_number: true}", where=f"config key '{key}'"
        )

    def fields(self, specs: Mapping[str, Any], key: str) -> pd.DataFrame:
        """The declared canonical fields side by side, with ``_file`` / ``_line``; all but texts stripped."""
        out = pd.DataFrame(
            {
                canon: field if canon in VERBATIM_FIELDS else field.str.strip()
                for canon, spec in specs.items()
                for field in [self.field(spec, f"{key}.{canon}")]
            },
            index=self.frame.index,
        )
        for canon, spec in specs.items():
            if isinstance(spec, Mapping) and "hash" in spec:
                out[f"_{canon}_from"] = self.hashed_from(spec["hash"], f"{key}.{canon}")
        out["_file"] = self.frame["_file"]
        out["_line"] = self.frame["_line"]
        return out

    def hashed_from(self, names: Sequence[str], key: str) -> pd.Series:
        """Per row, the cells a hashed id was derived from, in words (``column 'text' = "You could ..."``)."""
        described = [f"column {quote(name)} = " + self.column(name, f"{key}.hash").str.strip().map(_excerpt)
                     for name in _names(names, f"{key}.hash")]
        return pd.concat(described, axis=1).agg("; ".join, axis=1).astype(object)


def _excerpt(text: str, limit: int = 60) -> str:
    return quote(text if len(text) <= limit else text[: limit - 3] + "...")


def _names(value: Any, key: str) -> list[str]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise ConfigError("must be a non-empty list of column names", where=f"config key '{key}'")
    return value


def collapse_distinct(df: pd.DataFrame, id_col: str, table: str) -> pd.DataFrame:
    """One row per ``id_col`` from rows that repeat it (e.g. scenarios repeated on reappraisal rows).

    Repeats must agree on every other field; the first row (and its line) is kept.
    """
    fields = [c for c in df.columns if not c.startswith("_") and c != id_col]
    first = df.drop_duplicates(id_col, keep="first").set_index(id_col)
    for col in fields:
        expected = df[id_col].map(first[col])
        differ = df[col].astype(str) != expected.astype(str)
        if differ.any():
            row = df.loc[differ.idxmax()]
            origin = first.loc[row[id_col]]
            raise DataValidationError(
                f"{table} {quote(row[id_col])} repeats with a different {col} than on {origin['_file']}, line {int(origin['_line'])}",
                where=f"{row['_file']}, line {int(row['_line'])}",
            )
    return df.drop_duplicates(id_col, keep="first")
