"""The HTML report: renders artifacts, never computes or types a number itself.

Every section is read from one input file named on the command line (the
rule's inputs), and the lineage table lists each input with its sha256, so a
number in the report can be traced to the artifact it came from. The demo
preset gets a banner: its numbers carry no scientific meaning.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import html
import json
import subprocess
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..atomic import atomic_path
from ..params import parse_params
from ..errors import PipelineInputError

DEMO_BANNER = (
    "DEMO PRESET: synthetic data and tiny random-init models. These numbers show that every "
    "stage runs and that the statistics and lineage are computed correctly; they carry no "
    "scientific meaning about reappraisal or about any real model."
)

CSS = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
.banner{background:#fff3cd;border:1px solid #e0c060;padding:.8em 1em;border-radius:6px;font-weight:600}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.9em}
td,th{border:1px solid #ccc;padding:.25em .5em;vertical-align:top;text-align:left}
th{background:#f3f3f3} code{font-size:.85em} h2{border-bottom:1px solid #ddd;padding-bottom:.2em}
.muted{color:#666;font-size:.85em}
"""

#: Titles and one-line captions of known sections (others are shown generically).
SECTIONS: dict[str, tuple[str, str]] = {
    "normalize": ("Rating normalization", "z-scores within study × rater × dimension; zero-variance raters handled as configured."),
    "split": ("Reappraisal split", "Split by reappraisal, stratified by scenario; GPT-4 and opponent answers are held out of all training."),
    "leakage": ("Leakage check", "n-gram overlap between every training text and every held-out evaluation answer / OOD scenario."),
    "reward_models": ("Reward-model ensemble", "Held-out pairwise accuracy (ties 0.5), scenario-clustered intervals, best-of-N diagnostic."),
    "grm": ("Generative reward model", "Held-out accuracy, unparseable verdicts, position consistency, first-slot bias."),
}


def section_order(name: str) -> tuple[int, str, int]:
    """Known sections in their listed order, then policy arms (health before log), then the rest."""
    known = list(SECTIONS)
    if name in known:
        return (known.index(name), "", 0)
    if name.startswith("policy_"):
        return (len(known), name.removesuffix("_training_log"), int(name.endswith("_training_log")))
    return (len(known) + 1, name, 0)


def section_title(name: str) -> tuple[str, str]:
    if name in SECTIONS:
        return SECTIONS[name]
    if name.startswith("policy_") and name.endswith("_training_log"):
        arm = name.removeprefix("policy_").removesuffix("_training_log")
        return (f"Policy arm {arm}: training log", "Per-step GRPO metrics as TRL logged them.")
    if name.startswith("policy_"):
        arm = name.removeprefix("policy_")
        return (f"Policy arm {arm}: training health", "Health verdict with the thresholds from the config.")
    return (name.replace("_", " ").capitalize(), "")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def render_value(value: Any, depth: int = 0) -> str:
    """Render JSON as nested tables (numbers as written in the artifact, floats to 4 places)."""
    if isinstance(value, Mapping):
        if not value:
            return "<span class=muted>(empty)</span>"
        if len(value) > 1 and all(_is_flat_mapping(v) for v in value.values()):
            # a table of records keyed by name: one row each, one column per field
            cols = list(dict.fromkeys(k for v in value.values() for k in v))
            head = "<th></th>" + "".join(f"<th>{html.escape(str(c))}</th>" for c in cols)
            body = "".join(
                f"<tr><th>{html.escape(str(k))}</th>" + "".join(f"<td>{html.escape(_scalar(v.get(c, '')))}</td>" for c in cols) + "</tr>"
                for k, v in value.items()
            )
            return f"<table><tr>{head}</tr>{body}</table>"
        rows = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{render_value(v, depth + 1)}</td></tr>" for k, v in value.items())
        return f"<table>{rows}</table>"
    if isinstance(value, list):
        if not value:
            return "<span class=muted>(none)</span>"
        if all(isinstance(v, Mapping) for v in value):
            cols = list(dict.fromkeys(k for v in value for k in v))
            head = "".join(f"<th>{html.escape(str(c))}</th>" for c in cols)
            body = "".join(
                "<tr>" + "".join(f"<td>{render_value(v.get(c, ''), depth + 1)}</td>" for c in cols) + "</tr>" for v in value[:200]
            )
            more = f"<p class=muted>{len(value) - 200} more rows in the artifact</p>" if len(value) > 200 else ""
            return f"<table><tr>{head}</tr>{body}</table>{more}"
        return html.escape(", ".join(_scalar(v) for v in value))
    return html.escape(_scalar(value))


def _is_flat_mapping(v: Any) -> bool:
    return isinstance(v, Mapping) and bool(v) and not any(isinstance(x, (Mapping, list)) for x in v.values())


def _scalar(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4f}"
    return str(v)


#: Training-log columns charted per step, in order (those present are drawn).
CHARTED = ("reward", "reward_std", "kl", "entropy", "frac_reward_zero_std", "clipped_ratio", "gate_pass_rate", "completion_mean_length")


def render_training_log(path: Path) -> str:
    """Per-step charts of a GRPO training log (CSV with a ``step`` column)."""
    import pandas as pd

    from .charts import line_chart

    log = pd.read_csv(path)
    if log.empty or "step" not in log.columns:
        return "<p class=muted>(training log is empty)</p>"
    charts = [line_chart(log["step"], log[c], title=c) for c in CHARTED if c in log.columns]
    return f"<p class=muted>{len(log)} logged steps.</p><div>{''.join(charts)}</div>"


def git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"


def build_report(inputs: Mapping[str, str], *, preset: str) -> str:
    parts = [f"<!doctype html><html><head><meta charset=utf-8><title>Reappraisal pipeline report</title><style>{CSS}</style></head><body>"]
    parts.append("<h1>Reappraisal RLHF pipeline: report</h1>")
    if preset == "demo":
        parts.append(f"<p class=banner>{html.escape(DEMO_BANNER)}</p>")
    lineage = []
    for name, path in sorted(inputs.items(), key=lambda kv: section_order(kv[0])):
        p = Path(path)
        if not p.exists():
            raise PipelineInputError("report input does not exist", where=str(p))
        title, caption = section_title(name)
        parts.append(f"<h2 id={html.escape(name)}>{html.escape(title)}</h2>")
        if caption:
            parts.append(f"<p class=muted>{html.escape(caption)} Source: <code>{html.escape(path)}</code></p>")
        if p.suffix == ".json":
            try:
                parts.append(render_value(json.loads(p.read_text())))
            except json.JSONDecodeError as exc:
                raise PipelineInputError(f"not valid JSON ({exc.msg})", where=str(p)) from None
        elif p.name.endswith("training_log.csv"):
            parts.append(render_training_log(p))
        elif p.suffix in {".html", ".htm"}:
            parts.append(p.read_text())
        else:
            parts.append(f"<pre>{html.escape(p.read_text()[:20000])}</pre>")
        lineage.append({"section": name, "artifact": path, "sha256": sha256_file(p), "bytes": p.stat().st_size})
    parts.append("<h2 id=lineage>Lineage</h2><p class=muted>Every section above is rendered from exactly these files.</p>")
    parts.append(render_value(lineage))
    parts.append(
        render_value(
            {
                "preset": preset,
                "git commit": git_commit(),
                "built at (UTC)": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            }
        )
    )
    parts.append("</body></html>\n")
    return "\n".join(parts)


def cli_main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(prog="reappraisal report", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--inputs", required=True, help="JSON object: section name -> artifact path")
    ap.add_argument("--params", required=True)
    args = ap.parse_args(argv)
    cfg = parse_params(args.params)
    inputs = parse_params(args.inputs)
    text = build_report(inputs, preset=cfg["preset"])
    with atomic_path(args.out, suffix=".html") as tmp:
        tmp.write_text(text, encoding="utf-8")
    print(f"report: {args.out} ({len(inputs)} sections)")
    return 0
