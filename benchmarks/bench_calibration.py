"""The calibration across worlds from a fresh clone: its wall time per world and what it found.

Clones the repository at ``--commit`` into a new folder (a fresh checkout), links the project's ``.venv``,
sets ``calibration.worlds`` (and ``calibration.world_config`` from ``--world-config``, a YAML mapping) in the
clone's demo preset, and times `python -m reappraisal run results/calibration/summary.csv --cores 2 --no-record`.
Prints the wall time, the time per world, and the calibration's tables (``results/calibration/``).

    python benchmarks/bench_calibration.py --worlds 1 --keep /tmp/cal1       # one world: the cost of one
    python benchmarks/bench_calibration.py --worlds 20 --keep /tmp/cal20     # then many, on the same machine

The demo preset's calibration builds lighter worlds, two side by side (``cores_per_world: 1``). ``--world-config``
replaces whole sections of the preset's ``world_config``; full demo worlds, one at a time on both cores:

    python benchmarks/bench_calibration.py --worlds 8 --cores-per-world 2 \
        --world-config '{policy: {}, evaluation: {calibration: {accept_weak_judge: true}}}'

Run it with nothing else on the machine: the worlds use both cores.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
from bench_demo import rule_seconds  # the same log reading as the demo's benchmark


def clone(commit: str, dest: Path) -> Path:
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(dest)], check=True)
    subprocess.run(["git", "checkout", "--quiet", commit], cwd=dest, check=True)
    (dest / ".venv").symlink_to(REPO / ".venv")
    return dest


def set_calibration(root: Path, worlds: int, world_config: dict, cores_per_world: int | None = None) -> None:
    """Set the calibration in the clone's demo preset (its `calibration:` entry becomes one line; the other
    comments stay): ``worlds``, ``cores_per_world`` when given, and ``world_config`` merged over the preset's own
    (one level deep: a section given here replaces the preset's)."""
    path = root / "config.yaml"
    current = yaml.safe_load(path.read_text())["presets"]["demo"].get("calibration") or {}
    setting = dict(current, worlds=worlds)
    if cores_per_world:
        setting["cores_per_world"] = cores_per_world
    if world_config:
        setting["world_config"] = {**(current.get("world_config") or {}), **world_config}
    lines = path.read_text().splitlines(keepends=True)
    at = [i for i, line in enumerate(lines) if line.startswith("    calibration:")]
    if not at:
        raise SystemExit("config.yaml's demo preset has no `calibration:` entry to set")
    end = at[0] + 1  # the entry's own lines: deeper than the preset's sections, comments among them
    while end < len(lines) and (lines[end].startswith("      ") or not lines[end].strip()):
        end += 1
    lines[at[0]:end] = [f"    calibration: {json.dumps(setting)}\n"]
    path.write_text("".join(lines))


def job_seconds(world: Path) -> dict[str, float]:
    """Seconds each rule's jobs ran in one world's build, summed over its Snakemake logs (a resumed world has
    several), read as the demo's benchmark reads its run's log."""
    seconds: dict[str, float] = {}
    for log in sorted((world / ".snakemake" / "log").glob("*.snakemake.log")):
        for rule, spent in rule_seconds(log.read_text()).items():
            seconds[rule] = seconds.get(rule, 0.0) + spent
    return seconds


def job_seconds_table(worlds_dir: Path) -> pd.DataFrame:
    """Each rule's job seconds a world (mean, min, max over the worlds built), and the worlds' totals."""
    per_world = {int(w.name): job_seconds(w) for w in worlds_dir.iterdir() if w.name.isdigit()}
    table = pd.DataFrame(per_world).T.fillna(0.0)
    table["all jobs"] = table.sum(axis=1)
    stats = table.agg(["mean", "min", "max"]).T.sort_values("mean", ascending=False)
    return stats.rename_axis(f"rule ({len(table)} worlds)").reset_index()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worlds", type=int, required=True)
    ap.add_argument("--commit", default="HEAD")
    ap.add_argument("--world-config", default="{}",
                    help="YAML mapping: sections replacing those of the demo preset's calibration.world_config")
    ap.add_argument("--cores-per-world", type=int, default=None, help="calibration.cores_per_world (default: the preset's)")
    ap.add_argument("--keep", type=Path, default=None, help="build in this folder and keep it")
    a = ap.parse_args(argv)
    commit = subprocess.run(["git", "rev-parse", a.commit], cwd=REPO, capture_output=True, text=True,
                            check=True).stdout.strip()
    base = a.keep or Path(tempfile.mkdtemp(prefix="bench_calibration_"))
    root = clone(commit, base / "repo")
    set_calibration(root, a.worlds, yaml.safe_load(a.world_config) or {}, a.cores_per_world)
    env = dict(os.environ, PYTHONPATH=str(root / "src"))  # the package of that commit, not the .venv's editable one
    start = time.monotonic()
    proc = subprocess.run([str(root / ".venv" / "bin" / "python"), "-m", "reappraisal", "run",
                           "results/calibration/summary.csv", "--cores", "2", "--no-record"], cwd=root, env=env)
    wall = time.monotonic() - start
    print(f"\ncommit {commit[:10]}: {a.worlds} world(s) in {wall / 60:.1f} min ({wall / a.worlds / 60:.2f} min a world)"
          f", exit {proc.returncode}")
    out = root / "results" / "calibration"
    if (out / "worlds").is_dir():
        print("\njob seconds a world\n" + job_seconds_table(out / "worlds").to_markdown(index=False, floatfmt=".1f"))
    for name in ("summary", "claims", "overoptimization", "truth_spread"):
        path = out / f"{name}.csv"
        if path.is_file():
            print(f"\n{name}.csv\n" + pd.read_csv(path).to_markdown(index=False, floatfmt=".3f"))
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
