"""Wall time of the demo (the README's main command) from fresh clones, side by side with a baseline.

Each run clones the repository at a commit into a new temporary folder (a fresh checkout: no results, no
.snakemake), links the project's installed ``.venv`` into it, and times the README's demo command at that commit
(`python -m reappraisal run results/report.html --cores 2`: Snakemake, then the DVC record; before the ``run``
command existed, `snakemake --cores 2 results/report.html`). Runs of
the commit under test and of the baseline alternate, so a slower or faster spell of the machine hits both.
Per run it prints the wall time and the three slowest rules (from Snakemake's own job timestamps); at the end,
mean / min / max per commit and the ratio to the baseline's mean.

    python benchmarks/bench_demo.py --runs 3 --baseline b1fd9fa      # HEAD vs a baseline commit
    python benchmarks/bench_demo.py --runs 3                         # HEAD alone
    python benchmarks/bench_demo.py --runs 2 --baseline-env REAPPRAISAL_NUMERICS=native   # the cost of pinning
    python benchmarks/bench_demo.py --runs 1 --baseline b1fd9fa --keep /tmp/bench   # and keep both runs' tables

``--baseline-env KEY=VALUE`` (repeatable) makes the baseline the same commit run with those variables
(``REAPPRAISAL_NUMERICS=native``: the machine's own kernels, without the pinned numerics).

Run it with nothing else on the machine: the demo uses both cores.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
from reappraisal import numerics  # this checkout's package

_STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
_RULE = re.compile(r"^(?:local)?rule (\w+):$")
_DONE = re.compile(r"^Finished jobid: (\d+) \(Rule: (\w+)\)$")
_JOBID = re.compile(r"^\s+jobid: (\d+)$")


def rule_seconds(log: str) -> dict[str, float]:
    """Seconds each rule's jobs ran (summed over its jobs), from Snakemake's timestamped log."""
    now = None
    started: dict[str, tuple[str, datetime]] = {}
    pending_rule = None
    totals: dict[str, float] = {}
    for line in log.splitlines():
        if m := _STAMP.match(line.strip()):
            now = datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y")
        elif m := _RULE.match(line.strip()):
            pending_rule = m.group(1)
        elif (m := _JOBID.match(line)) and pending_rule and now is not None:
            started[m.group(1)] = (pending_rule, now)
            pending_rule = None
        elif (m := _DONE.match(line.strip())) and now is not None and m.group(1) in started:
            rule, t0 = started.pop(m.group(1))
            totals[rule] = totals.get(rule, 0.0) + (now - t0).total_seconds()
    return totals


#: The variables the package pins: a run with the pin off must not inherit them (the runs' own environment is
#: built from this process's, which importing the package pinned too).
PINNED = tuple(numerics.PINNED)


def demo_in_clone(root: Path, commit: str, cores: int, extra_env: dict[str, str] | None = None) -> tuple[float, str]:
    """Clone this repository at ``commit`` into ``root/repo``, link the ``.venv`` and run the README's demo
    command there: (wall seconds, Snakemake's log). ``profile_demo.py`` runs it too."""
    repo = root / "repo"
    subprocess.run(["git", "clone", "-q", str(REPO), str(repo)], check=True)
    subprocess.run(["git", "checkout", "-q", commit], cwd=repo, check=True)
    (repo / ".venv").symlink_to(REPO / ".venv")
    env = {k: v for k, v in os.environ.items() if k not in PINNED}
    env.update(PYTHONPATH=str(repo / "src"), **(extra_env or {}))  # the launcher of that commit, not this one
    if (repo / "src/reappraisal/run_io.py").is_file():
        cmd = [str(REPO / ".venv/bin/python"), "-m", "reappraisal", "run", "results/report.html", "--cores", str(cores)]
    else:
        cmd = [str(REPO / ".venv/bin/snakemake"), "--cores", str(cores), "results/report.html"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-3000:])
        raise SystemExit(f"the demo failed at {commit} (exit {proc.returncode})")
    return wall, proc.stderr + proc.stdout


def one_run(commit: str, cores: int, extra_env: dict[str, str] | None = None,
            keep: Path | None = None) -> tuple[float, dict[str, float]]:
    """One timed demo in a fresh clone; with ``keep``, its summary tables and per-rule seconds are copied there
    (to compare what two trees measured, not only how fast)."""
    with tempfile.TemporaryDirectory(prefix="bench_demo_") as tmp:
        wall, log = demo_in_clone(Path(tmp), commit, cores, extra_env)
        rules = rule_seconds(log)
        if keep is not None:
            shutil.copytree(Path(tmp) / "repo/results/summary/tables", keep / "tables")
            (keep / "rule_seconds.json").write_text(json.dumps(rules, indent=1, sort_keys=True))
        return wall, rules


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--commit", default="HEAD")
    ap.add_argument("--baseline", default=None, help="a commit to time side by side (alternating runs)")
    ap.add_argument("--baseline-env", action="append", default=[], metavar="KEY=VALUE",
                    help="the baseline is --commit run with these variables (repeatable)")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--keep", type=Path, default=None,
                    help="copy each run's summary tables and rule seconds to KEEP/<commit>-run<i>/")
    args = ap.parse_args(argv)
    if args.baseline and args.baseline_env:
        raise SystemExit("give --baseline (another commit) or --baseline-env (the same commit, other variables)")
    if not (REPO / ".venv/bin/snakemake").exists():
        raise SystemExit("install first: bash scripts/install.sh")
    resolve = lambda ref: subprocess.run(["git", "rev-parse", "--short", ref], cwd=REPO, capture_output=True,
                                         text=True, check=True).stdout.strip()
    head = resolve(args.commit)
    sides: dict[str, tuple[str, dict[str, str]]] = {head: (head, {})}
    if args.baseline:
        sides[resolve(args.baseline)] = (resolve(args.baseline), {})
    elif args.baseline_env:
        extra = dict(item.split("=", 1) for item in args.baseline_env)
        sides[f"{head} " + " ".join(args.baseline_env)] = (head, extra)
    walls: dict[str, list[float]] = {label: [] for label in sides}
    job_seconds: dict[str, list[float]] = {label: [] for label in sides}
    for i in range(args.runs):
        for label, (commit, extra) in sides.items():
            keep = args.keep / f"{label.replace(' ', '_')}-run{i + 1}" if args.keep else None
            wall, rules = one_run(commit, args.cores, extra, keep)
            walls[label].append(wall)
            job_seconds[label].append(sum(rules.values()))
            slowest = ", ".join(f"{r} {s:.0f} s" for r, s in sorted(rules.items(), key=lambda kv: -kv[1])[:3])
            print(f"run {i + 1} {label}: {wall:.1f} s ({wall / 60:.2f} min), {sum(rules.values()):.0f} job seconds; "
                  f"slowest rules: {slowest}", flush=True)
    print("\n| run | runs | mean | min | max | job seconds (mean) | ratio to baseline |\n|---|---|---|---|---|---|---|")
    base = statistics.mean(walls[list(sides)[-1]]) if len(sides) > 1 else None
    for label, w in walls.items():
        ratio = f"{statistics.mean(w) / base:.2f}" if base else "—"
        print(f"| {label} | {len(w)} | {statistics.mean(w):.1f} s | {min(w):.1f} s | {max(w):.1f} s | "
              f"{statistics.mean(job_seconds[label]):.0f} | {ratio} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
