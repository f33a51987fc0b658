"""What the report and the model cards read: the input manifest, the summary's tables and the claims.

The rule hands the report a manifest (``--inputs``, JSON): artifact name ->
either a path (an artifact shown in the appendix, or a known metrics file by
its name) or a record ``{"path", "kind", "arm"?}`` saying what the file is
(``policy_health``, ``training_log``, ``tables_index``, ``claims``, …), so
nothing is inferred back from a name. Each reader checks the columns or keys
the summary's contract promises and raises :class:`DataValidationError`
naming the file and what is missing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from ..errors import DataValidationError, PipelineInputError

#: Columns the summary promises per table (docs/CONVENTIONS.md, summary contract).
HEADLINE_COLUMNS = (
    "arm", "opponent", "judge", "win_rate", "contests", "scenarios", "wilson_low", "wilson_high",
    "headline_low", "headline_high", "headline_method", "boot_low", "boot_high",
    "signflip_p_bar", "signflip_p_half", "signflip_min_p", "errors",
)
PER_SCENARIO_COLUMNS = ("arm", "opponent", "judge", "vignette_id", "pool", "n_contests", "win_rate", "ci_low", "ci_high")
PER_RUN_COLUMNS = ("arm", "opponent", "judge", "run", "n_contests", "win_rate", "ci_low", "ci_high")
INDEX_KEYS = ("name", "title", "caption", "files")
CLAIM_KEYS = ("id", "text", "rule", "value", "verdict", "retraction", "flag", "lineage")
VERDICTS = ("holds", "fails", "retracted", "not_computable")


@dataclass(frozen=True)
class Artifact:
    """One input of the report: where it is and what it is."""

    name: str
    path: Path
    kind: str = "artifact"
    arm: str | None = None


def parse_manifest(raw: Mapping[str, Any]) -> list[Artifact]:
    """The ``--inputs`` manifest as artifacts (every path checked to exist)."""
    out = []
    for name, spec in raw.items():
        if isinstance(spec, str):
            art = Artifact(name=name, path=Path(spec), kind=name)
        elif isinstance(spec, Mapping) and isinstance(spec.get("path"), str):
            art = Artifact(name=name, path=Path(spec["path"]), kind=str(spec.get("kind", name)), arm=spec.get("arm"))
        else:
            raise PipelineInputError(f"report input {name!r} must be a path or {{path, kind}}", where="--inputs")
        if not art.path.exists():
            raise PipelineInputError("report input does not exist", where=str(art.path))
        out.append(art)
    return out


def read_yaml(path: Path) -> Any:
    import yaml

    try:
        return yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise DataValidationError(f"not valid YAML ({type(exc).__name__})", where=str(path)) from None


def read_json(path: Path) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataValidationError(f"not valid JSON ({exc.msg}, line {exc.lineno})", where=str(path)) from None


def read_csv(path: Path, columns: tuple[str, ...] = ()) -> pd.DataFrame:
    """A summary CSV with numbers parsed, checked to hold ``columns``."""
    try:
        df = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        df = pd.DataFrame()
    except (ValueError, OSError) as exc:
        raise DataValidationError(f"cannot be read as CSV ({exc.__class__.__name__}: {exc})", where=str(path)) from None
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise DataValidationError(f"missing column(s) {missing}", where=str(path))
    return df


@dataclass(frozen=True)
class SummaryTable:
    """One entry of ``results/summary/tables/index.json`` with its CSV read."""

    name: str
    title: str
    caption: str
    estimand: str | None
    csv: Path
    frame: pd.DataFrame
    files: Mapping[str, str]
    status: str | None = None
    note: str | None = None
    display: list[tuple[str, tuple[str, ...]]] | None = None


def _display(value: Any, where: str) -> list[tuple[str, tuple[str, ...]]] | None:
    """index.json's optional ``display``: [[heading, [column] or [low, high]], ...]."""
    if value is None:
        return None
    ok = isinstance(value, list) and all(
        isinstance(d, list) and len(d) == 2 and isinstance(d[0], str) and isinstance(d[1], list)
        and len(d[1]) in (1, 2) and all(isinstance(c, str) for c in d[1]) for d in value)
    if not ok:
        raise DataValidationError("display must be a list of [heading, [column] or [low, high]]", where=where)
    return [(h, tuple(cols)) for h, cols in value]


def _resolve(rel: str, index_path: Path) -> Path:
    """A path in index.json: as written (relative to the working directory) or beside index.json."""
    p = Path(rel)
    if p.is_absolute() or p.exists():
        return p
    return index_path.parent / p


def read_tables_index(index_path: Path) -> list[SummaryTable]:
    """Every table ``index.json`` lists, in its order, each CSV read."""
    entries = read_json(index_path)
    if not isinstance(entries, list):
        raise DataValidationError("expected a list of tables", where=str(index_path))
    tables = []
    for i, entry in enumerate(entries):
        where = f"{index_path}: entry {i}"
        if not isinstance(entry, Mapping) or any(k not in entry for k in INDEX_KEYS):
            raise DataValidationError(f"each table needs keys {list(INDEX_KEYS)}", where=where)
        files = entry["files"]
        if not isinstance(files, Mapping) or "csv" not in files:
            raise DataValidationError("files.csv is missing", where=where)
        csv = _resolve(files["csv"], index_path)
        if not csv.is_file():
            raise PipelineInputError("table file does not exist", where=f"{where} ({csv})")
        required = {"headline": HEADLINE_COLUMNS, "per_scenario": PER_SCENARIO_COLUMNS, "per_run": PER_RUN_COLUMNS}
        frame = read_csv(csv, required.get(entry["name"], ()))
        tables.append(
            SummaryTable(
                name=str(entry["name"]), title=str(entry["title"]), caption=str(entry["caption"]),
                estimand=entry.get("estimand"), csv=csv, frame=frame,
                files={k: str(_resolve(v, index_path)) for k, v in files.items()},
                status=entry.get("status"), note=entry.get("note"), display=_display(entry.get("display"), where),
            )
        )
    return tables


def read_claims(path: Path) -> list[dict[str, Any]]:
    """The claims ledger, each claim checked for the keys and verdicts of the contract."""
    doc = read_json(path)
    claims = doc.get("claims") if isinstance(doc, Mapping) else None
    if not isinstance(claims, list):
        raise DataValidationError("expected {\"claims\": [...]}", where=str(path))
    for i, claim in enumerate(claims):
        where = f"{path}: claims[{i}]"
        missing = [k for k in CLAIM_KEYS if not isinstance(claim, Mapping) or k not in claim]
        if missing:
            raise DataValidationError(f"missing key(s) {missing}", where=where)
        if claim["verdict"] not in VERDICTS:
            raise DataValidationError(f"verdict {claim['verdict']!r} is not one of {list(VERDICTS)}", where=where)
        if claim["verdict"] == "retracted" and not (isinstance(claim["retraction"], Mapping) and claim["retraction"].get("reason")):
            raise DataValidationError("a retracted claim needs retraction.reason", where=where)
        if not isinstance(claim["lineage"], list):
            raise DataValidationError("lineage must be a list", where=where)
    return [dict(c) for c in claims]
