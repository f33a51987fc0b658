"""Rating files of three layouts reshaped to long ratings (one row per rater × reappraisal × dimension).

Layouts (``layout`` of a rating source):

- ``wide`` (default): one row per rater × reappraisal, one column per
  dimension (``dimensions: {effectiveness: eff, ...}``);
- ``long``: one row per rater × reappraisal × dimension, with a column of
  dimension labels (``columns.dimension``) and one of values
  (``columns.rating``); ``dimension_labels`` maps the file's labels to the
  pipeline's dimensions;
- ``matrix``: one row per rater, one column per reappraisal (or per
  reappraisal × dimension), as survey tools export them; ``items.pattern`` is
  a regular expression that the item columns match in full, with a named
  group ``reappraisal_id`` and either a group ``dimension`` (a label, mapped
  by ``dimension_labels``) or a constant ``items.dimension``.

Every rating source declares its study (``study:`` or ``columns.study``):
raters of different studies are never pooled under one blank study. A rating
source may also declare its scenario column (``columns.vignette_id``, any
layout: the scenario of the row); ingest then checks it against the
reappraisal's own scenario. Ids are stripped of surrounding whitespace (see
:mod:`reappraisal.data.mapping`), item ids from matrix column names too. Blank
cells (and cells holding a declared missing-value code) are not ratings;
they are dropped and counted (``blank_rating_cells``); a file left with no
rating at all is refused (a study never vanishes in silence). The result
keeps each rating's origin (``_file``, ``_line``, ``_column``), the scenario
the file names for it (``_vignette_id``, blank when undeclared), the cells
a hashed reappraisal id was derived from (``_reappraisal_id_from``, blank for
the file's own ids) and an ``_order`` within its line for a stable row order.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import ConfigError, DataValidationError
from .mapping import SourceView
from .quoting import quote, quote_list

LAYOUTS = ("wide", "long", "matrix")
LONG_COLUMNS = ["study", "rater_id", "reappraisal_id", "dimension", "rating", "_vignette_id", "_reappraisal_id_from",
                "_file", "_line", "_column", "_order"]


def check_rating_source(source: Mapping[str, Any], key: str, dimensions: Sequence[str]) -> str:
    """Refuse a rating source whose declaration cannot be read unambiguously; return its layout."""
    layout = source["layout"]
    if layout not in LAYOUTS:
        raise ConfigError(f"layout must be one of {list(LAYOUTS)}, got {layout!r}", where=f"config key '{key}.layout'")
    columns = source.get("columns") or {}
    if "study" not in source and "study" not in columns:
        raise ConfigError(
            "a rating source must declare its study (`study: <id>` or `columns: {study: <column>}`): "
            "raters are z-scored within their study, so studies must not be pooled",
            where=f"config key '{key}'",
        )
    if "study" in source and not str(source["study"]).strip():
        raise ConfigError("study must not be empty", where=f"config key '{key}.study'")
    needed = {"wide": ["rater_id", "reappraisal_id"], "long": ["rater_id", "reappraisal_id", "dimension", "rating"], "matrix": ["rater_id"]}
    missing = [c for c in needed[layout] if c not in columns]
    if missing:
        raise ConfigError(f"layout {layout!r} needs column(s) {missing}", where=f"config key '{key}.columns'")
    if layout == "wide":
        dims = source.get("dimensions") or {}
        if not dims:
            raise ConfigError("layout 'wide' needs dimensions: {<dimension>: <column>}", where=f"config key '{key}.dimensions'")
        unknown = [d for d in dims if d not in dimensions]
        if unknown:
            raise ConfigError(f"dimension(s) {unknown} not in data.dimensions {list(dimensions)}", where=f"config key '{key}.dimensions'")
    else:
        if "dimensions" in source:
            raise ConfigError(f"layout {layout!r} reads dimensions from labels; use dimension_labels", where=f"config key '{key}.dimensions'")
        _labels(source, key, dimensions)
    if layout == "matrix":
        _item_pattern(source, key, dimensions)
    return layout


def reshape_ratings(view: SourceView, dimensions: Sequence[str]) -> pd.DataFrame:
    """Long ratings (strings) of one file of one source, blanks dropped and counted in ``view.counts``."""
    layout = check_rating_source(view.source, view.key, dimensions)
    long = {"wide": _wide, "long": _long, "matrix": _matrix}[layout](view, dimensions)
    blank = long["rating"].astype(str).str.strip() == ""
    view.counts["blank_rating_cells"] = int(blank.sum())
    long = long[~blank]
    view.counts["ratings"] = len(long)
    if "_reappraisal_id_from" not in long.columns:  # the id is the file's own, not derived
        long = long.assign(_reappraisal_id_from="")
    if long.empty:
        raise DataValidationError(
            f"no rating in {view.counts['rows_kept_by_filters']} row(s): every rating cell is blank or a missing code "
            f"(config key '{view.key}.missing_values'); a declared file must yield ratings",
            where=view.path,
        )
    return long[LONG_COLUMNS]


def _study(view: SourceView, index: pd.Index) -> pd.Series:
    columns = view.source.get("columns") or {}
    if "study" in columns:
        return _required(view, "study", view.column(columns["study"], f"{view.key}.columns.study").str.strip())
    return pd.Series(str(view.source["study"]).strip(), index=index, dtype=object)


def _required(view: SourceView, what: str, values: pd.Series) -> pd.Series:
    """``values`` of the declared column ``columns.<what>``, refusing a blank cell."""
    empty = values == ""
    if empty.any():
        line = int(view.frame.loc[empty.idxmax(), "_line"])
        column = view.source["columns"][what]
        raise DataValidationError(
            f"{what} is empty in column {quote(column)} (config key '{view.key}.columns.{what}')",
            where=f"{view.path}, line {line}",
        )
    return values


def _ids(view: SourceView, names: Sequence[str]) -> pd.DataFrame:
    columns = view.source["columns"]
    declared = [n for n in (*names, "vignette_id") if n in columns]
    out = view.fields({n: columns[n] for n in declared}, f"{view.key}.columns")
    out["study"] = _study(view, out.index)
    out["_vignette_id"] = _required(view, "vignette_id", out["vignette_id"]) if "vignette_id" in columns else ""
    return out.drop(columns=["vignette_id"], errors="ignore")


def _wide(view: SourceView, dimensions: Sequence[str]) -> pd.DataFrame:
    ids = _ids(view, ["rater_id", "reappraisal_id"])
    parts = []
    # Within a line, ratings keep the order of the dimensions' names.
    for dim, col in sorted(view.source["dimensions"].items()):
        part = ids.copy()
        part["dimension"] = dim
        part["rating"] = view.column(col, f"{view.key}.dimensions.{dim}")
        part["_column"] = col
        part["_order"] = 0
        parts.append(part)
    return pd.concat(parts, ignore_index=True).sort_values(["_line", "dimension"], kind="stable")


def _labels(source: Mapping[str, Any], key: str, dimensions: Sequence[str]) -> dict[str, str]:
    labels = source.get("dimension_labels")
    if labels is None:
        return {d: d for d in dimensions}
    unknown = sorted({d for d in labels.values() if d not in dimensions})
    if unknown:
        raise ConfigError(f"maps to {unknown}, not in data.dimensions {list(dimensions)}", where=f"config key '{key}.dimension_labels'")
    return {str(k).strip(): v for k, v in labels.items()}


def _map_labels(labels: pd.Series, mapping: Mapping[str, str], view: SourceView, what: str) -> pd.Series:
    stripped = labels.astype(str).str.strip()
    mapped = stripped.map(mapping)
    if mapped.isna().any():
        at = mapped.isna().idxmax()
        known = ", ".join(quote(k) for k in mapping)
        key = f"{view.key}.dimension_labels" if "dimension_labels" in view.source else "data.dimensions"
        raise DataValidationError(
            f"{what} {quote(stripped[at])} is not a declared dimension label (config key '{key}': {known}); "
            "map it, or drop its rows with a filter",
            where=f"{view.path}, line {int(view.frame.loc[at, '_line'])}",
        )
    return mapped


def _long(view: SourceView, dimensions: Sequence[str]) -> pd.DataFrame:
    columns = view.source["columns"]
    out = _ids(view, ["rater_id", "reappraisal_id"])
    out["dimension"] = _map_labels(view.column(columns["dimension"], f"{view.key}.columns.dimension"), _labels(view.source, view.key, dimensions), view, "dimension label")
    out["rating"] = view.column(columns["rating"], f"{view.key}.columns.rating")
    out["_column"] = columns["rating"]
    out["_order"] = 0
    return out


def _item_pattern(source: Mapping[str, Any], key: str, dimensions: Sequence[str]) -> re.Pattern:
    items = source.get("items") or {}
    if "pattern" not in items:
        raise ConfigError("layout 'matrix' needs items: {pattern: <regex>}", where=f"config key '{key}.items'")
    try:
        pattern = re.compile(items["pattern"])
    except re.error as exc:
        raise ConfigError(f"not a regular expression ({exc})", where=f"config key '{key}.items.pattern'") from None
    if "reappraisal_id" not in pattern.groupindex:
        raise ConfigError("the pattern needs a named group (?P<reappraisal_id>...)", where=f"config key '{key}.items.pattern'")
    has_group = "dimension" in pattern.groupindex
    if has_group == ("dimension" in items):
        raise ConfigError(
            "declare the dimension either as a named group (?P<dimension>...) in the pattern or as items.dimension, not both or neither",
            where=f"config key '{key}.items'",
        )
    if "dimension" in items and items["dimension"] not in dimensions:
        raise ConfigError(f"{items['dimension']!r} is not in data.dimensions {list(dimensions)}", where=f"config key '{key}.items.dimension'")
    return pattern


def _matrix(view: SourceView, dimensions: Sequence[str]) -> pd.DataFrame:
    key = view.key
    items = view.source["items"]
    pattern = _item_pattern(view.source, key, dimensions)
    labels = _labels(view.source, key, dimensions)
    matched: list[tuple[str, str, str]] = []  # (column, reappraisal_id, label)
    for name in dict.fromkeys(view.raw.header):
        m = pattern.fullmatch(name)
        if m:
            matched.append((name, m.group("reappraisal_id").strip(), m.group("dimension") if "dimension" in pattern.groupindex else None))
    if not matched:
        raise ConfigError(
            f"pattern {quote(items['pattern'])} matches no column of {view.path} (columns: {quote_list(view.raw.header)})",
            where=f"config key '{key}.items.pattern'",
        )
    where_header = f"{view.path}, line {view.raw.header_line}"
    cols, rids, dims, seen = [], [], [], {}
    for name, rid, label in matched:
        if not rid:
            raise DataValidationError(f"column {quote(name)} matches items.pattern with an empty reappraisal_id", where=where_header)
        if label is None:
            dim = items["dimension"]
        else:
            dim = labels.get(label.strip())
            if dim is None:
                raise DataValidationError(
                    f"column {quote(name)}: dimension label {quote(label)} is not declared (config key '{key}.dimension_labels': "
                    f"{', '.join(quote(k) for k in labels)})",
                    where=where_header,
                )
        if (rid, dim) in seen:
            raise DataValidationError(f"columns {quote(seen[(rid, dim)])} and {quote(name)} both hold {dim} of {quote(rid)}", where=where_header)
        seen[(rid, dim)] = name
        cols.append(name)
        rids.append(rid)
        dims.append(dim)
    ids = _ids(view, ["rater_id"])
    values = view.cells(cols, f"{key}.items.pattern")
    n_rows, n_cols = values.shape
    out = pd.DataFrame(
        {
            "study": np.repeat(ids["study"].to_numpy(dtype=object), n_cols),
            "rater_id": np.repeat(ids["rater_id"].to_numpy(dtype=object), n_cols),
            "reappraisal_id": np.tile(np.array(rids, dtype=object), n_rows),
            "dimension": np.tile(np.array(dims, dtype=object), n_rows),
            "rating": values.ravel(),
            "_vignette_id": np.repeat(ids["_vignette_id"].to_numpy(dtype=object), n_cols),
            "_file": view.path,
            "_line": np.repeat(ids["_line"].to_numpy(), n_cols),
            "_column": np.tile(np.array(cols, dtype=object), n_rows),
            "_order": np.tile(np.arange(n_cols), n_rows),
        }
    )
    return out
