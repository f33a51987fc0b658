"""Where the demo's seconds go: every job of one fresh-clone demo run under cProfile, one table per rule.

Clones the repository at ``--commit`` into a temporary folder (as ``bench_demo.py`` does), links the
project's ``.venv``, and runs the README's demo command with ``REAPPRAISAL_PROFILE_DIR`` set, so each
``python -m reappraisal <command>`` a rule runs writes its profile (:mod:`reappraisal.profiling`).
Then, per command (a rule's name with ``-`` for ``_``): jobs, Snakemake's job seconds for the rule,
the commands' wall and CPU seconds, the seconds spent importing modules (cumulative time of the import
machinery), the interpreter's start-up CPU before the command ran, and the five functions with the
most self time over the rule's jobs.

    python benchmarks/profile_demo.py                       # HEAD, writes profile_demo.md beside the profiles
    python benchmarks/profile_demo.py --keep /tmp/demo_prof # keep the clone and its profiles

cProfile slows Python-heavy code (tokenizers' and torch's kernels much less), so the wall times here are
above a plain run's; use ``bench_demo.py`` for the time itself. Run it with nothing else on the machine.
"""

from __future__ import annotations

import argparse
import json
import pstats
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
from bench_demo import demo_in_clone, rule_seconds  # the same clone, command and log reading

IMPORT_FUNCTIONS = {("<frozen importlib._bootstrap>", "_find_and_load")}


def short_name(key: tuple[str, int, str]) -> str:
    """A function's readable name: a built-in as pstats prints it, else package-relative path and name."""
    file, line, func = key
    if file == "~":
        return func.strip("<>").replace("built-in method ", "").replace("method ", "")
    for marker in ("site-packages/", "/src/"):
        if marker in file:
            file = file.split(marker, 1)[1]
            break
    return f"{file}:{func}"


def summarize(profile_dir: Path, job_seconds: dict[str, float]) -> list[dict]:
    """One row per command from its jobs' ``.json`` and ``.prof`` files (see module doc)."""
    records: dict[str, list[dict]] = defaultdict(list)
    for path in sorted(profile_dir.glob("*.json")):
        record = json.loads(path.read_text())
        record["prof"] = path.with_suffix(".prof")
        records[record["command"]].append(record)
    rows = []
    for command, jobs in records.items():
        if command == "run":  # the launcher: its profile is the whole run
            continue
        stats = pstats.Stats(*[str(j["prof"]) for j in jobs if j["prof"].is_file()])
        entries = stats.stats  # key -> (primitive calls, calls, self time, cumulative time, callers)
        imports = sum(v[3] for k, v in entries.items() if (k[0], k[2]) in IMPORT_FUNCTIONS)
        top = sorted(entries.items(), key=lambda kv: -kv[1][2])[:5]
        rows.append({
            "rule": command.replace("-", "_"), "jobs": len(jobs),
            "job_s": job_seconds.get(command.replace("-", "_")),
            "wall_s": sum(j["wall_s"] for j in jobs), "cpu_s": sum(j["cpu_s"] for j in jobs),
            "imports_s": imports, "startup_s": sum(j["startup_cpu_s"] for j in jobs),
            "top": [(short_name(k), v[2]) for k, v in top],
        })
    return sorted(rows, key=lambda r: -(r["job_s"] or r["wall_s"]))


def markdown(rows: list[dict], total_wall: float, commit: str) -> str:
    lines = [f"Profile of one demo run at {commit}: {total_wall:.0f} s wall under cProfile, "
             f"{sum(r['job_s'] or 0 for r in rows):.0f} job seconds.", "",
             "| rule | jobs | job s | command wall s | CPU s | imports s | start-up s | top self time (s) |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        top = "; ".join(f"{name} {sec:.1f}" for name, sec in r["top"])
        job = f"{r['job_s']:.0f}" if r["job_s"] is not None else "—"
        lines.append(f"| {r['rule']} | {r['jobs']} | {job} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | "
                     f"{r['imports_s']:.1f} | {r['startup_s']:.1f} | {top} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commit", default="HEAD")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--keep", default=None, help="a folder for the clone and its profiles (default: temporary)")
    args = ap.parse_args(argv)
    if not (REPO / ".venv/bin/snakemake").exists():
        raise SystemExit("install first: bash scripts/install.sh")
    commit = subprocess.run(["git", "rev-parse", "--short", args.commit], cwd=REPO, capture_output=True, text=True,
                            check=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="profile_demo_") as tmp:
        root = Path(args.keep) if args.keep else Path(tmp)
        profiles = root / "profiles"
        wall, log = demo_in_clone(root, commit, args.cores, {"REAPPRAISAL_PROFILE_DIR": str(profiles)})
        text = markdown(summarize(profiles, rule_seconds(log)), wall, commit)
        (root / "profile_demo.md").write_text(text)
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
