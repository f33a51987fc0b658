"""Helpers shared by tests: a clean copy of the repository and Snakemake runs inside it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path


REPO = Path(__file__).resolve().parents[1]
PYTHON = sys.executable


def tracked_files(repo: Path = REPO) -> list[str]:
    """Files git tracks plus untracked files it does not ignore (what a clean checkout has)."""
    out = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=repo, capture_output=True, check=True
    ).stdout.decode()
    return [f for f in out.split("\0") if f and (repo / f).is_file()]


def make_clean_copy(dest: Path) -> Path:
    for rel in tracked_files():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, target)
    return dest


def env_with_venv() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = str(Path(PYTHON).parent) + os.pathsep + env.get("PATH", "")
    env.pop("PYTHONPATH", None)
    return env


def run_snakemake(cwd: Path, *args: str, check: bool = True, timeout: int = 1500) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [PYTHON, "-m", "snakemake", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env_with_venv(),
        timeout=timeout,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")
    return proc
