"""The repository is ruff-clean (rules in pyproject.toml), so unused code and imports cannot come back."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _ruff() -> list[str]:
    exe = Path(sys.executable).with_name("ruff")
    if exe.is_file():
        return [str(exe)]
    if shutil.which("ruff"):
        return ["ruff"]
    pytest.fail("ruff is not installed: it is pinned in requirements.lock (bash scripts/install.sh installs it)")


def test_ruff_finds_nothing():
    proc = subprocess.run([*_ruff(), "check", "--no-cache", "--output-format", "concise", "."], cwd=REPO,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_noqa_says_why():
    """A ``# noqa`` marker names its rule and, after it, the reason."""
    bare = []
    for path in sorted(REPO.glob("**/*.py")):
        if any(part.startswith(".") for part in path.relative_to(REPO).parts):
            continue
        with path.open("rb") as fh:
            comments = [tok for tok in tokenize.tokenize(fh.readline) if tok.type == tokenize.COMMENT]
        for tok in comments:
            if tok.string.startswith("# noqa"):
                after = tok.string[len("# noqa"):]
                if not after.startswith(": ") or len(after.split(maxsplit=2)) < 3:
                    bare.append(f"{path.relative_to(REPO)}:{tok.start[0]}: {tok.string}")
    assert not bare, "noqa markers without a reason:\n" + "\n".join(bare)


def test_nothing_at_the_root_that_the_project_does_not_use():
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    root = {Path(p).parts[0] for p in tracked}
    expected = {"README.md", "Snakefile", "benchmarks", "claims.yaml", "config.yaml", "data", "docs", "dvc.yaml",
                "envs", "pyproject.toml", "requirements.lock", "requirements-gpu.lock", "results", "scripts", "src", "tests", "workflow",
                ".ci", ".gitignore", ".dvcignore", ".dvc", "CITATION.cff", "LICENSE"}
    assert root <= expected, f"unexpected files at the root: {sorted(root - expected)}"
