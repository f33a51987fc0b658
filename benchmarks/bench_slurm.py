"""The whole demo through a real SLURM scheduler, timed beside the same demo run locally.

Starts the one-node cluster of ``scripts/slurm-local.sh`` (installing Debian's slurm-wlm and munge when
missing; run as root), builds ``results/report.html`` in a fresh clone with
``snakemake --profile workflow/profiles/slurm-local`` (every job an sbatch job on the node's CPUs), then the
same target in a second fresh clone with the local command (``python -m reappraisal run results/report.html
--cores 2 --no-record``), and stops the cluster whatever happened. Prints both wall times, the number of SLURM
jobs and how many of their outputs differ from the local build's bytes (JSON files and model cards less
their wall-clock readings, as tests/test_slurm_local.py compares them).

    python benchmarks/bench_slurm.py --keep /tmp/slurm-demo
    python benchmarks/bench_slurm.py --local-from /path/to/demo-build --local-seconds 541.6

``--local-from`` skips the local build and compares with a finished local demo build of the same commit (e.g.
the test suite's), whose wall time ``--local-seconds`` gives (timed by ``benchmarks/bench_demo.py``).
Run it with nothing else on the machine: both builds use both cores.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.test_slurm_local import files_under

PROFILE = "workflow/profiles/slurm-local"
TARGET = "results/report.html"


def clone(commit: str, dest: Path) -> Path:
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(dest)], check=True)
    subprocess.run(["git", "checkout", "--quiet", commit], cwd=dest, check=True)
    (dest / ".venv").symlink_to(REPO / ".venv")
    return dest


def env_for(slurm_bin: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    path = f"{REPO / '.venv' / 'bin'}{os.pathsep}{env['PATH']}"
    env["PATH"] = f"{slurm_bin}{os.pathsep}{path}" if slurm_bin else path
    return env


def timed(cmd: list[str], cwd: Path, env: dict[str, str], log: Path) -> float:
    started = time.monotonic()
    with log.open("w") as out:
        proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
    wall = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed in {cwd} (exit {proc.returncode}); its output: {log}")
    return wall


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commit", default="HEAD")
    ap.add_argument("--keep", type=Path, default=None, help="build in this folder and keep it")
    ap.add_argument("--local-from", type=Path, default=None, help="a finished local demo build to compare with")
    ap.add_argument("--local-seconds", type=float, default=None, help="that build's wall time (with --local-from)")
    a = ap.parse_args(argv)
    if (a.local_from is None) != (a.local_seconds is None):
        raise SystemExit("--local-from and --local-seconds go together")
    if os.geteuid() != 0:
        raise SystemExit("the local SLURM cluster needs root (apt-get, munged, slurmd)")
    root = a.keep or Path(tempfile.mkdtemp(prefix="bench-slurm-"))
    root.mkdir(parents=True, exist_ok=True)
    cluster = Path(tempfile.mkdtemp(prefix="slurm-", dir="/tmp"))  # short: munged's socket path must fit
    python = str(REPO / ".venv" / "bin" / "python")
    started = subprocess.run(["bash", str(REPO / "scripts" / "slurm-local.sh"), "start", str(cluster)],
                             capture_output=True, text=True)
    if started.returncode != 0:
        raise SystemExit(f"the local cluster did not start: {started.stderr[-2000:]}")
    try:
        slurm_repo = clone(a.commit, root / "slurm")
        slurm_wall = timed([python, "-m", "snakemake", "--profile", PROFILE, TARGET], slurm_repo,
                           env_for(cluster / "bin"), root / "slurm.log")
    finally:
        subprocess.run(["bash", str(REPO / "scripts" / "slurm-local.sh"), "stop", str(cluster)], check=True)
    log = (root / "slurm.log").read_text()
    jobs = re.findall(r"submitted with SLURM jobid (\d+)", log)
    if a.local_from is not None:
        local_repo, local_wall = a.local_from, a.local_seconds
    else:
        local_repo = clone(a.commit, root / "local")
        local_wall = timed([python, "-m", "reappraisal", "run", TARGET, "--cores", "2", "--no-record"], local_repo,
                           env_for(None), root / "local.log")
    built, local = files_under(slurm_repo), files_under(local_repo)
    differ = sorted(p for p in built if local.get(p) != built[p])
    print("| build | wall | jobs |\n|---|---|---|")
    print(f"| SLURM (`--profile {PROFILE}`) | {slurm_wall:.1f} s ({slurm_wall / 60:.2f} min) | {len(jobs)} sbatch jobs |")
    print(f"| local (`reappraisal run --cores 2`) | {local_wall:.1f} s ({local_wall / 60:.2f} min) | - |")
    print(f"ratio SLURM / local: {slurm_wall / local_wall:.2f}")
    print(f"outputs compared: {len(built)}; differing from the local build: {len(differ)}")
    for path in differ[:20]:
        print(f"  differs: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
