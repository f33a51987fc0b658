"""Shared fixtures: a clean copy of the repository and Snakemake runs inside it."""

from __future__ import annotations

from pathlib import Path

import pytest

import reappraisal  # noqa: F401  (before any test computes: pins torch's CPU numerics)
from tests.workflow_utils import IMPORT_PROBE_ENV, PYTHON, env_with_venv, make_clean_copy, run_snakemake


@pytest.fixture
def clean_copy(tmp_path: Path) -> Path:
    """A fresh copy of the repository as a clean checkout would have it."""
    return make_clean_copy(tmp_path / "repo")


@pytest.fixture(scope="session")
def data_pipeline(tmp_path_factory) -> Path:
    """A clean copy in which Snakemake has run the data half through check_leakage."""
    repo = make_clean_copy(tmp_path_factory.mktemp("data_pipeline") / "repo")
    run_snakemake(repo, "--cores", "2", "results/data/leakage.json")
    return repo


#: The demo build, started in the background when collection ends (:func:`pytest_collection_finish`).
_DEMO_BUILD: dict = {}
DEMO_BUILD_LIMIT_S = 1500


def _start_demo_build(config) -> None:
    """Start the README's main command in a clean copy, in the background: its jobs use the cores the
    single-threaded tests before the demo tests leave idle, so the suite waits for it less."""
    import subprocess
    import time

    repo = make_clean_copy(config._tmp_path_factory.mktemp("demo") / "repo")  # the tmp_path_factory fixture's
    log = (repo.parent / "build.log").open("w+", encoding="utf-8")
    proc = subprocess.Popen([PYTHON, "-m", "reappraisal", "run", "results/report.html", "--cores", "2"], cwd=repo,
                            stdout=log, stderr=subprocess.STDOUT, text=True, env=env_with_venv(IMPORT_PROBE_ENV),
                            start_new_session=True)
    _DEMO_BUILD.update(repo=repo, proc=proc, log=log, started=time.monotonic())


@pytest.fixture(scope="session")
def demo_run(pytestconfig) -> Path:
    """A clean checkout where the README's main command built the demo: `reappraisal run results/report.html`
    (Snakemake, then the DVC record). Every job prints the package modules it loaded into its log
    (tests/import_probe). Tests must not change it (copy it first: see tests/test_demo_versions.py).

    The build starts when collection ends, beside the tests that do not need it (which run first)."""
    import subprocess
    import time

    if not _DEMO_BUILD:
        _start_demo_build(pytestconfig)
    build = _DEMO_BUILD
    try:
        build["proc"].wait(timeout=max(1.0, DEMO_BUILD_LIMIT_S - (time.monotonic() - build["started"])))
    except subprocess.TimeoutExpired:
        _stop_demo_build()
        pytest.fail(f"the demo build took more than {DEMO_BUILD_LIMIT_S} s")
    build["log"].seek(0)
    out = build["log"].read()
    assert build["proc"].returncode == 0, out[-6000:]
    assert "recorded" in out and "stage(s) in dvc.lock" in out, out[-2000:]
    return build["repo"]


def _stop_demo_build() -> None:
    import os
    import signal
    import subprocess

    proc = _DEMO_BUILD.get("proc")
    if proc is not None and proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)  # the run, its Snakemake and their jobs
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # a build that ignores SIGTERM is killed
            os.killpg(proc.pid, signal.SIGKILL)


def pytest_collection_finish(session):
    """Start the demo build now when a selected test needs it (not for --collect-only)."""
    if session.config.option.collectonly or _DEMO_BUILD:
        return
    if any(item.get_closest_marker("demo") for item in session.items):
        _start_demo_build(session.config)


def pytest_sessionfinish(session, exitstatus):
    """A build nobody waited for (a stopped session) does not outlive it."""
    _stop_demo_build()


def pytest_collection_modifyitems(config, items):
    """Every test that uses the demo build (``demo_run``, directly or through another fixture) is marked ``demo``
    and runs after every test that does not (stable order otherwise), while the build runs in the background.

    Its first test also waits for the build (the fixture's setup counts toward pytest-timeout), so these tests
    get the build's own limit (1,500 s) plus their own, not the suite's 900 s."""
    demo = []
    for item in items:
        if "demo_run" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.demo)
            if item.get_closest_marker("timeout") is None:
                item.add_marker(pytest.mark.timeout(1800))
            demo.append(item)
    items[:] = [item for item in items if item not in demo] + demo
