"""Reading one raw export file into a table of strings that remembers where each row came from.

A *raw table* is a DataFrame of strings (never type-guessed), one column per
header field, plus ``_file`` (path relative to the raw folder) and ``_line``
(the physical line the record starts on, so quoted multi-line fields keep
later line numbers right; Parquet rows are numbered from 1). How a file is
read is declared per source, never guessed: ``format`` (csv | tsv |
parquet), ``delimiter``, ``encoding``, ``skip_rows_after_header`` (survey
tools such as Qualtrics put question text and import ids in rows 2-3) and
``max_field_chars``. Every problem names the file and line (and the column,
or the config key to change).
"""

from __future__ import annotations

import codecs
import csv
import io
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from ..errors import ConfigError, DataValidationError

#: Delimiters suggested when a header has a single field.
_OTHER_DELIMITERS = (";", "\t", "|", ",")
HEADER_LINE = 1


@dataclass
class RawTable:
    """A file's records as strings, with its header and the columns that appear more than once."""

    frame: pd.DataFrame
    path: str
    header: list[str]
    duplicates: dict[str, list[int]] = field(default_factory=dict)  # name -> 1-based positions
    header_line: int = HEADER_LINE

    def column(self, name: str, key: str) -> pd.Series:
        """The column ``name``, refusing a name the header does not have or has twice."""
        if name in self.duplicates:
            positions = " and ".join(str(p) for p in self.duplicates[name])
            raise DataValidationError(
                f"column {name!r} appears {len(self.duplicates[name])} times in the header (positions {positions}); "
                f"rename one so config key '{key}' names a single column",
                where=f"{self.path}, line {self.header_line}",
            )
        if name not in self.frame.columns:
            avail = [c for c in self.header if c][:30]
            raise DataValidationError(
                f"missing column {name!r} declared in config key '{key}' (file has {avail}"
                f"{', ...' if len(self.header) > 30 else ''})",
                where=self.path,
            )
        return self.frame[name]


def check_reader_options(source: Mapping[str, Any], key: str) -> None:
    """Refuse reader options the schema cannot check (an unknown encoding, a bad delimiter)."""
    encoding = source["encoding"]
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise ConfigError(f"unknown encoding {encoding!r}", where=f"config key '{key}.encoding'") from None
    delimiter = source.get("delimiter")
    if delimiter is not None and (len(delimiter) != 1 or delimiter in "\"\r\n"):
        raise ConfigError(f"delimiter must be one character (not a quote or newline), got {delimiter!r}", where=f"config key '{key}.delimiter'")


def read_source_file(path: Path, source: Mapping[str, Any], raw_dir: Path, key: str) -> RawTable:
    """Read one raw file as declared by ``source`` (config key ``key``)."""
    rel = str(path.relative_to(raw_dir)) if path.is_relative_to(raw_dir) else str(path)
    fmt = source["format"]
    check_reader_options(source, key)
    if fmt == "parquet":
        return _read_parquet(path, rel)
    return _read_delimited(path, rel, source, key)


def _read_parquet(path: Path, rel: str) -> RawTable:
    try:
        df = pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises several types for corrupt files
        raise DataValidationError(f"not a readable Parquet file ({exc.__class__.__name__})", where=rel) from None
    header = [str(c) for c in df.columns]
    df.columns = header
    df = df.astype("string").fillna("").astype(object)
    df["_line"] = range(1, len(df) + 1)
    df["_file"] = rel
    return RawTable(df, rel, header, header_line=0)


def _decode(data: bytes, encoding: str, rel: str, key: str) -> str:
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        name = "UTF-8" if codecs.lookup(encoding).name == "utf-8" else encoding
        raise DataValidationError(
            f"invalid {name} (byte {exc.start}); declare the file's encoding in config key '{key}.encoding'",
            where=f"{rel}, line {line}",
        ) from None
    return text[1:] if text.startswith("\ufeff") else text


def _read_delimited(path: Path, rel: str, source: Mapping[str, Any], key: str) -> RawTable:
    fmt = source["format"]
    delimiter = source.get("delimiter") or ("\t" if fmt == "tsv" else ",")
    max_chars = int(source["max_field_chars"])
    skip = int(source["skip_rows_after_header"])
    data = path.read_bytes()
    if not data.strip():
        raise DataValidationError("file is empty", where=rel)
    text = _decode(data, source["encoding"], rel, key)

    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    records: list[list[str]] = []
    lines: list[int] = []
    consumed = 0
    old_limit = csv.field_size_limit()
    csv.field_size_limit(sys.maxsize)  # fields are bounded below, per column, with the limit named
    try:
        while True:
            start = consumed + 1
            try:
                record = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                raise DataValidationError(
                    f"malformed {fmt.upper()} ({exc}); a quote opened here may never be closed",
                    where=f"{rel}, line {start}",
                ) from None
            consumed = reader.line_num
            if record:  # a blank line holds no record
                records.append(record)
                lines.append(start)
    finally:
        csv.field_size_limit(old_limit)
    if not records:
        raise DataValidationError("file is empty", where=rel)

    header, header_line = records[0], lines[0]
    if len(header) == 1:
        hint = next((d for d in _OTHER_DELIMITERS if d != delimiter and d in header[0]), None)
        if hint is not None:
            raise DataValidationError(
                f"the header has one column but contains {hint!r}: declare delimiter: {hint!r} "
                f"in config key '{key}.delimiter' (the file is read with {delimiter!r})",
                where=f"{rel}, line {header_line}",
            )
    if len(records) - 1 < skip:
        raise DataValidationError(
            f"file has {len(records) - 1} row(s) after the header, fewer than config key '{key}.skip_rows_after_header' ({skip})",
            where=rel,
        )
    body = records[1 + skip :]
    body_lines = lines[1 + skip :]
    for record, line in zip(body, body_lines):
        if len(record) != len(header):
            raise DataValidationError(
                f"row has {len(record)} field(s), the header (line {header_line}) has {len(header)}"
                f" (is the delimiter {delimiter!r} right? config key '{key}.delimiter')",
                where=f"{rel}, line {line}",
            )
    for record, line in zip([header, *body], [header_line, *body_lines]):
        for pos, value in enumerate(record):
            if len(value) > max_chars:
                name = header[pos] if line != header_line else f"#{pos + 1}"
                raise DataValidationError(
                    f"field in column {name!r} has {len(value)} characters, over the limit of {max_chars}"
                    f" (config key '{key}.max_field_chars'; an unclosed quote also makes one huge field)",
                    where=f"{rel}, line {line}",
                )

    seen: dict[str, list[int]] = {}
    for pos, name in enumerate(header, start=1):
        seen.setdefault(name, []).append(pos)
    duplicates = {name: pos for name, pos in seen.items() if len(pos) > 1}
    # Internal column names are unique; a duplicated name is reachable only through RawTable.column (which refuses it).
    internal = [name if name not in duplicates else f"\x00{pos}:{name}" for pos, name in enumerate(header, start=1)]
    df = pd.DataFrame(body, columns=internal, dtype=object) if body else pd.DataFrame(columns=internal, dtype=object)
    df["_line"] = body_lines
    df["_file"] = rel
    return RawTable(df, rel, header, duplicates, header_line)
