"""Raw export files -> canonical tables, driven by the declared mapping alone.

The real OSF layout is not known in advance, so nothing here names a file or
a column: ``data.ingest`` in the config lists, per canonical table, sources.
A source names its files (a glob under the raw folder) and how to read them
(:mod:`reappraisal.data.sources`), which rows to keep and which cells are
missing codes, the column (or derivation) of each canonical field
(:mod:`reappraisal.data.mapping`), constants (study, author type, pool,
emotion), and for ratings the layout to reshape (:mod:`reappraisal.data.reshape`).
Scenarios or reappraisals repeated on other rows are collapsed with
``distinct: true``. Ids are stripped of surrounding whitespace before any
comparison. A reference to an id no source defines names the file that uses
it and the files that should define it; a rating whose file names a scenario
(``columns.vignette_id``) must name its reappraisal's scenario. Every problem
is one line naming the file and line (or column), or the config key; nothing
is written unless everything is valid. The counts of what was read, filtered
and left blank go to a checks file.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from ..atomic import atomic_path
from ..errors import ConfigError, DataValidationError
from ..settings import DataSettings, IngestSettings, Settings
from ..params import parse_params
from .ids import case_variants, date_mangling, numeric_mangling, serial_date, serial_date_mangling, variant_of, zero_variants
from .leakage import normalized_text
from .mapping import SourceView, collapse_distinct
from .quoting import quote
from .rating_hints import not_a_number_hint
from .reshape import check_rating_source, reshape_ratings
from .sources import DELIMITED, read_source_file
from .table_schemas import HUMAN, POOLS, RATINGS, REAPPRAISALS, VIGNETTES, in_key_order, strip_origin, validate_table, where

#: Training scenarios need this many human reappraisals: one for train, one for validation.
MIN_HUMAN_PER_TRAINING_SCENARIO = 2


def _resolve_files(raw_dir: Path, pattern: str, key: str) -> list[Path]:
    if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
        raise ConfigError(f"pattern {pattern!r} must be relative to the raw folder", where=f"config key '{key}.files'")
    files = sorted(p for p in raw_dir.glob(pattern) if p.is_file())
    if not files:
        raise ConfigError(f"pattern {pattern!r} matches no file in {raw_dir}", where=f"config key '{key}.files'")
    return files


def _views(raw_dir: Path, sources: Sequence[Mapping[str, Any]], table: str) -> list[tuple[str, Mapping[str, Any], list[SourceView]]]:
    """Per declared source: its config key, declaration, and one filtered view per matching file."""
    if not sources:
        raise ConfigError(f"no {table} source declared", where=f"config key 'data.ingest.{table}'")
    out = []
    for i, source in enumerate(sources):
        key = f"data.ingest.{table}[{i}]"
        views = [SourceView(read_source_file(p, source, raw_dir, key), source, key) for p in _resolve_files(raw_dir, source["files"], key)]
        out.append((key, source, views))
    return out


def _fields(source: Mapping[str, Any], view: SourceView, key: str, id_col: str) -> pd.DataFrame:
    if "columns" not in source or id_col not in source["columns"]:
        raise ConfigError(f"declare columns.{id_col}", where=f"config key '{key}.columns'")
    return view.fields(source["columns"], f"{key}.columns")


def _collapse(source: Mapping[str, Any], parts: list[pd.DataFrame], id_col: str, what: str) -> list[pd.DataFrame]:
    if not source.get("distinct"):
        return parts
    return [collapse_distinct(pd.concat(parts, ignore_index=True), id_col, what)]


def _with_constants(part: pd.DataFrame, source: Mapping[str, Any], columns: Sequence[str]) -> pd.DataFrame:
    """The columns a file lacks, filled with the source's declared constant (the schema's default when undeclared)."""
    for column in columns:
        if column not in part.columns:
            part[column] = str(source[column]).strip()
    return part


def ingest_vignettes(raw_dir: Path, sources, counts: list[dict]) -> pd.DataFrame:
    frames = []
    for key, source, views in _views(raw_dir, sources, "vignettes"):
        parts = []
        for view in views:
            parts.append(_with_constants(_fields(source, view, key, "vignette_id"), source, ("pool", "emotion")))
            counts.append(view.counts)
        frames += _collapse(source, parts, "vignette_id", "scenario")
    df = validate_table(pd.concat(frames, ignore_index=True), VIGNETTES)
    bad = ~df["pool"].isin(POOLS)
    if bad.any():
        row = df.loc[bad.idxmax()]
        raise DataValidationError(f"pool must be one of {list(POOLS)}, got {row['pool']!r}", where=where(row, "vignettes"))
    return df


def ingest_reappraisals(raw_dir: Path, sources, counts: list[dict]) -> pd.DataFrame:
    frames = []
    for key, source, views in _views(raw_dir, sources, "reappraisals"):
        if "author_type_column" not in source and "author_type" not in source:
            raise ConfigError("declare author_type or author_type_column", where=f"config key '{key}'")
        parts = []
        for view in views:
            part = _fields(source, view, key, "reappraisal_id")
            if "author_type_column" in source:
                part["author_type"] = view.column(source["author_type_column"], f"{key}.author_type_column").str.strip()
            else:
                part["author_type"] = str(source["author_type"]).strip()
            parts.append(_with_constants(part, source, ("study",)))
            counts.append(view.counts)
        frames += _collapse(source, parts, "reappraisal_id", "reappraisal")
    return validate_table(pd.concat(frames, ignore_index=True), REAPPRAISALS)


def _where_cell(row: pd.Series) -> str:
    return f"{row['_file']}, line {int(row['_line'])}, column {quote(row['_column'])}"


def ingest_ratings(raw_dir: Path, sources, dimensions: Sequence[str], counts: list[dict]) -> pd.DataFrame:
    frames = []
    for i, source in enumerate(sources or []):
        key = f"data.ingest.ratings[{i}]"
        check_rating_source(source, key, dimensions)  # before reading: a mapping error names the key, not a file
        if "scale" not in source:
            raise ConfigError("declare scale: [low, high]", where=f"config key '{key}.scale'")
        lo, hi = source["scale"]
        if lo >= hi:
            raise ConfigError(f"scale {source['scale']} must be [low, high] with low < high", where=f"config key '{key}.scale'")
    for key, source, views in _views(raw_dir, sources, "ratings"):
        lo, hi = source["scale"]
        for view in views:
            long = reshape_ratings(view, dimensions).copy()
            counts.append(view.counts)
            texts = long["rating"].astype(str).str.strip()
            if source["decimal"] == ",":
                texts = texts.str.replace(",", ".", regex=False)
            numeric = pd.to_numeric(texts, errors="coerce")
            if numeric.isna().any():
                skipped = int(source["skip_rows_after_header"]) if source["format"] in DELIMITED else None
                row = long.loc[numeric.isna().idxmax()]
                raise DataValidationError(
                    f"rating for {row['dimension']!r} must be a number, got {quote(row['rating'])}"
                    f" ({not_a_number_hint(long['rating'], numeric, long['_line'], row['rating'], key, skipped)})",
                    where=_where_cell(row),
                )
            out_of_scale = (numeric < lo) | (numeric > hi)
            if out_of_scale.any():
                row = long.loc[out_of_scale.idxmax()]
                raise DataValidationError(
                    f"rating {row['rating']} for {row['dimension']!r} is outside the declared scale [{lo}, {hi}]"
                    f" (config key '{key}.scale')",
                    where=_where_cell(row),
                )
            long["rating"] = numeric
            frames.append(long)
    df = pd.concat(frames, ignore_index=True).sort_values(["_file", "_line", "_order"], kind="stable")
    return validate_table(df, RATINGS)


#: Files named when an error says where an id should have been defined.
LISTED_FILES = 3
#: Above this many known ids an unknown id gets no "did you mean" (the search is quadratic-ish).
MAX_IDS_FOR_A_SUGGESTION = 20_000


def _unknown_id(what: str, value: str, using: pd.Series, using_table: str, defining: pd.DataFrame, id_col: str, table: str) -> DataValidationError:
    """An id used on ``using``'s row that no row of ``defining`` holds: both files named, a near id suggested."""
    files = list(dict.fromkeys(defining["_file"])) if "_file" in defining.columns else [f"table {table}"]
    listed = ", ".join(files[:LISTED_FILES]) + (f" and {len(files) - LISTED_FILES} more" if len(files) > LISTED_FILES else "")
    known = defining[id_col].astype(str).unique().tolist()
    near = [v for v in [variant_of(value, known)] if v is not None] if len(known) <= MAX_IDS_FOR_A_SUGGESTION else []
    if not near and len(known) <= MAX_IDS_FOR_A_SUGGESTION:
        near = difflib.get_close_matches(str(value), known, n=1)
    hint = f"; did you mean {quote(near[0])}?" if near else ""
    derived = using.get(f"_{id_col}_from")
    source = f" (derived by hashing {derived})" if isinstance(derived, str) and derived else ""
    return DataValidationError(
        f"unknown {what} {quote(value)}{source}: defined by no {table} source ({listed}){hint}",
        where=where(using, using_table)
    )


def check_references(vignettes: pd.DataFrame, reappraisals: pd.DataFrame, ratings: pd.DataFrame) -> None:
    """Every reappraisal's scenario exists; every rating's reappraisal exists, of the scenario its file names."""
    unknown_v = ~reappraisals["vignette_id"].isin(set(vignettes["vignette_id"]))
    if unknown_v.any():
        row = reappraisals.loc[unknown_v.idxmax()]
        raise _unknown_id("scenario id", row["vignette_id"], row, "reappraisals", vignettes, "vignette_id", "vignettes")
    check_numeric_id_mangling(ratings, reappraisals)
    unknown_r = ~ratings["reappraisal_id"].isin(set(reappraisals["reappraisal_id"]))
    if unknown_r.any():
        row = ratings.loc[unknown_r.idxmax()]
        raise _unknown_id("reappraisal id", row["reappraisal_id"], row, "ratings", reappraisals, "reappraisal_id", "reappraisals")
    if "_vignette_id" in ratings.columns:
        by_id = reappraisals.set_index("reappraisal_id")
        named = ratings["_vignette_id"].astype(str)
        wrong = (named != "") & (named != ratings["reappraisal_id"].map(by_id["vignette_id"]))
        if wrong.any():
            row = ratings.loc[wrong.idxmax()]
            own = by_id.loc[row["reappraisal_id"]]
            raise DataValidationError(
                f"rating of reappraisal {quote(row['reappraisal_id'])} names scenario {quote(row['_vignette_id'])} "
                f"(its source's columns.vignette_id), but the reappraisal belongs to scenario {quote(own['vignette_id'])} "
                f"({where(own, 'reappraisals')})",
                where=where(row, "ratings"),
            )


def check_numeric_id_mangling(ratings: pd.DataFrame, reappraisals: pd.DataFrame) -> None:
    """Stop on rating ids that a spreadsheet turned into numbers: the reappraisals hold decimal ids with trailing
    zeros (``4.10``, ``4.190``), which a number cannot keep, and a ratings file names decimal ids but never such a
    form (``4.1``, ``4.19``): its ``4.10`` became ``4.1``, another, existing reappraisal. Each file is checked on
    its own, its other ids (another study's text ids) left aside (:func:`.ids.numeric_mangling`)."""
    defined = reappraisals["reappraisal_id"].astype(str).unique()
    files = ratings["_file"] if "_file" in ratings.columns else pd.Series("", index=ratings.index)
    for file in dict.fromkeys(files):
        mine = ratings[(files == file).to_numpy()]
        found = numeric_mangling(defined, mine["reappraisal_id"].astype(str).unique())
        if found is not None:
            _numeric_mangling_error(mine, found)


def _numeric_mangling_error(ratings: pd.DataFrame, found: list[str]) -> None:
    padded, numbers = found, {float(v) for v in found}
    hit = ratings["reappraisal_id"].astype(str).map(lambda v: _number(v) in numbers).to_numpy()
    row = ratings.iloc[int(hit.argmax())]  # a rating row whose id may be a zero-padded one's
    raise DataValidationError(
        f"the reappraisals hold decimal ids with trailing zeros ({', '.join(map(quote, padded[:3]))}"
        f"{' ...' if len(padded) > 3 else ''}) but the ratings' reappraisal ids are decimals that never end in 0: a "
        f"spreadsheet read them as numbers ({padded[0]} became {float(padded[0])!r}), crediting their ratings to other "
        "reappraisals; export the ratings' id column as text",
        where=where(row, "ratings"),
    )


def _number(value: str) -> float | None:
    try:
        return float(value)
    except ValueError:
        return None


#: The id columns of each table that a spreadsheet can turn into dates.
ID_COLUMNS = {"vignettes": ("vignette_id",), "reappraisals": ("vignette_id", "reappraisal_id"),
              "ratings": ("rater_id", "reappraisal_id")}


#: The column defining the ids an id column refers to: a serial date number is compared with those ids too.
DEFINED_BY = {("ratings", "reappraisal_id"): ("reappraisals", "reappraisal_id"),
              ("reappraisals", "vignette_id"): ("vignettes", "vignette_id")}


def check_date_mangling(tables: Mapping[str, pd.DataFrame]) -> None:
    """Stop on an id column that mixes dates with other ids (:func:`.ids.date_mangling`): a spreadsheet read
    ``4-10`` as a date and showed ``10-Apr``, so the id links to nothing or to another row. The same for a
    column mixing month-day ids with spreadsheet serial day numbers (``45363`` beside ``3-12``) that were not
    read as the ids they stand for (:func:`repair_serial_date_rater_ids`)."""
    for table, columns in ID_COLUMNS.items():
        frame = tables[table]
        for column in columns:
            values = frame[column].astype(str)
            defining = DEFINED_BY.get((table, column))
            known = tables[defining[0]][defining[1]].astype(str).unique() if defining else []
            serials = {v: w for v, w in (serial_date_mangling([*values.unique(), *known]) or {}).items() if (values == v).any()}
            if serials:
                value, written = next(iter(serials.items()))
                row = frame.loc[(values == value).idxmax()]
                raise DataValidationError(_serial_date_message(column, value, written, table), where=where(row, table))
            found = date_mangling(values.unique())
            if found is None:
                continue
            date, other = found
            row = frame.loc[(frame[column].astype(str) == date).idxmax()]
            raise DataValidationError(
                f"{column} {quote(date)} is a date among ids that are not ({quote(other)}, ...): a spreadsheet turned "
                f"ids into dates; export the {table} file's {column} column as text",
                where=where(row, table),
            )


def _serial_date_message(column: str, value: str, written: list[str], table: str) -> str:
    what = f"could be {' or '.join(map(quote, written))}" if written else "stands for none of them"
    return (f"{column} {quote(value)} is a spreadsheet's serial number of the date {serial_date(value).isoformat()} among "
            f"ids written month-day, and {what}: a spreadsheet turned ids into dates; export the {table} file's "
            f"{column} column as text")


def repair_serial_date_rater_ids(ratings: pd.DataFrame) -> list[str]:
    """Read rater ids that a spreadsheet turned into serial day numbers (``45363`` for ``3-12``) as the month-day id
    of the same study they stand for, when exactly one id of the study is that date (:func:`.ids.serial_date_mangling`);
    return a note per study repaired. A number standing for no id or for two is left to :func:`check_date_mangling`."""
    notes = []
    for study in sorted(ratings["study"].unique()):
        mine = (ratings["study"] == study).to_numpy()
        found = serial_date_mangling(ratings.loc[mine, "rater_id"].astype(str).unique())
        if not found or any(len(written) != 1 for written in found.values()):
            continue
        mapping = {value: written[0] for value, written in found.items()}
        hit = mine & ratings["rater_id"].astype(str).isin(mapping).to_numpy()
        files = sorted(set(ratings.loc[hit, "_file"])) if "_file" in ratings.columns else []
        ratings.loc[hit, "rater_id"] = ratings.loc[hit, "rater_id"].astype(str).map(mapping)
        shown = ", ".join(f"{k} -> {v}" for k, v in list(mapping.items())[:5]) + (" ..." if len(mapping) > 5 else "")
        notes.append(f"study {study}: {len(mapping)} rater id(s) a spreadsheet turned into serial date numbers read as "
                     f"the month-day ids they stand for ({shown}; {int(hit.sum())} rating(s) in {', '.join(files)}); "
                     "export the rater id column as text to avoid this")
    return notes


def rater_id_variants(ratings: pd.DataFrame, ingest: IngestSettings) -> list[str]:
    """Rater ids of one study that differ only by case (``S4_P001`` / ``s4_p001``) or by leading zeros (``007`` /
    ``7``, a spreadsheet's number): folded into one rater when declared (``case_insensitive_ids``,
    ``leading_zero_insensitive_ids``: the longest, zero-padded form is kept), else kept apart and listed (some
    exports are case-sensitive; some number their raters anew per file). Returns the warnings."""
    warnings = []
    for study in sorted(ratings["study"].unique()):
        mine = (ratings["study"] == study).to_numpy()
        variants = case_variants(ratings.loc[mine, "rater_id"].unique())
        if variants and ingest.case_insensitive_ids:
            ratings.loc[mine, "rater_id"] = ratings.loc[mine, "rater_id"].str.casefold()
        elif variants:
            shown = "; ".join(" / ".join(v) for v in variants[:5]) + (" ..." if len(variants) > 5 else "")
            warnings.append(f"study {study}: {len(variants)} rater id(s) differ only by case ({shown}); they are "
                            "read as different raters (set data.ingest.case_insensitive_ids: true if they are not)")
        variants = zero_variants(ratings.loc[mine, "rater_id"].unique())
        if variants and ingest.leading_zero_insensitive_ids:
            fold = {v: group[0] for group in variants for v in group[1:]}
            ratings.loc[mine, "rater_id"] = ratings.loc[mine, "rater_id"].replace(fold)
        elif variants:
            rows = ratings[mine]
            shown = "; ".join(" / ".join(f"{quote(v)} ({where(rows.loc[(rows['rater_id'] == v).idxmax()], 'ratings')})"
                                         for v in group) for group in variants[:3]) + (" ..." if len(variants) > 3 else "")
            warnings.append(f"study {study}: {len(variants)} rater id(s) differ only by leading zeros ({shown}); they "
                            "are read as different raters (set data.ingest.leading_zero_insensitive_ids: true if they "
                            "are not: a spreadsheet drops the zeros of a number)")
    return warnings


def check_training_scenarios(vignettes: pd.DataFrame, reappraisals: pd.DataFrame) -> None:
    """Every training scenario has enough human reappraisals, of distinct texts, to appear in train and validation.

    Identical texts land on one side of the split (:mod:`reappraisal.data.split`), so they count once.
    """
    human = reappraisals[reappraisals["author_type"] == HUMAN]
    n_human = human.groupby("vignette_id").size()
    n_texts = human.assign(key=human["text"].map(normalized_text)).groupby("vignette_id")["key"].nunique()
    for _, row in vignettes[vignettes["pool"] == "train"].iterrows():
        n, k = int(n_human.get(row["vignette_id"], 0)), int(n_texts.get(row["vignette_id"], 0))
        if k < MIN_HUMAN_PER_TRAINING_SCENARIO:
            distinct = f" with {k} distinct text(s)" if k < n else ""
            raise DataValidationError(
                f"training scenario {quote(row['vignette_id'])} has {n} human reappraisal(s){distinct} in the reappraisal sources; "
                f"at least {MIN_HUMAN_PER_TRAINING_SCENARIO} distinct texts are needed (one for train, one for validation), "
                "or give it pool 'ood'",
                where=where(row, "vignettes"),
            )


def ingest_with_counts(raw_dir: str | Path, data: DataSettings) -> tuple[dict[str, pd.DataFrame], dict[str, Any]]:
    """Read and validate all declared sources: the three canonical tables and the ingest checks."""
    raw_dir = Path(raw_dir)
    if not raw_dir.is_dir():
        raise DataValidationError("raw data folder does not exist (run fetch_data first)", where=str(raw_dir))
    sources = data.ingest
    counts: dict[str, list[dict]] = {"vignettes": [], "reappraisals": [], "ratings": []}
    vignettes = ingest_vignettes(raw_dir, sources.vignettes, counts["vignettes"])
    reappraisals = ingest_reappraisals(raw_dir, sources.reappraisals, counts["reappraisals"])
    ratings = ingest_ratings(raw_dir, sources.ratings, list(data.dimensions), counts["ratings"])
    notes = repair_serial_date_rater_ids(ratings)
    warnings = rater_id_variants(ratings, sources)
    check_date_mangling({"vignettes": vignettes, "reappraisals": reappraisals, "ratings": ratings})
    check_references(vignettes, reappraisals, ratings)
    check_training_scenarios(vignettes, reappraisals)
    tables = {  # in key order: a re-export of the same data in another row or file order gives the same bytes
        "vignettes": in_key_order(strip_origin(vignettes, VIGNETTES), VIGNETTES),
        "reappraisals": in_key_order(strip_origin(reappraisals, REAPPRAISALS), REAPPRAISALS),
        "ratings": in_key_order(strip_origin(ratings, RATINGS), RATINGS),
    }
    # notes: what was read otherwise than written (absent when nothing was, as in a clean export)
    return tables, {**ingest_checks(tables, counts), "warnings": warnings, **({"notes": notes} if notes else {})}


def ingest(raw_dir: str | Path, data: DataSettings) -> dict[str, pd.DataFrame]:
    """The three canonical tables (see :func:`ingest_with_counts`)."""
    return ingest_with_counts(raw_dir, data)[0]


def ingest_checks(tables: Mapping[str, pd.DataFrame], counts: Mapping[str, list[dict]]) -> dict[str, Any]:
    """What was read, kept by filters, read as missing codes and left blank, per file of each source."""
    sources = [c for table in ("vignettes", "reappraisals", "ratings") for c in counts[table]]
    ratings = counts["ratings"]
    return {
        "rows": {name: int(len(df)) for name, df in tables.items()},
        "blank_rating_cells": int(sum(c.get("blank_rating_cells", 0) for c in ratings)),
        "missing_code_cells": int(sum(c["missing_code_cells"] for c in sources)),
        "rows_dropped_by_filters": int(sum(c["rows_read"] - c["rows_kept_by_filters"] for c in sources)),
        "sources": sources,
    }


def write_outputs(tables: Mapping[str, pd.DataFrame], out_dir: str | Path, checks: Mapping[str, Any] | None = None, checks_path: str | Path | None = None) -> None:
    """Write all tables (and the checks file) or none: temp files, renamed only when all are written."""
    out_dir = Path(out_dir)
    with atomic_path(out_dir / "vignettes.parquet") as v, atomic_path(out_dir / "reappraisals.parquet") as r, atomic_path(
        out_dir / "ratings.parquet"
    ) as t:
        tables["vignettes"].to_parquet(v, index=False)
        tables["reappraisals"].to_parquet(r, index=False)
        tables["ratings"].to_parquet(t, index=False)
        if checks_path is not None:
            with atomic_path(checks_path, suffix=".json") as c:
                c.write_text(json.dumps(checks, indent=2, sort_keys=True) + "\n")


def cli_main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(prog="reappraisal ingest", description=__doc__.splitlines()[0])
    ap.add_argument("--raw-dir", required=True)
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--checks", help="JSON file for the counts (rows read, filtered, blank rating cells, ...)")
    ap.add_argument("--params", required=True, help="JSON with the `data` config section")
    args = ap.parse_args(argv)
    settings = Settings.from_params(parse_params(args.params))
    if settings.data is None:
        raise ConfigError("the 'data' section is missing", where="--params")
    tables, checks = ingest_with_counts(args.raw_dir, settings.data)
    write_outputs(tables, args.out_dir, checks, args.checks)
    for warning in checks["warnings"]:
        print(f"warning: {warning}", file=sys.stderr)
    for note in checks.get("notes", []):
        print(f"note: {note}", file=sys.stderr)
    print(
        f"ingest: {checks['rows']}; blank rating cells {checks['blank_rating_cells']}, "
        f"missing-code cells {checks['missing_code_cells']}, rows dropped by filters {checks['rows_dropped_by_filters']}"
    )
    return 0
