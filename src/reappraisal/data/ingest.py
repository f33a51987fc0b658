"""Raw export files -> canonical tables, driven by a declared column mapping.

The real OSF layout is not known in advance, so nothing here names a file or
a column: ``data.ingest`` in the config lists, per canonical table, sources
(a glob under the raw folder, the columns that hold each canonical field,
constants such as the study id, and for ratings the wide dimension columns to
melt into long format and the declared rating scale). Every problem is
reported as one line naming the file and line, or the config key.
"""

from __future__ import annotations

import argparse
import csv
import io
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from ..atomic import atomic_path
from ..params import parse_params
from ..errors import ConfigError, DataValidationError
from .tables import POOLS, RATINGS, REAPPRAISALS, VIGNETTES, strip_origin, validate_table, where

HEADER_LINES = 1  # CSV line numbers: header is line 1, first data row is line 2


def read_source_file(path: Path, fmt: str, raw_dir: Path) -> pd.DataFrame:
    """Read one raw file as strings, with ``_file`` / ``_line`` origin columns."""
    rel = str(path.relative_to(raw_dir)) if path.is_relative_to(raw_dir) else str(path)
    if fmt == "parquet":
        try:
            df = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises several types for corrupt files
            raise DataValidationError(f"not a readable Parquet file ({exc.__class__.__name__})", where=rel) from None
        df = df.astype("string")
        df["_line"] = range(1, len(df) + 1)
    else:
        data = path.read_bytes()
        if not data.strip():
            raise DataValidationError("file is empty", where=rel)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise DataValidationError(f"invalid UTF-8 (byte {exc.start})", where=f"{rel}, line {line}") from None
        if text.startswith("\ufeff"):
            text = text[1:]
        try:
            df = pd.read_csv(
                io.StringIO(text),
                sep="\t" if fmt == "tsv" else ",",
                dtype=str,
                keep_default_na=False,
                on_bad_lines="error",
                engine="python",
            )
        except pd.errors.EmptyDataError:
            raise DataValidationError("file is empty", where=rel) from None
        except (pd.errors.ParserError, csv.Error) as exc:
            raise DataValidationError(f"malformed {fmt.upper()} ({_first_line(exc)})", where=rel) from None
        df["_line"] = range(HEADER_LINES + 1, HEADER_LINES + 1 + len(df))
    df["_file"] = rel
    return df


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__


def _resolve_files(raw_dir: Path, pattern: str, key: str) -> list[Path]:
    if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
        raise ConfigError(f"pattern {pattern!r} must be relative to the raw folder", where=f"config key '{key}.files'")
    files = sorted(p for p in raw_dir.glob(pattern) if p.is_file())
    if not files:
        raise ConfigError(f"pattern {pattern!r} matches no file in {raw_dir}", where=f"config key '{key}.files'")
    return files


def _take_columns(df: pd.DataFrame, columns: Mapping[str, str], key: str) -> pd.DataFrame:
    src = df["_file"].iloc[0] if len(df) else "?"
    missing = [col for col in columns.values() if col not in df.columns]
    if missing:
        avail = [c for c in df.columns if not c.startswith("_")]
        raise DataValidationError(
            f"missing column(s) {missing} declared in config key '{key}.columns' (file has {avail})", where=src
        )
    out = pd.DataFrame({canon: df[col] for canon, col in columns.items()})
    out["_file"] = df["_file"]
    out["_line"] = df["_line"]
    return out


def _load(raw_dir: Path, sources: Sequence[Mapping[str, Any]], table: str) -> list[tuple[str, Mapping[str, Any], pd.DataFrame]]:
    loaded = []
    for i, source in enumerate(sources):
        key = f"data.ingest.{table}[{i}]"
        for path in _resolve_files(raw_dir, source["files"], key):
            loaded.append((key, source, read_source_file(path, source.get("format", "csv"), raw_dir)))
    return loaded


def ingest_vignettes(raw_dir: Path, sources) -> pd.DataFrame:
    frames = []
    for key, source, df in _load(raw_dir, sources, "vignettes"):
        part = _take_columns(df, source["columns"], key)
        if "pool" not in part.columns:
            part["pool"] = source.get("pool", "train")
        if "emotion" not in part.columns:
            part["emotion"] = ""
        frames.append(part)
    if not frames:
        raise ConfigError("no vignette source declared", where="config key 'data.ingest.vignettes'")
    df = validate_table(pd.concat(frames, ignore_index=True), VIGNETTES)
    bad = ~df["pool"].isin(POOLS)
    if bad.any():
        row = df.loc[bad.idxmax()]
        raise DataValidationError(f"pool must be one of {list(POOLS)}, got {row['pool']!r}", where=where(row, "vignettes"))
    return df


def ingest_reappraisals(raw_dir: Path, sources) -> pd.DataFrame:
    frames = []
    for key, source, df in _load(raw_dir, sources, "reappraisals"):
        columns = dict(source["columns"])
        if "author_type_column" in source:
            columns["author_type"] = source["author_type_column"]
        part = _take_columns(df, columns, key)
        if "author_type" not in part.columns:
            if "author_type" not in source:
                raise ConfigError("declare author_type or author_type_column", where=f"config key '{key}'")
            part["author_type"] = source["author_type"]
        if "study" not in part.columns:
            part["study"] = source.get("study", "")
        frames.append(part)
    if not frames:
        raise ConfigError("no reappraisal source declared", where="config key 'data.ingest.reappraisals'")
    return validate_table(pd.concat(frames, ignore_index=True), REAPPRAISALS)


def ingest_ratings(raw_dir: Path, sources, dimensions: Sequence[str]) -> pd.DataFrame:
    frames = []
    for key, source, df in _load(raw_dir, sources, "ratings"):
        unknown = [d for d in source["dimensions"] if d not in dimensions]
        if unknown:
            raise ConfigError(f"dimension(s) {unknown} not in data.dimensions {list(dimensions)}", where=f"config key '{key}.dimensions'")
        lo, hi = source["scale"]
        if lo >= hi:
            raise ConfigError(f"scale {source['scale']} must be [low, high] with low < high", where=f"config key '{key}.scale'")
        wide = _take_columns(df, {**source["columns"], **{f"dim:{d}": c for d, c in source["dimensions"].items()}}, key)
        if "study" not in wide.columns:
            wide["study"] = source.get("study", "")
        id_cols = ["study", "rater_id", "reappraisal_id", "_file", "_line"]
        long = wide.melt(id_vars=id_cols, var_name="dimension", value_name="rating")
        long["dimension"] = long["dimension"].str.removeprefix("dim:")
        # Blank cells are missing ratings (a rater may skip a dimension), not errors.
        long = long[long["rating"].astype(str).str.strip() != ""].copy()
        numeric = pd.to_numeric(long["rating"], errors="coerce")
        if numeric.isna().any():
            row = long.loc[numeric.isna().idxmax()]
            raise DataValidationError(
                f"rating for {row['dimension']!r} must be a number, got {row['rating']!r}", where=where(row, "ratings")
            )
        out_of_scale = (numeric < lo) | (numeric > hi)
        if out_of_scale.any():
            row = long.loc[out_of_scale.idxmax()]
            raise DataValidationError(
                f"rating {row['rating']} for {row['dimension']!r} is outside the declared scale [{lo}, {hi}]",
                where=where(row, "ratings"),
            )
        long["rating"] = numeric
        frames.append(long)
    if not frames:
        raise ConfigError("no rating source declared", where="config key 'data.ingest.ratings'")
    df = pd.concat(frames, ignore_index=True).sort_values(["_file", "_line", "dimension"], kind="stable")
    return validate_table(df, RATINGS)


def check_references(vignettes: pd.DataFrame, reappraisals: pd.DataFrame, ratings: pd.DataFrame) -> None:
    """Every reappraisal's vignette exists; every rating's reappraisal exists."""
    unknown_v = ~reappraisals["vignette_id"].isin(set(vignettes["vignette_id"]))
    if unknown_v.any():
        row = reappraisals.loc[unknown_v.idxmax()]
        raise DataValidationError(f"unknown scenario id {row['vignette_id']!r}", where=where(row, "reappraisals"))
    unknown_r = ~ratings["reappraisal_id"].isin(set(reappraisals["reappraisal_id"]))
    if unknown_r.any():
        row = ratings.loc[unknown_r.idxmax()]
        raise DataValidationError(f"rating of unknown reappraisal id {row['reappraisal_id']!r}", where=where(row, "ratings"))


def ingest(raw_dir: str | Path, data_cfg: Mapping[str, Any]) -> dict[str, pd.DataFrame]:
    """Read and validate all declared sources; return the three canonical tables."""
    raw_dir = Path(raw_dir)
    if not raw_dir.is_dir():
        raise DataValidationError("raw data folder does not exist (run fetch_data first)", where=str(raw_dir))
    mapping = data_cfg["ingest"]
    vignettes = ingest_vignettes(raw_dir, mapping["vignettes"])
    reappraisals = ingest_reappraisals(raw_dir, mapping["reappraisals"])
    ratings = ingest_ratings(raw_dir, mapping["ratings"], data_cfg["dimensions"])
    check_references(vignettes, reappraisals, ratings)
    return {
        "vignettes": strip_origin(vignettes, VIGNETTES),
        "reappraisals": strip_origin(reappraisals, REAPPRAISALS),
        "ratings": strip_origin(ratings, RATINGS),
    }


def write_tables(tables: Mapping[str, pd.DataFrame], out_dir: str | Path) -> None:
    """Write all tables or none: each goes to a temp file, renamed only when all are written."""
    out_dir = Path(out_dir)
    with atomic_path(out_dir / "vignettes.parquet") as v, atomic_path(out_dir / "reappraisals.parquet") as r, atomic_path(
        out_dir / "ratings.parquet"
    ) as t:
        tables["vignettes"].to_parquet(v, index=False)
        tables["reappraisals"].to_parquet(r, index=False)
        tables["ratings"].to_parquet(t, index=False)


def cli_main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(prog="reappraisal ingest", description=__doc__.splitlines()[0])
    ap.add_argument("--raw-dir", required=True)
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--params", required=True, help="JSON with the `data` config section")
    args = ap.parse_args(argv)
    cfg = parse_params(args.params)
    tables = ingest(args.raw_dir, cfg["data"])
    write_tables(tables, args.out_dir)
    counts = {k: len(v) for k, v in tables.items()}
    print(f"ingest: {counts}")
    return 0
