"""The ``summarize`` command: contests, judgments and metrics in; tables and the claims ledger out.

Reads, for every configured run (config ``evaluation.runs``),
``<evaluation-dir>/run{run}/contests.parquet`` and
``judgments.parquet`` (the evaluation contract in docs/CONVENTIONS.md), the
three metrics JSONs, each named by its own option (the judge calibration, the
reward-model and the GRM metrics; absent ones make their tables and claims not
computable) and each arm's ``<policy-dir>/<arm>/health.json`` /
``training_log.csv``. The contests are checked
against the judgments they were scored from (a stale or edited contests file
is refused), and each held-out judgment's verdict against what its raw reply
parses to with the judge's YAML in ``evaluation.judges_dir`` (an edited
judgments file is refused, :mod:`.reply_verdicts`).

Writes ``<out-tables>/{name}.csv|.md|.tex`` for every table,
``<out-tables>/index.json`` (a list of {name, title, caption, estimand,
status, note, n_rows, files: {csv, md, tex}}; file paths relative to the
repository root) and ``<out-claims>`` ({"claims": [...]}, each claim with
its value, verdict, retraction, flag, flags and lineage). Everything is computed
before anything is written; the tables folder and the claims file are
replaced atomically, so bad input leaves no partial output.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
from pathlib import Path
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import pandas as pd
import yaml

from reappraisal import stats
from reappraisal.atomic import atomic_dir, atomic_path, write_json
from reappraisal.config import REPO_ROOT
from reappraisal.errors import PipelineInputError
from reappraisal.json_values import json_ready
from reappraisal.evaluation.calibration_file import read_judge_calibration
from reappraisal.evaluation.systems import best_of_n_systems, evaluated_instances, pooled_systems
from reappraisal.params import parse_params
from reappraisal.policy.arms import parse_arms
from reappraisal.settings import Settings, as_config
from reappraisal.provenance.claim_trace import provenance_document
from reappraisal.provenance.dvc_state import stage_records

from . import evaluation_tables as et
from . import metrics_tables as mt
from . import selection_tables as st
from .claim_power import claim_power, power_note
from .claims import evaluate_claims, validate_ledger
from .reply_verdicts import check_replies
from .lineage import lineage_entries
from .dvc_metrics import dvc_metrics
from .paper_numbers import claim_numbers, numbers_tex
from .paper_tables import CARD_TABLES, card_tables
from .render import to_csv, to_latex, to_markdown
from .summary_table import Table
from .overoptimization import WINDOW as OVEROPTIMIZATION_WINDOW, overoptimization_table
from .trajectory import trajectory_tables
from .truth_tables import Truths, attach_truth, truth_table, truth_verdicts, world_summary_table
from ..table_contracts import CONTEST_COLUMNS, CONTEST_KEYS, CONTEST_LENGTH_COLUMNS, VERDICT_COLUMNS

#: The DVC stage that runs this command (its outputs are not hashed: they are being written).
DVC_STAGE = "summarize"
CLAIMS_SCHEMA = REPO_ROOT / "workflow" / "schemas" / "claims.schema.yaml"
#: The contest columns the summary requires (the answers' lengths are read when present).
REQUIRED_CONTEST_COLUMNS = [c for c in CONTEST_COLUMNS if c not in CONTEST_LENGTH_COLUMNS]
TABLE_ORDER = [
    "headline", "per_scenario", "per_run", "head_to_head", "ood", "judge_calibration", "reward_models", "grm",
    "training_health", "overoptimization", "reward_path_gap", "length_bias", "length_bins", "ablation", "seeds", "best_of_n",
    "selection", "confirmation", *CARD_TABLES,
]


def _rel(path: Path, root: Path) -> str:
    try:
        return Path(os.path.relpath(Path(path).resolve(), root.resolve())).as_posix()
    except ValueError:  # another drive
        return Path(path).resolve().as_posix()


def _read_parquet(path: Path, what: str) -> pd.DataFrame:
    if not path.is_file():
        raise PipelineInputError(f"{what} is missing", where=str(path))
    try:
        return pd.read_parquet(path)
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise PipelineInputError(f"{what} is not a readable Parquet file ({type(exc).__name__})",
                                 where=str(path)) from None


def _read_json(path: Path) -> Any:
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise PipelineInputError(f"not valid JSON ({exc.msg}, line {exc.lineno})", where=str(path)) from None


def load_run(run: int, evaluation_dir: Path, runs: Sequence[int], *,
             judges_dir: str | Path) -> tuple[pd.DataFrame, Path, Path]:
    """One run's contests, validated against its judgments, and the judgments against their judges' raw replies
    (re-parsed with ``<judges_dir>/<judge>.yaml``); returns (contests, contests path, judgments path)."""
    folder = evaluation_dir / f"run{run}"
    contests_path, judgments_path = folder / "contests.parquet", folder / "judgments.parquet"
    where_runs = f"(config evaluation.runs = {list(runs)})"
    contests = _read_parquet(contests_path, f"the contests table of evaluation run {run} {where_runs}")
    missing = [c for c in REQUIRED_CONTEST_COLUMNS if c not in contests.columns]
    if missing:
        raise PipelineInputError(f"contests table lacks column(s) {missing}; expected {REQUIRED_CONTEST_COLUMNS}",
                                 where=str(contests_path))
    if contests.empty:
        raise PipelineInputError("contests table has no rows", where=str(contests_path))
    other_runs = sorted(set(map(str, contests["run"].unique())) - {str(run)})
    if other_runs:
        raise PipelineInputError(f"rows of run(s) {other_runs} in the file of run {run}; runs are pooled only here",
                                 where=str(contests_path))
    try:
        stats.check_contests(contests)
    except ValueError as exc:
        raise PipelineInputError(str(exc), where=str(contests_path)) from None
    judgments = _read_parquet(judgments_path, f"the judgments table of evaluation run {run} {where_runs}")
    missing = [c for c in VERDICT_COLUMNS if c not in judgments.columns]
    if missing:
        raise PipelineInputError(f"judgments table lacks column(s) {missing}", where=str(judgments_path))
    check_replies(judgments, judgments_path, judges_dir)
    _check_against_judgments(contests, judgments, contests_path, judgments_path)
    keep = REQUIRED_CONTEST_COLUMNS + [c for c in CONTEST_LENGTH_COLUMNS if c in contests.columns]
    return contests[keep].copy(), contests_path, judgments_path


def _check_against_judgments(contests, judgments, contests_path, judgments_path) -> None:
    """Every contest's score must be what its two judged orders give."""
    try:
        rescored = stats.score_contests(judgments[VERDICT_COLUMNS])
    except ValueError as exc:
        raise PipelineInputError(str(exc), where=str(judgments_path)) from None
    keys = list(CONTEST_KEYS)
    mine = contests[keys + ["score", "error"]].astype({k: str for k in keys})
    theirs = rescored.astype({k: str for k in keys})
    merged = mine.merge(theirs, on=keys, how="outer", suffixes=("", "_judged"), indicator=True)
    unmatched = merged["_merge"] != "both"
    same_score = (merged["score"] == merged["score_judged"]) | (merged["score"].isna() & merged["score_judged"].isna())
    differ = unmatched | ~same_score | (merged["error"] != merged["error_judged"])
    if differ.any():
        first = merged.loc[differ].iloc[0]
        raise PipelineInputError(
            f"{int(differ.sum())} contest(s) disagree with the judgments they were scored from "
            f"({judgments_path.name}), e.g. judge {first['judge']!r} contest {first['contest_id']!r}; "
            "rerun the judge stage", where=str(contests_path))


def summary_settings(settings: Settings) -> tuple[et.Settings, list[int]]:
    """The summary's settings and the runs, from the sections the rule passed."""
    summary, evaluation = settings.summary, settings.evaluation
    resolved = parse_arms(settings.policy)  # an arm without seeds of its own has policy.seeds
    arm_specs = {name: {**as_config(spec), **({} if resolved[name].external else {"seeds": list(resolved[name].seeds)})}
                 for name, spec in settings.policy.arms.items()}
    s = et.Settings(
        bar=float(summary.bar),
        confidence=float(summary.confidence),
        n_boot=int(summary.n_boot),
        seed=int(settings.seed),
        headline_judge=str(evaluation.headline_judge),
        headline_opponent=str(evaluation.headline_opponent),
        headline_arm=str(summary.headline_arm),
        arms=tuple(evaluation.arms or arm_specs),
        arm_specs=arm_specs,
    )
    return s, [int(r) for r in evaluation.runs]


@dataclass(frozen=True)
class Systems:
    """What the summary needs to know of the candidates beyond the arms: the arm instances (with their policy
    seeds), the pooled groups, the best-of-N systems (:func:`best_of_n_specs`) and the confirmation opponent."""

    instances: tuple[str, ...]
    seeds: Mapping[str, int]
    pooled: Mapping[str, Sequence[str]]
    best_of_n: Mapping[str, Mapping]
    confirm_opponent: str


def summary_systems(settings: Settings) -> Systems:
    instances = evaluated_instances(settings)
    pooled = pooled_systems(settings)
    ensemble_size = len(settings.reward.seeds)
    return Systems(instances=tuple(instances), seeds={n: i.seed for n, i in instances.items()}, pooled=pooled,
                   best_of_n=best_of_n_specs(settings, pooled, ensemble_size),
                   confirm_opponent=str(settings.confirm.opponent))


def best_of_n_specs(settings: Settings, pooled: Mapping[str, Sequence[str]], ensemble_size: int) -> dict[str, dict]:
    """Best-of-N name -> {single_pass, arm, scorer, n, level, scorer_calls, members}: each declared system, and
    the pooled system of each one declared on an arm with several seeds."""
    out = {}
    for name, b in best_of_n_systems(settings).items():
        out[name] = {"single_pass": b.instance, "arm": b.arm, "scorer": b.scorer, "n": b.n, "members": [name],
                     "level": "seed" if any(name in m for m in pooled.values()) else "arm",
                     "scorer_calls": b.scorer_calls(ensemble_size)}
    for name, members in pooled.items():
        first = out.get(members[0])
        if first is not None:
            out[name] = {**first, "single_pass": first["arm"], "members": list(members), "level": "arm"}
    return out


def build_tables(contests: pd.DataFrame, s: et.Settings, sources_by_run, metrics: Mapping, health, logs,
                 arm_sources, systems: Systems | None = None, confirmation: Mapping | None = None) -> dict[str, Table]:
    systems = systems or Systems((), {}, {}, {}, s.headline_opponent)
    confirmation = confirmation or {}
    tables = {
        "headline": et.headline_table(contests, s, sources_by_run),
        "per_scenario": et.per_scenario_table(contests, s, sources_by_run),
        "per_run": et.per_run_table(contests, s, sources_by_run),
        "head_to_head": et.head_to_head_table(contests, s, sources_by_run),
        "ood": et.ood_table(contests, s, sources_by_run),
        "judge_calibration": mt.judge_calibration_table(*metrics["judge_calibration"]),
        "reward_models": mt.reward_models_table(*metrics["reward_models"]),
        "grm": mt.grm_table(*metrics["grm"]),
        "training_health": mt.training_health_table(list(systems.instances or s.arms), health, logs, arm_sources),
        "overoptimization": overoptimization_table(list(systems.instances or s.arms), logs, arm_sources,
                                                   window=OVEROPTIMIZATION_WINDOW,
                                                   weights={a: (h or {}).get("weights") for a, h in health.items()}),
        "reward_path_gap": et.reward_path_gap_table(contests, s, sources_by_run),
        "length_bias": et.length_bias_table(contests, s, sources_by_run),
        "length_bins": et.length_bins_table(contests, s, sources_by_run),
        "ablation": et.ablation_table(contests, s, sources_by_run, arm_health(health, systems.pooled),
                                      {a: [p for m in systems.pooled.get(a, [a]) for p in arm_sources.get(m, ())
                                           if p.endswith("health.json")] for a in s.arms}),
        "seeds": st.seeds_table(contests, s, sources_by_run, systems.pooled, systems.seeds),
        "best_of_n": st.best_of_n_table(contests, s, sources_by_run, systems.best_of_n, confirmation.get("candidates"),
                                        confirmation.get("candidate_sources", ()),
                                        opponent_ood=systems.confirm_opponent),
        "selection": st.selection_table(contests, s, sources_by_run, confirmation.get("preregistration"),
                                        confirmation.get("preregistration_source")),
        "confirmation": st.confirmation_table(s, confirmation.get("result"), confirmation.get("preregistration"),
                                              confirmation.get("sources", ())),
    }
    tables.update(card_tables(tables, s))
    return {name: tables[name] for name in TABLE_ORDER}


def arm_health(health: Mapping[str, Mapping | None], pooled: Mapping[str, Sequence[str]]) -> dict:
    """Health records by arm: an instance's own, and for a pooled arm its seeds' verdicts joined ("healthy" when
    every seed is)."""
    out = dict(health)
    for arm, members in pooled.items():
        verdicts = [(health.get(m) or {}).get("verdict") for m in members]
        if all(v is not None for v in verdicts):
            out[arm] = {"verdict": verdicts[0] if len(set(verdicts)) == 1 else " / ".join(map(str, verdicts))}
    return out


def _yaml_dates_as_text(value):
    if isinstance(value, dict):
        return {k: _yaml_dates_as_text(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_yaml_dates_as_text(v) for v in value]
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    return value


#: The metrics files summarize reads, by the name of the table each feeds, with the reader of each.
METRICS = {"judge_calibration": read_judge_calibration, "reward_models": _read_json, "grm": _read_json}


def read_confirmation(files: Mapping[str, Any] | None, root: Path) -> dict:
    """The confirm stage's files (``preregistration``, ``confirmation``, ``confirmation_contests``) and the
    best-of-N candidates files (``candidates``), as the selection tables read them; absent ones are left out."""
    files = files or {}
    out: dict[str, Any] = {}
    prereg = files.get("preregistration")
    if prereg and Path(prereg).is_file():
        try:
            out["preregistration"] = _yaml_dates_as_text(yaml.safe_load(Path(prereg).read_text(encoding="utf-8")))
        except yaml.YAMLError as exc:
            raise PipelineInputError(f"not valid YAML ({exc.__class__.__name__})", where=str(prereg)) from None
        out["preregistration_source"] = _rel(Path(prereg), root)
    result = files.get("confirmation")
    if result and Path(result).is_file():
        out["result"] = _read_json(Path(result))
        out["sources"] = [_rel(Path(p), root) for p in (result, prereg, files.get("confirmation_contests")) if p]
        registered = (out.get("preregistration") or {}).get("selected_system")
        if registered is not None and out["result"].get("system") != registered:
            raise PipelineInputError(f"the confirmation is of {out['result'].get('system')!r}, the pre-registration "
                                     f"selected {registered!r}; rerun the confirm stage", where=str(result))
    paths = [Path(p) for p in files.get("candidates") or []]
    if paths:
        out["candidates"] = pd.concat([_read_parquet(p, "a best-of-N candidates table") for p in paths],
                                      ignore_index=True)
        out["candidate_sources"] = [_rel(p, root) for p in paths]
    return out


def read_truths(files: Mapping[str, Any] | None, root: Path) -> dict | None:
    """The truth stage's tables (demo only): ``{"truths": Truths, "world": frame, ...sources}``, or None."""
    files = files or {}
    if not files.get("truths"):
        return None
    path, world = Path(files["truths"]), Path(files["world"])
    return {"truths": Truths(_read_parquet(path, "the truth stage's table")), "source": _rel(path, root),
            "world": _read_parquet(world, "the truth stage's world table"), "world_source": _rel(world, root)}


def summarize(*, evaluation_dir: Path, metrics_files: Mapping[str, Path], policy_dir: Path, claims_file: Path,
              settings: Settings, root: Path,
              confirmation_files: Mapping[str, Any] | None = None,
              truth_files: Mapping[str, Any] | None = None) -> tuple[dict[str, Table], dict, dict]:
    """Compute every table, the claims ledger and the provenance document (nothing written)."""
    s, runs = summary_settings(settings)
    systems = summary_systems(settings)
    if s.arms and s.headline_arm not in s.arms:
        raise PipelineInputError(f"headline arm {s.headline_arm!r} is not an arm (arms: {list(s.arms)})",
                                 where="config summary.headline_arm")
    frames, sources_by_run = [], {}
    judges_dir = settings.evaluation.judges_dir
    for run in runs:
        frame, contests_path, judgments_path = load_run(run, evaluation_dir, runs, judges_dir=judges_dir)
        frames.append(frame)
        sources_by_run[run] = (_rel(contests_path, root), _rel(judgments_path, root))
    contests = pd.concat(frames, ignore_index=True)
    judges = sorted(map(str, contests["judge"].unique()))
    if s.headline_judge not in judges:
        raise PipelineInputError(f"headline judge {s.headline_judge!r} judged no contest (judges present: {judges})",
                                 where="config evaluation.headline_judge")
    contests = st.pooled_contests(contests, systems.pooled)

    metrics = {}
    for name, reader in METRICS.items():
        path = Path(metrics_files[name])
        metrics[name] = (reader(path) if path.is_file() else None, _rel(path, root))
    health, logs, arm_sources = {}, {}, {}
    for arm in systems.instances or s.arms:
        health_path = policy_dir / arm / "health.json"
        log_path = policy_dir / arm / "training_log.csv"
        health[arm] = _read_json(health_path)
        arm_sources[arm] = [_rel(health_path, root)] if health[arm] is not None else []
        if log_path.is_file():
            try:
                logs[arm] = pd.read_csv(log_path)
            except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
                raise PipelineInputError(f"not a readable CSV training log ({type(exc).__name__})",
                                         where=str(log_path)) from None
            arm_sources[arm].append(_rel(log_path, root))
    tables = build_tables(contests, s, sources_by_run, metrics, health, logs, arm_sources, systems,
                          read_confirmation(confirmation_files, root))
    # a metrics-derived table cites its file only when the file exists
    for name in METRICS:
        if metrics[name][0] is None:
            tables[name].sources = [()] * len(tables[name].frame)
    trajectories = {}
    for path in map(Path, (truth_files or {}).get("trajectories") or []):
        frame = _read_parquet(path, "a trajectory_truth table")
        if not frame.empty:
            trajectories[str(frame["arm"].iloc[0])] = (frame, _rel(path, root))
    tables.update(trajectory_tables({a: f for a, (f, _) in trajectories.items()},
                                    {a: src for a, (_, src) in trajectories.items()}))
    truths = read_truths(truth_files, root)
    if truths is not None:
        attach_truth(tables, truths["truths"], headline_arm=s.headline_arm, headline_opponent=s.headline_opponent)
        tables["truth"] = truth_table(tables)
        tables["truth"].sources = [tuple(src) + (truths["source"],) for src in tables["truth"].sources]
        tables["world"] = world_summary_table(truths["world"])
        tables["world"].sources = [(truths["world_source"],)] * len(tables["world"].frame)

    if not claims_file.is_file():
        raise PipelineInputError("the claims ledger is missing", where=str(claims_file))
    try:
        doc = _yaml_dates_as_text(yaml.safe_load(claims_file.read_text(encoding="utf-8")))
    except yaml.YAMLError as exc:
        raise PipelineInputError(f"not valid YAML ({exc.__class__.__name__})", where=str(claims_file)) from None
    schema = yaml.safe_load(CLAIMS_SCHEMA.read_text(encoding="utf-8"))
    claims = validate_ledger(doc, schema, tables, where=str(claims_file))
    claim_settings = {"bar": s.bar, "confidence": s.confidence}
    records = evaluate_claims(claims, tables, claim_settings)
    for claim, record in zip(claims, records):
        record["power"] = claim_power(claim["rule"], tables, claim_settings)
        record["power_note"] = power_note(record["rule_verdict"], record["power"])
    if truths is not None:
        truth_verdicts(records, claims, tables, claim_settings)
    stages = stage_records(root, without_outs=[DVC_STAGE])
    cache: dict = {}
    for record in records:
        record["lineage"] = lineage_entries(record.pop("sources"), root, stages, cache)
    provenance = provenance_document(
        stages, {r["id"]: [entry["path"] for entry in r["lineage"]] for r in records},
        computing_stage=DVC_STAGE, fetched_files=_fetched_files(stages, root))
    ledger = {
        "claims": records,
        "settings": {"bar": s.bar, "confidence": s.confidence, "headline_judge": s.headline_judge,
                     "headline_opponent": s.headline_opponent, "headline_arm": s.headline_arm, "runs": runs,
                     "preset": settings.preset},
        "claims_file": _rel(claims_file, root),
        "verdicts": {v: sum(r["verdict"] == v for r in records) for v in ("holds", "fails", "retracted",
                                                                          "not_computable")},
    }
    if truths is not None:
        checked = [r for r in records if r.get("truth_verdict")]
        ledger["truth"] = {"claims_with_truth": len(checked),
                           "agree": sum(r["rule_verdict"] == r["truth_verdict"] for r in checked),
                           "disagree": [r["id"] for r in checked if r["rule_verdict"] != r["truth_verdict"]]}
    return tables, json_ready(ledger), json_ready(provenance)


def _fetched_files(stages: Mapping[str, Mapping], root: Path) -> list[dict]:
    """The files the data stage fetched, with their OSF or bundle checksums (its MANIFEST.json)."""
    for record in stages.values():
        for out in record.get("outs", {}):
            if Path(out).name == "MANIFEST.json" and Path(out).parent.name == "raw":
                manifest = _read_json(root / out)
                return list((manifest or {}).get("files") or [])
    return []


def write_outputs(tables: Mapping[str, Table], ledger: dict, out_tables: Path, out_claims: Path, root: Path,
                  out_numbers: Path | None = None, provenance: Mapping | None = None,
                  out_provenance: Path | None = None) -> None:
    """The tables (CSV, Markdown, LaTeX and index.json), claims.json, numbers.tex with its JSON twin,
    metrics.json (the headline and the verdicts, for DVC) and provenance.json (defaults: beside claims.json)."""
    rendered = {name: {"csv": to_csv(t), "md": to_markdown(t), "tex": to_latex(t)} for name, t in tables.items()}
    out_numbers = Path(out_numbers) if out_numbers else Path(out_claims).with_name("numbers.tex")
    numbers = claim_numbers(ledger["claims"], tables)
    index = []
    for name, table in tables.items():
        index.append({
            "name": name, "title": table.title, "caption": table.caption, "estimand": table.estimand,
            "status": table.status, "note": table.note, "n_rows": int(len(table.frame)),
            # what a reader is shown (Markdown, LaTeX, the report): [heading, [column] or [low, high]]
            "display": [[h, list(cols)] for h, cols in table.display] if table.display else None,
            "files": {ext: _rel(out_tables / f"{name}.{ext}", root) for ext in ("csv", "md", "tex")},
        })
    with atomic_dir(out_tables) as tmp:
        for name, files in rendered.items():
            for ext, text in files.items():
                (tmp / f"{name}.{ext}").write_text(text, encoding="utf-8")
        (tmp / "index.json").write_text(json.dumps(index, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    write_json(ledger, out_claims)
    with atomic_path(out_numbers) as tmp:
        Path(tmp).write_text(numbers_tex(numbers), encoding="utf-8")
    write_json(json_ready(numbers), out_numbers.with_suffix(".json"))
    headline = tables["headline"].frame if "headline" in tables else None
    write_json(dvc_metrics(headline, ledger["claims"]), Path(out_claims).with_name("metrics.json"))
    if provenance is not None:
        write_json(provenance, Path(out_provenance) if out_provenance else Path(out_claims).with_name("provenance.json"))


def cli_main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="reappraisal summarize", description=__doc__.splitlines()[0])
    ap.add_argument("--evaluation-dir", required=True, help="folder holding run{run}/contests.parquet")
    ap.add_argument("--judge-calibration", required=True, help="calibrate_judge's JSON")
    ap.add_argument("--reward-metrics", required=True, help="evaluate_reward_models' JSON")
    ap.add_argument("--grm-metrics", required=True, help="evaluate_grm's JSON")
    ap.add_argument("--policy-dir", required=True, help="folder holding <arm>/health.json and training_log.csv")
    ap.add_argument("--claims", required=True, help="the claims ledger")
    ap.add_argument("--out-tables", required=True)
    ap.add_argument("--out-claims", required=True)
    ap.add_argument("--out-numbers", default=None, help="numbers.tex (and its .json twin); default beside --out-claims")
    ap.add_argument("--out-provenance", default=None,
                    help="provenance.json (each claim's stages, config, code and raw inputs); default beside --out-claims")
    ap.add_argument("--preregistration", default=None, help="the confirm stage's pre-registration")
    ap.add_argument("--confirmation", default=None, help="the confirm stage's confirmation.json")
    ap.add_argument("--confirmation-contests", default=None, help="the confirm stage's contests (lineage)")
    ap.add_argument("--candidates", nargs="*", default=[], help="every best-of-N candidates table (compute)")
    ap.add_argument("--truths", default=None, help="the truth stage's truths (demo only)")
    ap.add_argument("--world", default=None, help="the truth stage's world table (with --truths)")
    ap.add_argument("--trajectories", nargs="*", default=[],
                    help="the trajectory_truth stage's tables, one per arm (demo only)")
    ap.add_argument("--root", default=".", help="repository root: lineage paths are relative to it")
    ap.add_argument("--params", required=True, help="JSON with sections summary, evaluation, policy, seed, preset")
    ns = ap.parse_args(argv)
    settings = Settings.from_params(parse_params(ns.params))
    root = Path(ns.root)
    metrics_files = {"judge_calibration": Path(ns.judge_calibration), "reward_models": Path(ns.reward_metrics),
                     "grm": Path(ns.grm_metrics)}
    tables, ledger, provenance = summarize(evaluation_dir=Path(ns.evaluation_dir), metrics_files=metrics_files,
                               policy_dir=Path(ns.policy_dir), claims_file=Path(ns.claims), settings=settings,
                               root=root, confirmation_files={
                                   "preregistration": ns.preregistration, "confirmation": ns.confirmation,
                                   "confirmation_contests": ns.confirmation_contests, "candidates": ns.candidates},
                               truth_files={"truths": ns.truths, "world": ns.world,
                                            "trajectories": ns.trajectories})
    write_outputs(tables, ledger, Path(ns.out_tables), Path(ns.out_claims), root, ns.out_numbers, provenance,
                  ns.out_provenance)
    head = tables["headline"].frame
    for row in head.itertuples():
        if pd.notna(getattr(row, "win_rate", None)):
            print(f"{row.arm} vs {row.opponent}: win rate {row.win_rate:.3f} "
                  f"[{row.headline_low:.3f}, {row.headline_high:.3f}] ({row.headline_method}), "
                  f"{row.contests} contests, {row.scenarios} scenarios")
    print("claims: " + ", ".join(f"{k} {v}" for k, v in ledger["verdicts"].items()))
    return 0
