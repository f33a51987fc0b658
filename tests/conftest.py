"""Shared fixtures: a clean copy of the repository and Snakemake runs inside it."""

from __future__ import annotations

from pathlib import Path

import pytest

import reappraisal  # noqa: F401  (before any test computes: pins torch's CPU numerics)
from tests.fake_vllm import fake_vllm  # noqa: F401  (the stand-in for vLLM of the tests of its paths)
from tests.shared_build import build_once
from tests.workflow_utils import IMPORT_PROBE_ENV, PYTHON, env_with_venv, make_clean_copy, run_snakemake


@pytest.fixture
def clean_copy(tmp_path: Path) -> Path:
    """A fresh copy of the repository as a clean checkout would have it."""
    return make_clean_copy(tmp_path / "repo")


@pytest.fixture(scope="session")
def data_pipeline(tmp_path_factory, worker_id) -> Path:
    """A clean copy in which Snakemake has run the data half through check_leakage (one for the suite's
    workers: tests/shared_build.py). Tests must not change it."""
    def build(folder: Path) -> Path:
        repo = make_clean_copy(folder / "repo")
        run_snakemake(repo, "--cores", "2", "results/data/leakage.json")
        return repo

    return build_once(tmp_path_factory, worker_id, "data_pipeline", build)


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory, worker_id) -> Path:
    """A clean checkout where the README's main command built the demo: `reappraisal run results/report.html`
    (Snakemake, then the DVC record). Every job prints the package modules it loaded into its log
    (tests/import_probe). Tests must not change it (copy it first: see tests/test_demo_versions.py).

    The suite's workers (pytest-xdist, `scripts/test.sh`) share one build (tests/shared_build.py): the first
    worker to need it builds it under a file lock in their common temporary folder; the others wait for it,
    or for its failure."""
    return build_once(tmp_path_factory, worker_id, "demo", lambda folder: _build_demo(folder / "repo"))


def _build_demo(repo: Path) -> Path:
    import subprocess

    make_clean_copy(repo)
    proc = subprocess.run([PYTHON, "-m", "reappraisal", "run", "results/report.html", "--cores", "2"], cwd=repo,
                          capture_output=True, text=True, env=env_with_venv(IMPORT_PROBE_ENV), timeout=1500)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "recorded" in proc.stdout and "stage(s) in dvc.lock" in proc.stdout, proc.stdout[-2000:]
    return repo


def pytest_collection_modifyitems(config, items):
    """Every test that uses the demo build (``demo_run``, directly or through another fixture) is marked ``demo``.

    Its first test also waits for the build (the fixture's setup counts toward pytest-timeout), so these tests
    get the build's own limit (1,500 s) plus their own, not the suite's 900 s."""
    for item in items:
        if "demo_run" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.demo)
            if item.get_closest_marker("timeout") is None:
                item.add_marker(pytest.mark.timeout(1800))
    # The demo tests first (each file keeping its order): in one process (`-n 0`) the build, the longest single
    # piece of the suite, starts at once instead of when the other tests are done. pytest-xdist (scripts/test.sh)
    # hands out the files with the most tests first and keeps this order only among files with as many tests;
    # handing the files out in this order was measured slower there (benchmarks/README.md, "The suite's time").
    items[:] = sorted(items, key=lambda item: item.get_closest_marker("demo") is None)
