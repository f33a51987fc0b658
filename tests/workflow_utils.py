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


#: Environment that makes every Python job print the package modules it loaded (tests/import_probe).
IMPORT_PROBE_ENV = {"REAPPRAISAL_IMPORT_PROBE": "1", "PYTHONPATH": str(REPO / "tests" / "import_probe")}


def imported_package_modules(log_text: str) -> set[str]:
    """Package modules the processes writing ``log_text`` had loaded, as the import probe printed them."""
    found: set[str] = set()
    for line in log_text.splitlines():
        if line.startswith("imported-package-modules:"):
            found.update(line.split(":", 1)[1].split())
    return found


def make_clean_copy(dest: Path) -> Path:
    for rel in tracked_files():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, target)
    subprocess.run(["git", "init", "-q"], cwd=dest, check=True)  # as a clone is: DVC needs the git repository
    return dest


def env_with_venv(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = str(Path(PYTHON).parent) + os.pathsep + env.get("PATH", "")
    env.pop("PYTHONPATH", None)
    env.update(extra or {})
    return env


def run_snakemake(
    cwd: Path, *args: str, check: bool = True, timeout: int = 1500, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """Snakemake in ``cwd`` with the venv first on PATH (``env``: extra variables for it and its jobs)."""
    proc = subprocess.run(
        [PYTHON, "-m", "snakemake", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env_with_venv(env),
        timeout=timeout,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")
    return proc
