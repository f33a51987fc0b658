"""Reading one raw export file into a table of strings that remembers where each row came from.

A *raw table* is a DataFrame of strings (never type-guessed), one column per
header field, plus ``_file`` (path relative to the raw folder) and ``_line``
(the physical line the record starts on, so quoted multi-line fields keep
later line numbers right; Parquet rows are numbered from 1). How a file is
read is declared per source, never guessed: ``format`` (csv | tsv |
parquet | json | jsonl), ``delimiter``, ``encoding``,
``skip_rows_after_header`` (survey tools such as Qualtrics put question text
and import ids in rows 2-3) and ``max_field_chars``.

JSON sources: ``json`` is one array of records (``[{...}, {...}]``),
``jsonl`` one record per line. A record's nested objects and lists are
flattened to dotted field paths (``{"response": {"text": ..}}`` is the column
``response.text``, ``{"scores": [4, 5]}`` the columns ``scores.0`` and
``scores.1``); a field a record lacks, or ``null``, is a blank cell; JSON
``true`` / ``false`` are the text ``true`` / ``false``.

A file that holds no data rows (a header only, an empty array) is refused:
a declared source never vanishes in silence. A file that is not text in the
declared encoding is refused as such, UTF-16 without a byte-order mark
included (its NUL bytes are never read as UTF-8 text). A gzip, bzip2 or xz
compressed file (``.csv.gz``, or still named ``.csv``) is unpacked first, an
archive (zip) refused by name (:mod:`reappraisal.data.compression`). Every problem names
the file and line (and the column, or the config key to change); a header or
cell is quoted clipped (:mod:`reappraisal.data.quoting`).
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from ..errors import ConfigError, DataValidationError
from .compression import unpacked
from .quoting import quote, quote_list

#: Delimiters suggested when a header has a single field.
_OTHER_DELIMITERS = (";", "\t", "|", ",")
HEADER_LINE = 1
#: Formats read as delimited text, and as JSON records.
DELIMITED = ("csv", "tsv")
JSON_FORMATS = ("json", "jsonl")
#: Header names an error lists when a declared column is missing.
LISTED_COLUMNS = 20
#: Bytes looked at to tell UTF-16's byte order (an even number).
UTF16_SNIFF_BYTES = 4096


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
                f"column {quote(name)} appears {len(self.duplicates[name])} times in the header (positions {positions}); "
                f"rename one so config key '{key}' names a single column",
                where=f"{self.path}, line {self.header_line}",
            )
        if name not in self.frame.columns:
            avail = [c for c in self.header if c]
            raise DataValidationError(
                f"missing column {quote(name)} declared in config key '{key}' (file has {quote_list(avail, LISTED_COLUMNS)})",
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
    if source["format"] in JSON_FORMATS:
        if delimiter is not None:
            raise ConfigError(f"format {source['format']!r} has no delimiter; remove it", where=f"config key '{key}.delimiter'")
        if source["skip_rows_after_header"]:
            raise ConfigError(
                f"format {source['format']!r} has no header rows to skip; remove it", where=f"config key '{key}.skip_rows_after_header'"
            )


def read_source_file(path: Path, source: Mapping[str, Any], raw_dir: Path, key: str) -> RawTable:
    """Read one raw file as declared by ``source`` (config key ``key``)."""
    rel = str(path.relative_to(raw_dir)) if path.is_relative_to(raw_dir) else str(path)
    fmt = source["format"]
    check_reader_options(source, key)
    if fmt == "parquet":
        table = _read_parquet(path, rel, key)
    elif fmt in JSON_FORMATS:
        table = _read_json(path, rel, source, key)
    else:
        table = _read_delimited(path, rel, source, key)
    if table.frame.empty:
        skipped = int(source["skip_rows_after_header"]) if fmt in DELIMITED else 0
        what = {"parquet": "no rows", "json": "no records (an empty array)", "jsonl": "no records"}.get(
            fmt, "a header but no data rows" + (f" after the {skipped} row(s) config key '{key}.skip_rows_after_header' skips" if skipped else "")
        )
        raise DataValidationError(
            f"holds {what}: a declared file must yield rows (remove it from config key '{key}.files' or export its data)",
            where=rel,
        )
    return table


def _read_parquet(path: Path, rel: str, key: str) -> RawTable:
    data, _ = unpacked(path.read_bytes(), rel, key)
    try:
        df = pd.read_parquet(io.BytesIO(data))
    except Exception as exc:  # pyarrow raises several types for corrupt files
        raise DataValidationError(f"not a readable Parquet file ({exc.__class__.__name__})", where=rel) from None
    header = [str(c) for c in df.columns]
    df.columns = header
    df = df.astype("string").fillna("").astype(object)
    df["_line"] = range(1, len(df) + 1)
    df["_file"] = rel
    return RawTable(df, rel, header, header_line=0)


def _utf16_byte_order(data: bytes) -> str | None:
    """``utf-16-le`` / ``utf-16-be`` when the bytes look like mostly-ASCII UTF-16 (NULs on one side), else None."""
    sample = data[:UTF16_SNIFF_BYTES]
    if len(sample) < 2:
        return None
    evens, odds = sample[0::2], sample[1::2]
    nul_even, nul_odd = evens.count(0) / len(evens), odds.count(0) / len(odds)
    if nul_odd > 0.3 and nul_even < 0.05:
        return "utf-16-le"
    if nul_even > 0.3 and nul_odd < 0.05:
        return "utf-16-be"
    return None


def _decode(data: bytes, encoding: str, rel: str, key: str) -> str:
    """The file's text in the declared encoding, or one line saying it is not text in that encoding."""
    codec = codecs.lookup(encoding).name
    name = "UTF-8" if codec == "utf-8" else encoding
    fix = f"declare the file's encoding in config key '{key}.encoding'"
    utf16_bom = data[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
    order = _utf16_byte_order(data)
    if codec.startswith("utf-16"):
        if codec == "utf-16" and not utf16_bom:
            guess = f" (the bytes look like {order})" if order else ""
            raise DataValidationError(
                f"not valid UTF-16 as declared: the file has no byte-order mark, so its byte order is unknown{guess}; "
                f"declare utf-16-le or utf-16-be in config key '{key}.encoding'",
                where=f"{rel}, line 1",
            )
        if codec != "utf-16" and order is not None and order != codec:
            raise DataValidationError(f"not valid {encoding} text: the bytes look like {order}; {fix}", where=f"{rel}, line 1")
        if b"\x00" not in data[:UTF16_SNIFF_BYTES]:  # a delimiter, digit or newline in UTF-16 always has a NUL byte
            raise DataValidationError(
                f"not valid {encoding} text: no NUL byte in its first {UTF16_SNIFF_BYTES} bytes, as UTF-16 exports always have "
                f"(is it UTF-8?); {fix}",
                where=f"{rel}, line 1",
            )
    elif not codec.startswith("utf-32"):
        if utf16_bom:
            raise DataValidationError(
                f"not valid {name} text: the file starts with a UTF-16 byte-order mark; declare encoding: utf-16 in config key '{key}.encoding'",
                where=f"{rel}, line 1",
            )
        if data.startswith(codecs.BOM_UTF8) and codec not in ("utf-8", "utf-8-sig"):
            raise DataValidationError(
                f"not {name} text: the file starts with a UTF-8 byte-order mark; declare encoding: utf-8 in config key '{key}.encoding'",
                where=f"{rel}, line 1",
            )
        nul = data.find(b"\x00")
        if nul >= 0:  # valid UTF-8 and Latin-1 both, but never in a text export: UTF-16 (or binary) read as text
            line = data[:nul].count(b"\n") + 1
            if order is not None:
                hint = f"it looks like UTF-16 without a byte-order mark: declare encoding: {order} in config key '{key}.encoding'"
            else:
                hint = f"UTF-16, or not a text file? {fix}"
            raise DataValidationError(f"not valid {name} text: a NUL byte at byte {nul}; {hint}", where=f"{rel}, line {line}")
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise DataValidationError(f"not valid {name} (byte {exc.start}); {fix}", where=f"{rel}, line {line}") from None
    return text[1:] if text.startswith("\ufeff") else text


def _read_delimited(path: Path, rel: str, source: Mapping[str, Any], key: str) -> RawTable:
    fmt = source["format"]
    delimiter = source.get("delimiter") or ("\t" if fmt == "tsv" else ",")
    max_chars = int(source["max_field_chars"])
    skip = int(source["skip_rows_after_header"])
    data, _ = unpacked(path.read_bytes(), rel, key)
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
                name = quote(header[pos]) if line != header_line else f"#{pos + 1}"
                raise DataValidationError(
                    f"field in column {name} has {len(value)} characters, over the limit of {max_chars}"
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


def _cell(value: Any) -> str:
    """A JSON scalar as the text a delimited export would hold: null is blank, booleans are true/false."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _flatten(value: Any, path: str, out: dict[str, str], where: str) -> None:
    """``value``'s scalars into ``out`` under dotted paths (objects by key, lists by position)."""
    if isinstance(value, dict):
        items = [(str(k), v) for k, v in value.items()]
    elif isinstance(value, list):
        items = [(str(i), v) for i, v in enumerate(value)]
    else:
        if path in out:
            raise DataValidationError(
                f"field path {quote(path)} occurs twice in the record (a key holding a dot, and a nested object?)", where=where
            )
        out[path] = _cell(value)
        return
    for name, item in items:
        _flatten(item, f"{path}.{name}" if path else name, out, where)


def _array_at(text: str, rel: str, path: str, key: str) -> int:
    """Where the array at dotted ``path`` starts in the JSON object ``text`` holds (config key ``key``.records)."""
    decoder = json.JSONDecoder()

    def skip(i: int) -> int:
        while i < len(text) and text[i] in " \t\r\n":
            i += 1
        return i

    i, parts = skip(0), path.split(".")
    for depth, part in enumerate(parts):
        if not text.startswith("{", i):
            raise DataValidationError(f"records path {path!r}: {'.'.join(parts[:depth]) or 'the file'} is not a JSON "
                                      "object", where=f"config key '{key}.records'")
        i, found, names = skip(i + 1), None, []
        while not text.startswith("}", i):
            try:
                name, i = decoder.raw_decode(text, i)
                i = skip(i)
                if not text.startswith(":", i):
                    raise ValueError
                i = skip(i + 1)
                if name == part:
                    found = i
                    break
                names.append(name)
                _, i = decoder.raw_decode(text, i)
            except ValueError:
                raise DataValidationError("malformed JSON", where=f"{rel}, line {text.count(chr(10), 0, i) + 1}") from None
            i = skip(i)
            if text.startswith(",", i):
                i = skip(i + 1)
        if found is None:
            raise DataValidationError(f"records path {path!r}: no member {part!r} (members: {quote_list(names, 8)})",
                                      where=f"config key '{key}.records'")
        i = found
    return i


def _json_records(text: str, rel: str, fmt: str, start: int = 0, records_key: str | None = None,
                  ) -> list[tuple[int, Any]]:
    """(line the record starts on, record) for a JSON array of records (at offset ``start``) or a JSON Lines file."""
    if fmt == "jsonl":
        records = []
        for line, raw in enumerate(text.split("\n"), start=1):
            if not raw.strip():
                continue
            try:
                records.append((line, json.loads(raw)))
            except json.JSONDecodeError as exc:
                raise DataValidationError(f"malformed JSON Lines record ({exc.msg}, column {exc.colno})", where=f"{rel}, line {line}") from None
        return records
    decoder = json.JSONDecoder()

    def skip(i: int) -> int:
        while i < len(text) and text[i] in " \t\r\n":
            i += 1
        return i

    def line_of(i: int) -> int:
        return text.count("\n", 0, i) + 1

    i = skip(start)
    if not text.startswith("[", i):
        hint = _wrapped_hint(text, records_key) if text.startswith("{", i) and start == 0 else ""
        raise DataValidationError(f"a JSON source holds one array of records, [{{...}}, ...]{hint}", where=f"{rel}, line {line_of(i)}")
    records, i, line, counted = [], skip(i + 1), 1, 0
    if text.startswith("]", i):
        i = skip(i + 1)
    else:
        while True:
            try:
                record, end = decoder.raw_decode(text, i)
            except json.JSONDecodeError as exc:
                raise DataValidationError(f"malformed JSON ({exc.msg} column {exc.colno})", where=f"{rel}, line {exc.lineno}") from None
            line += text.count("\n", counted, i)
            counted = i
            records.append((line, record))
            i = skip(end)
            if text.startswith(",", i):
                i = skip(i + 1)
            elif text.startswith("]", i):
                i = skip(i + 1)
                break
            else:
                raise DataValidationError("malformed JSON (expected ',' or ']' after a record)", where=f"{rel}, line {line_of(i)}")
    if i < len(text) and start == 0:
        raise DataValidationError("malformed JSON (text after the array of records)", where=f"{rel}, line {line_of(i)}")
    return records


def _wrapped_hint(text: str, key: str | None) -> str:
    """What to declare for a file that is a JSON object: the member holding an array of objects (records: name),
    or format jsonl when the file is one object per line."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError:
        return " (one record per line is format: jsonl)"
    arrays = [name for name, value in document.items()
              if isinstance(value, list) and value and all(isinstance(v, dict) for v in value)]
    if arrays:
        return (f" (this file wraps it in an object: declare config key '{key}.records: {arrays[0]}')" if key else
                f" (this file wraps it in an object: declare records: {arrays[0]})")
    return " (one record per line is format: jsonl)"


def _read_json(path: Path, rel: str, source: Mapping[str, Any], key: str) -> RawTable:
    """A JSON array of records or a JSON Lines file, nested fields flattened to dotted paths."""
    fmt = source["format"]
    max_chars = int(source["max_field_chars"])
    data, _ = unpacked(path.read_bytes(), rel, key)
    if not data.strip():
        raise DataValidationError("file is empty", where=rel)
    rows, lines, header = [], [], {}
    text = _decode(data, source["encoding"], rel, key)
    records_path = source.get("records")
    if records_path and fmt != "json":
        raise DataValidationError(f"records: applies to format json, not {fmt!r}; remove it", where=f"config key '{key}.records'")
    start = _array_at(text, rel, records_path, key) if records_path else 0
    for line, record in _json_records(text, rel, fmt, start, key):
        where = f"{rel}, line {line}"
        if not isinstance(record, dict):
            raise DataValidationError(f"a record must be a JSON object ({{...}}), got {type(record).__name__}", where=where)
        flat: dict[str, str] = {}
        _flatten(record, "", flat, where)
        for name, value in flat.items():
            if len(value) > max_chars:
                raise DataValidationError(
                    f"field {quote(name)} has {len(value)} characters, over the limit of {max_chars} (config key '{key}.max_field_chars')",
                    where=where,
                )
            header.setdefault(name, None)
        rows.append(flat)
        lines.append(line)
    names = list(header)
    df = pd.DataFrame([[row.get(n, "") for n in names] for row in rows], columns=names, dtype=object)
    df["_line"] = lines
    df["_file"] = rel
    return RawTable(df, rel, names, header_line=lines[0] if lines else 1)
