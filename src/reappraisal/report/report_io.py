"""The HTML report, laid out like a paper's results section; it renders artifacts and computes nothing.

Every number on the page is read from an input the rule names (the summary's
tables and claims ledger, the policies' training logs and health verdicts,
the metrics files); the lineage appendix lists each input with its sha256,
and each claim links to the artifacts it was computed from. The output is one
self-contained HTML file: the CSS is inline, the figures are inline SVG drawn
by matplotlib, and there is no script or external resource, so it opens
without a network. The demo preset gets a banner: its numbers carry no
scientific meaning. The page's words (section titles, captions, headers) are
in ``report_texts.yaml`` beside this module; its layout in
``templates/report.html.j2``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import jinja2
import numpy as np
import pandas as pd

from ..atomic import atomic_path
from ..settings import Settings, SummarySettings
from ..errors import PipelineInputError
from ..evaluation.calibration_file import read_judge_calibration
from ..params import parse_params
from ..summary.texts import TABLE_TEXTS, fill, load_texts, percent
from . import charts, findings
from .formatting import DEMO_BANNER, TEXTS_PATH, fmt, fmt_interval, fmt_rate, git_commit, slug
from ..file_hashes import sha256_file
from ..provenance.claim_trace import claim_trace
from .inputs import (Artifact, SummaryTable, parse_manifest, read_claims, read_csv, read_json, read_tables_index,
                     read_yaml)

#: The page's words (``report_texts.yaml``): banner, sections, artifact titles, headers, figure captions.
TEXTS = load_texts(TEXTS_PATH)
#: Sections whose tables stay collapsed whatever their length (their findings are shown above them).
COLLAPSED_SECTIONS = frozenset({"truth"})


@dataclass
class TableView:
    """A table ready for the template: header, formatted rows, its captions (the report's short one, and the
    summary's full one that the table's files carry) and its files."""

    name: str
    title: str
    caption: str
    columns: list[str]
    rows: list[list[str]]
    files: Mapping[str, str] = field(default_factory=dict)
    estimand: str | None = None
    status: str | None = None
    note: str | None = None
    #: the report's caption (``report_texts.yaml``: table_captions), None where it has none (the full one is shown)
    short_caption: str | None = None
    #: the estimand less what the how-to-read note says once (None: nothing left)
    short_estimand: str | None = None
    #: rows' run-effect flags, ``arm vs opponent: flag``
    flags: list[str] = field(default_factory=list)
    #: shown behind its disclosure whatever its length
    collapsed: bool = False


def _integral(col: pd.Series) -> bool:
    """A float column holding only whole numbers (counts read back from CSV with a gap)."""
    vals = pd.to_numeric(col, errors="coerce").dropna()
    return col.dtype.kind == "f" and len(vals) > 0 and bool(np.isfinite(vals).all() and (vals == vals.round()).all())


def _cell(record: Mapping[str, Any], columns: Sequence[str]) -> str:
    values = [None if (c not in record or record[c] is pd.NA) else _py(record[c]) for c in columns]
    if len(columns) == 2:
        return fmt_interval(*values)
    return fmt(values[0])


def table_view(t: SummaryTable, report_dir: Path, values: Mapping[str, Any] | None = None,
               shared_estimand: str | None = None, collapsed: bool = False) -> TableView:
    """The table as the page shows it: its ``display`` columns (intervals as one cell) when the summary
    names them, else every CSV column; the CSV keeps every column either way. ``values`` fill the report's
    short caption (judge, opponent, arm, bar, level); ``shared_estimand`` is said once in the how-to-read note."""
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
    template = TEXTS["table_captions"].get(t.name)
    return TableView(
        name=t.name, title=t.title, caption=t.caption, estimand=t.estimand,
        columns=columns,
        rows=rows,
        files={k: _rel(Path(v), report_dir) for k, v in t.files.items()},
        status=t.status, note=t.note,
        short_caption=fill(template, **values) if template and values is not None else None,
        short_estimand=findings.short_estimand(t.estimand, shared_estimand,
                                                TEXTS["how_to_read"]["shared_estimand"]),
        flags=row_flags(t.frame), collapsed=collapsed,
    )


def caption_values(frames: Mapping[str, SummaryTable], summary: SummarySettings) -> dict[str, Any]:
    """What the short captions are filled with: the headline's judge and opponent (its first row's), the
    headline arm, the bar and the level."""
    head = frames["headline"].frame if "headline" in frames else pd.DataFrame()

    def first(column: str) -> str:
        return str(head[column].iloc[0]) if column in head.columns and len(head) else "—"

    return {"judge": first("judge"), "opponent": first("opponent"), "arm": summary.headline_arm,
            "bar": summary.bar, "level": percent(summary.confidence)}


def row_flags(df: pd.DataFrame) -> list[str]:
    """``arm vs opponent: flag`` for each row with a run-effect flag."""
    if "run_effect_flag" not in df.columns:
        return []
    return [f"{r['arm']} vs {r['opponent']}: {f}" for r in df.to_dict("records")
            if isinstance(f := r.get("run_effect_flag"), str) and f]


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


def headline_rows(df: pd.DataFrame) -> list[list[str]]:
    """The model card's table, regenerated: one row per (arm, opponent), honest columns (the judge and the
    headline method, one per table, are named in its caption), the verdict (headline interval above the bar)
    last; a summary without ``clears_bar`` shows it as missing."""
    rows = []
    for r in df.to_dict("records"):
        rows.append([
            str(r["arm"]), str(r["opponent"]), fmt_rate(r["win_rate"]), fmt(_py(r["contests"])),
            fmt(_py(r["scenarios"])),
            fmt_interval(r["headline_low"], r["headline_high"]),
            fmt_interval(r["wilson_low"], r["wilson_high"]), fmt_interval(r["boot_low"], r["boot_high"]),
            fmt(r["signflip_p_bar"]), fmt(r["signflip_p_half"]), fmt(r["signflip_min_p"]), fmt(_py(r["errors"])),
            fmt(_py(r.get("clears_bar"))),
        ])
    return rows


def headline_flags(df: pd.DataFrame) -> list[str | None]:
    """Per headline row, its run-effect flag (``run_effect_flag``, shown beside the verdict), else None."""
    return [f if isinstance(f := r.get("run_effect_flag"), str) and f else None for r in df.to_dict("records")]


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


def build_context(artifacts: list[Artifact], settings: Settings, *, out: Path,
                  commit: tuple[str | None, bool]) -> dict[str, Any]:
    """Everything the template shows, read from the artifacts (``settings``: the summary's, the seed, the preset)."""
    report_dir = out.parent
    summary = settings.summary
    bar, level = float(summary.bar), percent(summary.confidence)
    by_kind: dict[str, list[Artifact]] = {}
    for a in artifacts:
        by_kind.setdefault(a.kind, []).append(a)

    # Every summary input is read (and checked) before anything is drawn: bad input fails fast.
    claims = [c for a in by_kind.get("claims", []) for c in read_claims(a.path)]
    tables = [t for a in by_kind.get("tables_index", []) for t in read_tables_index(a.path)]
    frames = {t.name: t for t in tables}
    values = caption_values(frames, summary)
    shared = frames["headline"].estimand if "headline" in frames else None
    sections, further = _sections(tables, artifacts, report_dir, values, shared)
    section = {s["id"]: s for s in sections}
    headline = _headline(frames, report_dir, bar, level)
    if headline is not None:
        section["headline"]["tables"] = [v for v in section["headline"]["tables"] if v.name != "headline"]
        headline["short_caption"] = fill(TEXTS["table_captions"]["headline"], **values)
    forest = _add_evaluation_figures(section, frames, bar, level)
    _add_training_figures(section["training"], by_kind.get("training_log", []))
    _add_trajectory_figure(section["training"], frames)
    calibration, cal_doc = None, None
    for a in by_kind.get("judge_calibration", []):
        cal_doc = read_judge_calibration(a.path)
        calibration = _calibration_view(cal_doc, a.path)
    if headline is not None and cal_doc is not None and cal_doc["decision"]["selected"]:
        headline["judge_line"] = _selected_judge_line(cal_doc["decision"])
    appendix, lineage = _appendix_and_lineage(artifacts)
    traces = _traces(by_kind.get("provenance", []), [c["id"] for c in claims])
    truth_checked = findings.truth_agreement(claims)
    head, dirty = commit
    return {
        "preset": settings.preset, "banner": DEMO_BANNER if settings.preset == "demo" else None,
        "first_screen": _first_screen(claims, frames, truth_checked, level, forest),
        "how_to_read": _how_to_read(frames, summary, level, bar),
        "truth_findings": _truth_findings(frames, claims, truth_checked, level),
        "headline": headline, "sections": sections, "further": further,
        "health": [_health_view(a) for a in by_kind.get("policy_health", [])],
        "calibration": calibration, "claims": claims, "truth_checked": truth_checked, "traces": traces, "cards": _cards(by_kind.get("model_card", []), report_dir),
        "appendix": appendix, "lineage": lineage, "commit": head, "dirty": dirty, "bar": bar,
        "has_summary": bool(tables), "texts": TEXTS,
    }


def _first_screen(claims: Sequence[Mapping[str, Any]], frames: Mapping[str, SummaryTable],
                  truth_checked: Mapping[str, Any] | None, level: str, forest: dict | None) -> dict | None:
    """What the build concludes: one line per standing claim (retracted ones counted, not listed), the truth's
    agreement on the demo, and the headline forest plot; None without claims or forest."""
    if not claims and forest is None:
        return None
    texts = TEXTS["first_screen"]
    lines = findings.claim_lines(claims, {name: t.frame for name, t in frames.items()})
    counts = {v: sum(c["verdict"] == v for c in claims) for v in ("holds", "fails", "not_computable", "retracted")}
    rows = []
    for line in lines:
        if line.verdict == "retracted":
            continue
        if line.estimate is not None:
            number = fmt_rate(line.estimate) + (f" {fmt_interval(line.low, line.high)}" if line.low is not None else "")
        else:
            number = fmt(line.value)
        truth_value = fmt_rate(line.truth) if line.truth is not None else None
        rows.append({"line": line, "number": number, "truth_title": fill(texts["truth_title"], verdict=line.truth_verdict,
                                                                         value=truth_value) if line.truth_verdict else None})
    return {
        "title": texts["title"], "header": [fill(h, level=level) for h in texts["header"]], "rows": rows,
        "counts": fill(texts["counts"], standing=len(claims) - counts["retracted"], **counts),
        "truth": fill(texts["truth"], agree=truth_checked["agree"], checked=truth_checked["claims_with_truth"])
        if truth_checked else None,
        "forest": forest,
    }


def _how_to_read(frames: Mapping[str, SummaryTable], summary: SummarySettings, level: str, bar: float) -> dict:
    """The note every caption links to: what the tables share, said once (items whose values the build lacks
    are left out: no estimand without a headline table, no truth off the demo)."""
    texts = TEXTS["how_to_read"]
    head = frames["headline"].frame if "headline" in frames else None
    values: dict[str, Any] = {"level": level, "bar": bar, "alpha": f"{round(1.0 - float(summary.confidence), 12):g}",
                              "intervals": fill(load_texts(TABLE_TEXTS)["snippets"]["intervals"], level=level)}
    if head is not None and len(head):
        values["estimand"] = frames["headline"].estimand
        values["method"] = ", ".join(dict.fromkeys(head["headline_method"].astype(str)))
        values["scenarios"] = fmt(_py(head["scenarios"].max()))
        values["min_p"] = fmt(_py(pd.to_numeric(head["signflip_min_p"], errors="coerce").min()))
    needs = {"estimand": ("estimand",), "interval": ("method",), "signflip": ("scenarios", "min_p")}
    items = []
    for item in texts["items"]:
        if any(values.get(k) is None for k in needs.get(item["id"], ())):
            continue
        if item["id"] == "truth" and "truth" not in frames:
            continue
        items.append({"id": item["id"], "term": fill(item["term"], **values), "text": fill(item["text"], **values)})
    return {"title": texts["title"], "items": items, "full": texts["full"]}


def _truth_findings(frames: Mapping[str, SummaryTable], claims: Sequence[Mapping[str, Any]],
                    truth_checked: Mapping[str, Any] | None, level: str) -> dict | None:
    """The truth section's findings (demo): the share of intervals covering their truth per table with each miss,
    and the claims beside their truth verdicts; None without the truth table."""
    table = frames.get("truth")
    if table is None or table.frame.empty:
        return None
    texts = TEXTS["truth_findings"]
    total, per_table = findings.truth_coverage(table.frame)

    def miss(m: findings.Miss) -> str:
        se = m.distance_in_se
        return (f"{m.label}: {fmt_rate(m.estimate)} {fmt_interval(m.low, m.high)}, truth {fmt_rate(m.truth)}"
                + (f" ({se:.1f} truth SE outside)" if se is not None else ""))

    coverage = [{"table": c.table, "n": c.n, "covered": c.covered, "share": f"{c.share:.1%}",
                 "misses": [miss(m) for m in c.misses]} for c in per_table]
    checked = [c for c in claims if c.get("truth_verdict")]
    return {
        "coverage_line": fill(texts["coverage"], covered=total.covered, n=total.n, share=f"{total.share:.1%}", level=level),
        "caveat": texts["caveat"], "coverage_header": texts["coverage_header"], "coverage": coverage,
        "claims_line": fill(texts["claims"], agree=truth_checked["agree"], checked=truth_checked["claims_with_truth"])
        if truth_checked else None,
        "claims_header": texts["claims_header"],
        "claims": [{"id": c["id"], "text": " ".join(str(c["text"]).split()), "verdict": c["verdict"],
                    "rule_verdict": c.get("rule_verdict"), "truth_verdict": c["truth_verdict"],
                    "agrees": c.get("rule_verdict") == c["truth_verdict"]} for c in checked],
    }


def _sections(tables: list[SummaryTable], artifacts: list[Artifact], report_dir: Path, values: Mapping[str, Any],
              shared_estimand: str | None) -> tuple[list[dict], list[TableView]]:
    """The results sections in page order, each with the summary tables placed there (by name) and its raw
    metrics; and the tables no section takes (the appendix's further tables)."""
    sections, placed = [], set()
    for spec in TEXTS["sections"]:
        views = [table_view(t, report_dir, values, shared_estimand, collapsed=spec["id"] in COLLAPSED_SECTIONS)
                 for t in tables if t.name not in placed and t.name in spec["tables"]]
        placed |= {v.name for v in views}
        named = [a for a in artifacts if a.name in spec.get("artifacts", ())]
        sections.append({"id": spec["id"], "title": spec["title"], "tables": views, "figures": [],
                         "artifacts": [a for a in named if a.path.suffix in SHOWN_SUFFIXES],
                         # files a reader takes away as they are (numbers.tex): linked, not shown
                         "downloads": [{"path": str(a.path), "href": _rel(a.path, report_dir)}
                                       for a in named if a.path.suffix != ".json"]})
    further = [table_view(t, report_dir, values, shared_estimand) for t in tables if t.name not in placed]
    return sections, further


def _headline(frames: Mapping[str, SummaryTable], report_dir: Path, bar: float, level: str) -> dict | None:
    """The headline table as the page shows it (None without one): its own header, the judge and method lines."""
    if "headline" not in frames:
        return None
    t = frames["headline"]
    texts = TEXTS["headline"]
    judges, methods = (", ".join(dict.fromkeys(t.frame[c].astype(str))) if c in t.frame.columns else None
                       for c in ("judge", "headline_method"))
    return {"caption": t.caption, "estimand": t.estimand, "header": [fill(h, level=level) for h in texts["header"]],
            "note": t.note,
            "judge_line": fill(texts["judge_line"], judges=judges) if judges else None,
            "method_line": fill(texts["method_line"], methods=methods) if methods else None,
            "rows": headline_rows(t.frame), "flags": headline_flags(t.frame),
            "files": table_view(t, report_dir).files, "bar": bar}


def _figure(key: str, svg: str, *, kind: str, **values: Any) -> dict:
    """A figure with its caption from ``report_texts.yaml`` (``figures.<kind>``)."""
    return {"id": key, "svg": svg, "caption": fill(TEXTS["figures"][kind.replace("-", "_")]["caption"], **values),
            "kind": kind}


def _add_evaluation_figures(section: Mapping[str, dict], frames: Mapping[str, SummaryTable], bar: float,
                            level: str) -> dict | None:
    """Per-scenario and per-run small multiples, for the judge the headline lists first; returns the forest plot
    of the headline rows (the first screen's, drawn for its column), or None."""
    focus = _focus_judge(frames)
    if focus is None:
        return None
    texts = TEXTS["figures"]
    forest = None
    h = frames["headline"].frame
    part = h[h["judge"].astype(str) == focus]
    part = part.assign(label=part["arm"].astype(str) + " vs " + part["opponent"].astype(str))
    if pd.to_numeric(part["win_rate"], errors="coerce").notna().any():
        svg = charts.forest_plot(part, name="forest", bar=bar, title=fill(texts["forest"]["title"], judge=focus),
                                 xlabel=fill(texts["forest"]["axis"], level=level), width=3.3, row_height=0.19)
        forest = _figure("fig-forest", svg, kind="forest", judge=focus, level=level)
    if "per_scenario" in frames:
        df = _headline_first(frames["per_scenario"].frame, frames)
        df = df[df["judge"].astype(str) == focus]
        df = df[df.groupby(["opponent", "pool"])["win_rate"].transform(
            lambda v: pd.to_numeric(v, errors="coerce").notna().any())]
        df = df.assign(facet="vs " + df["opponent"].astype(str) + " (" + df["pool"].astype(str) + " pool)")
        study = (df["pool"] == "train") & ~df["opponent"].astype(str).str.startswith("arm:")
        for part, target, key in ((df[study], "per-scenario", "study"), (df[~study], "head-to-head", "other")):
            if part.empty:
                continue
            title = fill(texts["per_scenario"]["title"], what=texts["per_scenario"]["what"][key], judge=focus)
            svg = charts.interval_small_multiples(part, facet="facet", category="vignette_id", bar=bar,
                                                  name=f"scn-{key}", title=title)
            section[target]["figures"].append(_figure(f"fig-scenario-{key}", svg, kind="per-scenario", title=title))
    if "per_run" in frames:
        df = _headline_first(frames["per_run"].frame, frames)
        df = df[df["judge"].astype(str) == focus]
        if pd.to_numeric(df["win_rate"], errors="coerce").notna().any():
            title = fill(texts["per_run"]["title"], judge=focus)
            df = df.assign(run=df["run"].map(lambda r: f"run {r}"), facet="vs " + df["opponent"].astype(str))
            svg = charts.interval_small_multiples(df, facet="facet", category="run", bar=bar, name="run",
                                                  title=title, ncols=3)
            section["per-run"]["figures"].append(_figure("fig-run", svg, kind="per-run", title=title,
                                                          n_runs=df["run"].nunique()))
    return forest


def _add_training_figures(training: dict, log_artifacts: Sequence[Artifact]) -> None:
    """Gold/proxy curves (when a gold scorer was logged) and the training curves, one line per arm."""
    logs = {a.arm or a.name: read_csv(a.path) for a in log_artifacts}
    logs = {arm: log for arm, log in logs.items() if not log.empty}
    if not logs:
        return
    texts = TEXTS["figures"]
    if any("gold" in log.columns and log["gold"].notna().any() for log in logs.values()):
        svg = charts.gold_proxy_curves(logs, name="gold-proxy", title=texts["gold_proxy"]["title"])
        training["figures"].append(_figure("fig-gold-proxy", svg, kind="gold-proxy"))
        svg = charts.gold_proxy_against_kl(logs, name="gold-proxy-kl", title=texts["gold_proxy_kl"]["title"])
        training["figures"].append(_figure("fig-gold-proxy-kl", svg, kind="gold-proxy-kl"))
    svg = charts.training_curves(logs, name="training", title=texts["training"]["title"])
    training["figures"].append(_figure("fig-training", svg, kind="training"))


def _add_trajectory_figure(training: dict, frames: Mapping[str, SummaryTable]) -> None:
    """Gold gain and proxy against √KL from the truths at kept checkpoints (demo), when they were drawn."""
    table = frames.get("trajectory")
    if table is None or table.frame.empty:
        return
    title = TEXTS["figures"]["truth_kl"]["title"]
    svg = charts.truth_against_kl(table.frame, name="truth-kl", title=title)
    training["figures"].append(_figure("fig-truth-kl", svg, kind="truth-kl", arms=table.frame["arm"].nunique()))


def _health_view(a: Artifact) -> dict:
    """One arm's training-health verdict and its checks, formatted (an arm trained elsewhere has no checks)."""
    h = read_json(a.path)
    return {
        "arm": a.arm or a.name, "verdict": h.get("verdict"), "n_steps": h.get("n_steps"),
        "checks": [
            {"name": k, "value": fmt(c["value"]), "threshold": fmt(c["threshold"]), "passed": c["passed"],
             "description": c["description"]}
            for k, c in (h.get("checks") or {}).items()
        ],
    }


def _calibration_view(cal: Mapping[str, Any], path: Path) -> dict:
    """The judge calibration (the document :func:`read_judge_calibration` returns): one row per candidate judge,
    the agreement-by-margin figure, the selection and the judges below the minimum."""
    decision, judges = cal["decision"], cal["judges"]
    rows = []
    for name, j in judges.items():
        agreement, position, fsb = j["agreement"], j["position"], j["first_slot_bias"]
        rows.append([name, fmt(j["n_separated_pairs"]), fmt(agreement["strict"]), fmt(agreement["half"]),
                     fmt(agreement["dropped"]), fmt(j["kappa"]), fmt(position["consistency"]),
                     fmt(position["n_flips"]), fmt(position["n_with_tie"]),
                     f"{fmt(fsb['n_first_slot_both'])} / {fmt(fsb['n_second_slot_both'])} (p {fmt(fsb['p_value'])})",
                     fmt(decision["verdicts"][name]["passed"])])
    by_margin = {n: [{"bin": f"{b['low']:g}-{b['high']:g}", "agreement": b["agreement_half"], "n": b["n_pairs"]}
                     for b in j["by_margin"]]
                 for n, j in judges.items() if any(b["agreement_half"] is not None for b in j["by_margin"])}
    figure = None
    if by_margin:
        title = TEXTS["figures"]["calibration"]["title"]
        figure = _figure("fig-calibration", charts.agreement_by_margin(by_margin, name="calibration", title=title),
                         kind="calibration")
    weak = [{"judge": n, "agreement": fmt(decision["verdicts"][n]["agreement"]), "way": decision["agreement_counted"]}
            for n in decision["failed"]]
    return {
        "header": TEXTS["calibration"]["header"], "rows": rows, "selected": ", ".join(decision["selected"]) or None,
        "min_agreement": decision["min_agreement"], "accepted_weak": decision["accepted_weak"],
        "weak": weak, "delta": cal["delta"], "figure": figure, "path": str(path),
    }


def _selected_judge_line(decision: Mapping[str, Any]) -> str:
    """The headline's judge line when calibration selected the judges: who, and how well they agree with humans."""
    verdict = decision["verdicts"][decision["selected"][0]]
    return fill(TEXTS["headline"]["selected_judge_line"], judge=", ".join(decision["selected"]),
                agreement=fmt(verdict["agreement"], 3), counted=decision["agreement_counted"],
                minimum=fmt(decision["min_agreement"], 3))


def _cards(card_artifacts: Sequence[Artifact], report_dir: Path) -> list[dict]:
    return [{"path": _rel(a.path, report_dir), "artifact": str(a.path.parent), "sha256": sha256_file(a.path)}
            for a in card_artifacts]


def _traces(provenance: Sequence[Artifact], claim_ids: Sequence[str]) -> dict[str, dict]:
    """Each claim's trace to its roots (stages, raw inputs, config values, code), from the provenance document."""
    traces: dict[str, dict] = {}
    for a in provenance:
        doc = read_json(a.path)
        for claim_id in claim_ids:
            if claim_id in (doc.get("claims") or {}):
                traces[claim_id] = claim_trace(doc, claim_id)
    return traces


#: Raw artifacts the appendix shows (JSON metrics, and the pre-registration's YAML).
SHOWN_SUFFIXES = (".json", ".yaml")


def _appendix_and_lineage(artifacts: Sequence[Artifact]) -> tuple[list[dict], list[dict]]:
    """The raw JSON artifacts shown in appendix B, and every input with its sha256 (appendix C)."""
    appendix, lineage = [], []
    for a in artifacts:
        is_file = a.path.is_file()
        lineage.append({"name": a.name, "kind": a.kind, "path": str(a.path),
                        "sha256": sha256_file(a.path) if is_file else None,
                        "bytes": a.path.stat().st_size if is_file else None})
        known = TEXTS["artifacts"].get(a.name, {"title": a.name.replace("_", " "), "caption": ""})
        if a.path.suffix in SHOWN_SUFFIXES and a.kind not in {"claims", "tables_index", "provenance"}:
            appendix.append({"id": f"artifact-{slug(a.name)}", "title": known["title"], "caption": known["caption"],
                             "path": str(a.path), "data": read_json(a.path) if a.path.suffix == ".json"
                             else read_yaml(a.path)})
    return appendix, lineage


def render(context: Mapping[str, Any]) -> str:
    return _environment().get_template("report.html.j2").render(**context)


def worlds_calibration(path: Path | None, sha256: str | None) -> dict[str, Any] | None:
    """The latest calibration across worlds (``results/calibration/claims.csv``) for the claims ledger: per claim,
    its false-hold rate and power with their counts, and the number of worlds. ``sha256`` is the hash the rule
    saw (its command carries it, so a new calibration reruns the report); a file that changed since is refused."""
    if path is None:
        return None
    actual = sha256_file(path)
    if sha256 is not None and actual != sha256:
        raise PipelineInputError("the calibration changed since this report's command was written; rerun it",
                                 where=str(path))
    table = pd.read_csv(path)
    by_claim = {}
    for r in table.to_dict("records"):
        n_true = int(r["truth_holds"])
        n_false = int(r["worlds"]) - n_true
        by_claim[str(r["claim"])] = {"worlds": int(r["worlds"]), "false_holds": int(r["holds_when_false"]),
                                     "truth_fails": n_false, "holds_when_true": int(r["holds_when_true"]),
                                     "truth_holds": n_true, "false_hold_rate": r["false_hold_rate"],
                                     "power": r["power"], "decided_by_design": bool(r["decided_by_design"])}
    worlds = max((v["worlds"] for v in by_claim.values()), default=0)
    coverage_path = Path(path).with_name("summary.csv")  # written beside it by calibration-summary
    coverage = pd.read_csv(coverage_path).to_dict("records") if coverage_path.is_file() else []
    return {"path": str(path), "sha256": actual, "worlds": worlds, "by_claim": by_claim,
            "coverage_path": str(coverage_path), "coverage": coverage}


def build_report(inputs: Mapping[str, Any], settings: Settings, *, out: Path,
                 calibration: dict[str, Any] | None = None) -> str:
    artifacts = parse_manifest(inputs)
    context = build_context(artifacts, settings, out=out, commit=git_commit())
    return render(dict(context, worlds_calibration=calibration))


def cli_main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(prog="reappraisal report", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--inputs", required=True, help="JSON object: artifact name -> path or {path, kind, arm}")
    ap.add_argument("--params", required=True)
    ap.add_argument("--model-cards", nargs="*", default=[], help="the regenerated model cards (README.md), linked and hashed")
    ap.add_argument("--worlds-calibration", type=Path, default=None,
                    help="the latest calibration's per-claim table (results/calibration/claims.csv), if one was run")
    ap.add_argument("--worlds-calibration-sha256", default=None, help="its sha256 when the command was written")
    args = ap.parse_args(argv)
    settings = Settings.from_params(parse_params(args.params))
    inputs = dict(parse_params(args.inputs))
    for path in args.model_cards:
        inputs[f"model card {Path(path).parent}"] = {"path": path, "kind": "model_card"}
    out = Path(args.out)
    text = build_report(inputs, settings, out=out,
                        calibration=worlds_calibration(args.worlds_calibration, args.worlds_calibration_sha256))
    with atomic_path(out, suffix=".html") as tmp:
        tmp.write_text(text, encoding="utf-8")
    print(f"report: {out} ({len(inputs)} inputs)")
    return 0
