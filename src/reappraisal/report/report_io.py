"""The HTML report, laid out like a paper's results section; it renders artifacts and computes nothing.

Every number on the page is read from an input the rule names (the summary's
tables and claims ledger, the policies' training logs and health verdicts,
the metrics files); the lineage appendix lists each input with its sha256,
and each claim links to the artifacts it was computed from. The output is one
self-contained HTML file: the CSS is inline, the figures are inline SVG drawn
by matplotlib, and there is no script or external resource, so it opens
without a network. The demo preset gets a banner: its numbers carry no
scientific meaning.
"""

from __future__ import annotations

import argparse
import math
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import jinja2
import numpy as np
import pandas as pd

from ..atomic import atomic_path
from ..params import parse_params
from . import charts
from .inputs import Artifact, SummaryTable, parse_manifest, read_claims, read_csv, read_json, read_tables_index, sha256_file

DEMO_BANNER = (
    "DEMO PRESET: synthetic data and tiny random-init models. These numbers show that every "
    "stage runs and that the statistics and lineage are computed correctly; they carry no "
    "scientific meaning about reappraisal or about any real model."
)

#: Sections of the results, in page order: (id, title, names of the summary tables placed there).
#: A table is placed by its ``name`` in index.json (exact, or ``<key>_…``); the rest go to an appendix.
RESULT_SECTIONS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("headline", "Headline: pairwise win rate against the reference answers", ("headline",)),
    ("per-scenario", "Per scenario", ("per_scenario", "scenarios_clearing")),
    ("per-run", "Per evaluation run", ("per_run", "run_effect", "runs")),
    ("head-to-head", "Head-to-head and out-of-distribution", ("head_to_head", "h2h", "ood")),
    ("reward-path", "Reward-path scorers against the held-out judge; length bias; ablation arms",
     ("reward_path", "length", "ablation", "arms")),
    ("judges", "Judge calibration", ("judge_calibration", "judges", "calibration")),
    ("reward-models", "Reward-model ensemble and GRM", ("reward_model", "reward_models", "rm", "grm")),
    ("training", "Training health", ("training_health", "health", "training")),
)

#: Raw metrics linked from a results section (manifest names), besides their appendix entry.
SECTION_ARTIFACTS: dict[str, tuple[str, ...]] = {
    "reward-models": ("reward_models", "grm"),
    "judges": ("judge_calibration",),
    "head-to-head": ("ood_disjointness",),
    "training": (),
}

#: Known metrics files (manifest names) and the section they belong to.
KNOWN_ARTIFACTS: dict[str, tuple[str, str]] = {
    "normalize": ("Rating normalization", "z-scores within study × rater × dimension."),
    "split": ("Reappraisal split", "Split by reappraisal; GPT-4 and opponent answers are held out of all training."),
    "leakage": ("Leakage check", "n-gram overlap between training text and every held-out evaluation answer."),
    "reward_models": ("Reward-model ensemble metrics", "Held-out pairwise accuracy (ties 0.5), scenario-clustered intervals, best-of-N."),
    "grm": ("Generative reward model metrics", "Held-out accuracy, unparseable verdicts, position consistency, first-slot bias."),
    "judge_calibration": ("Judge calibration metrics", "Agreement with humans on clearly separated pairs, κ, position bias."),
}


def _placed(name: str, keys: Sequence[str]) -> bool:
    return any(name == k or name.startswith(k + "_") for k in keys)


def slug(text: Any) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", str(text)).strip("-") or "x"


def fmt(value: Any, digits: int = 4) -> str:
    """A cell as the artifact wrote it: floats to ``digits`` places, NaN as an em dash."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "—"
        if value != 0 and abs(value) < 10 ** -(digits - 1):
            return f"{value:.{max(1, digits - 1)}g}"  # 5e-05, not 0.0001
        return f"{value:.{digits}f}"
    return str(value)


def fmt_rate(value: Any, digits: int = 3) -> str:
    """A rate on the scale of its interval: fixed ``digits`` places (0.007, not 0.0069 beside [0.002, 0.007])."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{float(value):.{digits}f}"


def fmt_interval(lo: Any, hi: Any, digits: int = 3) -> str:
    if lo is None or hi is None or (isinstance(lo, float) and math.isnan(lo)) or (isinstance(hi, float) and math.isnan(hi)):
        return "—"
    return f"[{lo:.{digits}f}, {hi:.{digits}f}]"


@dataclass
class TableView:
    """A table ready for the template: header, formatted rows, caption and its files."""

    name: str
    title: str
    caption: str
    columns: list[str]
    rows: list[list[str]]
    files: Mapping[str, str] = field(default_factory=dict)
    estimand: str | None = None
    status: str | None = None
    note: str | None = None


def _integral(col: pd.Series) -> bool:
    """A float column holding only whole numbers (counts read back from CSV with a gap)."""
    vals = pd.to_numeric(col, errors="coerce").dropna()
    return col.dtype.kind == "f" and len(vals) > 0 and bool(np.isfinite(vals).all() and (vals == vals.round()).all())


def _cell(record: Mapping[str, Any], columns: Sequence[str]) -> str:
    values = [None if (c not in record or record[c] is pd.NA) else _py(record[c]) for c in columns]
    if len(columns) == 2:
        return fmt_interval(*values)
    return fmt(values[0])


def table_view(t: SummaryTable, report_dir: Path) -> TableView:
    """The table as the page shows it: its ``display`` columns (intervals as one cell) when the summary
    names them, else every CSV column; the CSV keeps every column either way."""
    df = t.frame.copy()
    for c in df.columns:
        if _integral(df[c]):
            df[c] = df[c].astype("Int64")
    if t.display:
        columns = [h for h, _ in t.display]
        rows = [[_cell(r, cols) for _, cols in t.display] for r in df.to_dict("records")]
    else:
        columns = [str(c) for c in df.columns]
        rows = [[fmt(None if v is pd.NA else _py(v)) for v in row] for row in df.itertuples(index=False)]
    return TableView(
        name=t.name, title=t.title, caption=t.caption, estimand=t.estimand,
        columns=columns,
        rows=rows,
        files={k: _rel(Path(v), report_dir) for k, v in t.files.items()},
        status=t.status, note=t.note,
    )


def _py(v: Any) -> Any:
    """numpy/pandas scalars as Python ones (ints stay ints)."""
    if hasattr(v, "item"):
        v = v.item()
    return v


def _rel(path: Path, base: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(base.resolve()))
    except ValueError:
        return str(path)


HEADLINE_HEADER = (
    "Arm", "Opponent", "Win rate", "Contests", "Scenarios",
    "Headline 95% CI", "iid Wilson CI (ignores clustering)",
    "Percentile cluster bootstrap CI (under-covers)",
    "Sign-flip p vs bar", "p vs 0.5", "Smallest p possible", "Errors",
)


def headline_rows(df: pd.DataFrame) -> list[list[str]]:
    """The model card's table, regenerated: one row per (arm, opponent), honest columns (the judge and the
    headline method, one per table, are named in its caption)."""
    rows = []
    for r in df.to_dict("records"):
        rows.append([
            str(r["arm"]), str(r["opponent"]), fmt_rate(r["win_rate"]), fmt(_py(r["contests"])),
            fmt(_py(r["scenarios"])),
            fmt_interval(r["headline_low"], r["headline_high"]),
            fmt_interval(r["wilson_low"], r["wilson_high"]), fmt_interval(r["boot_low"], r["boot_high"]),
            fmt(r["signflip_p_bar"]), fmt(r["signflip_p_half"]), fmt(r["signflip_min_p"]), fmt(_py(r["errors"])),
        ])
    return rows


def _headline_first(df: pd.DataFrame, frames: Mapping[str, SummaryTable]) -> pd.DataFrame:
    """Rows of ``df`` with the headline table's opponents first, in its order (figures follow it)."""
    if "headline" not in frames or "opponent" not in df.columns:
        return df
    order = list(dict.fromkeys(frames["headline"].frame["opponent"].astype(str)))
    rank = df["opponent"].astype(str).map(lambda o: order.index(o) if o in order else len(order))
    return df.assign(_rank=rank).sort_values("_rank", kind="stable").drop(columns="_rank")


def _focus_judge(frames: Mapping[str, SummaryTable]) -> str | None:
    """The judge the headline table lists first (the headline judge): the one the figures show."""
    if "headline" not in frames or frames["headline"].frame.empty or "judge" not in frames["headline"].frame.columns:
        return None
    return str(frames["headline"].frame["judge"].iloc[0])


def git_commit(cwd: Path | None = None) -> tuple[str | None, bool]:
    """(HEAD commit, whether tracked files differ from it) of the checkout, or (None, False) outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd, capture_output=True,
                               text=True, check=True).stdout.strip()
        return head, bool(dirty)
    except (OSError, subprocess.CalledProcessError):
        return None, False


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("reappraisal.report", "templates"),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["fmt"] = fmt
    env.filters["slug"] = slug
    env.tests["mapping"] = lambda v: isinstance(v, Mapping)
    env.tests["sequence_of_mappings"] = lambda v: isinstance(v, list) and bool(v) and all(isinstance(x, Mapping) for x in v)
    env.tests["flat_records"] = lambda v: (
        isinstance(v, Mapping) and len(v) > 1
        and all(isinstance(x, Mapping) and x and not any(isinstance(y, (Mapping, list)) for y in x.values()) for x in v.values())
    )
    return env


def _bar(cfg: Mapping[str, Any]) -> float | None:
    """The reference rate claims compare with, where the config names one (summary.bar / evaluation.bar)."""
    for section in ("summary", "evaluation"):
        value = (cfg.get(section) or {}).get("bar")
        if isinstance(value, (int, float)):
            return float(value)
    return None


def build_context(artifacts: list[Artifact], cfg: Mapping[str, Any], *, out: Path, commit: tuple[str | None, bool]) -> dict[str, Any]:
    report_dir = out.parent
    by_kind: dict[str, list[Artifact]] = {}
    for a in artifacts:
        by_kind.setdefault(a.kind, []).append(a)
    bar = _bar(cfg)

    # Every input is read (and checked) before anything is drawn: bad input fails fast.
    claims = []
    for a in by_kind.get("claims", []):
        claims += read_claims(a.path)

    # Summary tables (index.json) and where each goes.
    tables: list[SummaryTable] = []
    for a in by_kind.get("tables_index", []):
        tables += read_tables_index(a.path)
    frames = {t.name: t for t in tables}
    sections = []
    placed: set[str] = set()
    for sid, title, keys in RESULT_SECTIONS:
        views = [table_view(t, report_dir) for t in tables if t.name not in placed and _placed(t.name, keys)]
        placed |= {v.name for v in views}
        sections.append({"id": sid, "title": title, "tables": views, "figures": [],
                         "artifacts": [a for a in artifacts if a.name in SECTION_ARTIFACTS.get(sid, ())]})
    section = {s["id"]: s for s in sections}
    further = [table_view(t, report_dir) for t in tables if t.name not in placed]

    headline = None
    if "headline" in frames:
        t = frames["headline"]
        judges = ", ".join(dict.fromkeys(t.frame["judge"].astype(str))) if "judge" in t.frame.columns else None
        methods = ", ".join(dict.fromkeys(t.frame["headline_method"].astype(str))) if "headline_method" in t.frame.columns else None
        headline = {"caption": t.caption, "estimand": t.estimand, "header": HEADLINE_HEADER, "note": t.note,
                    "judge_line": f"Judge: {judges}." if judges else None,
                    "method_line": f"Headline interval: {methods}." if methods else None,
                    "rows": headline_rows(t.frame), "files": table_view(t, report_dir).files, "bar": bar}
        section["headline"]["tables"] = [v for v in section["headline"]["tables"] if v.name != "headline"]

    focus = _focus_judge(frames)
    if headline is not None and focus is not None:
        h = frames["headline"].frame
        part = h[h["judge"].astype(str) == focus]
        part = part.assign(label=part["arm"].astype(str) + " vs " + part["opponent"].astype(str))
        if pd.to_numeric(part["win_rate"], errors="coerce").notna().any():
            section["headline"]["figures"].append({
                "id": "fig-forest",
                "svg": charts.forest_plot(part, name="forest", bar=bar,
                                          title=f"Every arm against every opponent, judge {focus}"),
                "caption": (f"Every arm against every opponent on the study scenarios, judged by {focus}: the win "
                            "rate (point) and its headline 95% interval (logit-scale scenario jackknife), the bar "
                            "(dashed) and 0.5 (dotted); the rows of the table below."),
                "kind": "forest",
            })
    if "per_scenario" in frames and focus is not None:
        df = _headline_first(frames["per_scenario"].frame, frames)
        df = df[df["judge"].astype(str) == focus]
        df = df[df.groupby(["opponent", "pool"])["win_rate"].transform(
            lambda v: pd.to_numeric(v, errors="coerce").notna().any())]
        df = df.assign(facet="vs " + df["opponent"].astype(str) + " (" + df["pool"].astype(str) + " pool)")
        study = (df["pool"] == "train") & ~df["opponent"].astype(str).str.startswith("arm:")
        for part, target, key, what in ((df[study], "per-scenario", "study", "the study scenarios"),
                                        (df[~study], "head-to-head", "other", "head-to-head and OOD")):
            if part.empty:
                continue
            title = f"Win rate per scenario, {what}, judge {focus}"
            section[target]["figures"].append({
                "id": f"fig-scenario-{key}",
                "svg": charts.interval_small_multiples(part, facet="facet", category="vignette_id", bar=bar,
                                                       name=f"scn-{key}", title=title),
                "caption": (f"{title}: one panel per opponent. Points: win rate of each arm's contests on that "
                            "scenario (pooled over runs); bars: the interval in per_scenario.csv; every judge's "
                            "numbers are in the table."),
                "kind": "per-scenario",
            })
    if "per_run" in frames and focus is not None:
        df = _headline_first(frames["per_run"].frame, frames)
        df = df[df["judge"].astype(str) == focus]
        if pd.to_numeric(df["win_rate"], errors="coerce").notna().any():
            title = f"Win rate per evaluation run, judge {focus}"
            df = df.assign(run=df["run"].map(lambda r: f"run {r}"), facet="vs " + df["opponent"].astype(str))
            section["per-run"]["figures"].append({
                "id": "fig-run",
                "svg": charts.interval_small_multiples(df, facet="facet", category="run", bar=bar, name="run",
                                                       title=title, ncols=3),
                "caption": (f"{title}: one panel per opponent. Three independent evaluations (fresh generations, "
                            "fresh judging); they are pooled only in the headline."),
                "kind": "per-run",
            })

    # Training health: curves per arm and the verdicts.
    logs = {a.arm or a.name: read_csv(a.path) for a in by_kind.get("training_log", [])}
    logs = {arm: log for arm, log in logs.items() if not log.empty}
    if logs:
        if any("gold" in log.columns and log["gold"].notna().any() for log in logs.values()):
            section["training"]["figures"].append({
                "id": "fig-gold-proxy",
                "svg": charts.gold_proxy_curves(logs, name="gold-proxy",
                                                title="Gold and proxy during training, per arm"),
                "caption": ("Gao et al.'s picture per arm: the gold scorer's mean expected quality of the step's "
                            "completions (logged with weight 0, never optimized) beside the proxies the arm is "
                            "trained on (ensemble score; GRM win rate on the right axis), per optimizer step. "
                            "Proxy rising while gold stalls or falls is over-optimization."),
                "kind": "gold-proxy",
            })
        section["training"]["figures"].append({
            "id": "fig-training",
            "svg": charts.training_curves(logs, name="training", title="GRPO training health per arm"),
            "caption": "Per optimizer step, as TRL logged it (results/policy/{arm}/training_log.csv).",
            "kind": "training",
        })
    health = []
    for a in by_kind.get("policy_health", []):
        h = read_json(a.path)
        health.append({
            "arm": a.arm or a.name, "verdict": h.get("verdict"), "n_steps": h.get("n_steps"),
            "checks": [
                {"name": k, "value": fmt(c.get("value")), "threshold": fmt(c.get("threshold")), "passed": c.get("passed"),
                 "description": c.get("description", "")}
                for k, c in (h.get("checks") or {}).items()
            ],
        })

    # Judge calibration (from the calibrate_judge artifact; layout in docs/CONVENTIONS.md).
    calibration = None
    for a in by_kind.get("judge_calibration", []):
        cal = read_json(a.path)
        decision = cal.get("decision") or {}
        judges = cal.get("judges") or {}
        rows = []
        for name, j in judges.items():
            agreement = j.get("agreement") or {}
            position = j.get("position") or {}
            fsb = j.get("first_slot_bias") or {}
            verdict = (decision.get("verdicts") or {}).get(name)
            rows.append([name, fmt(j.get("n_separated_pairs")), fmt(agreement.get("strict")), fmt(agreement.get("half")),
                         fmt(agreement.get("dropped")), fmt(j.get("kappa")), fmt(position.get("consistency")),
                         fmt(position.get("n_flips")), fmt(position.get("n_with_tie")),
                         f"{fmt(fsb.get('n_first_slot_both'))} / {fmt(fsb.get('n_second_slot_both'))} "
                         f"(p {fmt(fsb.get('p_value'))})",
                         fmt(verdict["passed"]) if verdict else "not used"])
        by_margin = {n: [{"bin": f"{b['low']:g}-{b['high']:g}", "agreement": b.get("agreement_half"),
                          "n": b.get("n_pairs", 0)} for b in j.get("by_margin") or []]
                     for n, j in judges.items()
                     if any(b.get("agreement_half") is not None for b in j.get("by_margin") or [])}
        figure = None
        if by_margin:
            figure = {"id": "fig-calibration", "kind": "calibration",
                      "svg": charts.agreement_by_margin(by_margin, name="calibration", title="Judge agreement by human margin"),
                      "caption": "Agreement with human preference (undecided pairs counted 0.5) per human-margin bin."}
        way = decision.get("agreement_counted")
        weak = [{"judge": n, "agreement": fmt((decision.get("verdicts") or {}).get(n, {}).get("agreement")), "way": way}
                for n in decision.get("failed") or []]
        calibration = {
            "header": ("Judge", "Separated pairs", "Agreement (undecided wrong)", "(as 0.5)", "(dropped)", "Cohen's κ",
                       "Position consistency", "Flips", "With a tie", "First-slot / second-slot wins", "Passed"),
            "rows": rows, "selected": ", ".join(decision.get("selected") or []) or None,
            "min_agreement": decision.get("min_agreement"), "accepted_weak": decision.get("accepted_weak"),
            "weak": weak, "delta": cal.get("delta"), "figure": figure, "path": str(a.path),
        }

    if headline is not None and calibration is not None:
        judge = calibration["selected"]
        verdict = next(iter((decision.get("verdicts") or {}).get(n, {}) for n in decision.get("selected") or []), {})
        if judge:
            headline["judge_line"] = (
                f"Held-out judge: {judge}, selected by calibration against human preference (agreement "
                f"{fmt(verdict.get('agreement'), 3)} with undecided pairs counted {decision.get('agreement_counted')}, "
                f"minimum {fmt(decision.get('min_agreement'), 3)}).")
    cards = [{"path": _rel(a.path, report_dir), "artifact": str(a.path.parent), "sha256": sha256_file(a.path)}
             for a in by_kind.get("model_card", [])]

    appendix = []
    lineage = []
    for a in artifacts:
        lineage.append({"name": a.name, "kind": a.kind, "path": str(a.path), "sha256": sha256_file(a.path) if a.path.is_file() else None,
                        "bytes": a.path.stat().st_size if a.path.is_file() else None})
        title, caption = KNOWN_ARTIFACTS.get(a.name, (a.name.replace("_", " "), ""))
        if a.path.suffix == ".json" and a.kind not in {"claims", "tables_index"}:
            appendix.append({"id": f"artifact-{slug(a.name)}", "title": title, "caption": caption, "path": str(a.path),
                             "data": read_json(a.path)})
    head, dirty = commit
    return {
        "preset": cfg.get("preset"), "banner": DEMO_BANNER if cfg.get("preset") == "demo" else None,
        "headline": headline, "sections": sections, "further": further, "health": health,
        "calibration": calibration, "claims": claims, "cards": cards, "appendix": appendix, "lineage": lineage,
        "commit": head, "dirty": dirty, "bar": bar, "has_summary": bool(tables),
    }


def render(context: Mapping[str, Any]) -> str:
    return _environment().get_template("report.html.j2").render(**context)


def build_report(inputs: Mapping[str, Any], cfg: Mapping[str, Any], *, out: Path) -> str:
    artifacts = parse_manifest(inputs)
    return render(build_context(artifacts, cfg, out=out, commit=git_commit()))


def cli_main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(prog="reappraisal report", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--inputs", required=True, help="JSON object: artifact name -> path or {path, kind, arm}")
    ap.add_argument("--params", required=True)
    ap.add_argument("--model-cards", nargs="*", default=[], help="the regenerated model cards (README.md), linked and hashed")
    args = ap.parse_args(argv)
    cfg = parse_params(args.params)
    inputs = dict(parse_params(args.inputs))
    for path in args.model_cards:
        inputs[f"model card {Path(path).parent}"] = {"path": path, "kind": "model_card"}
    out = Path(args.out)
    text = build_report(inputs, cfg, out=out)
    with atomic_path(out, suffix=".html") as tmp:
        tmp.write_text(text, encoding="utf-8")
    print(f"report: {out} ({len(inputs)} inputs)")
    return 0
