"""`run` builds and records in DVC; `restore` brings back the last recorded results; `run` recovers from kills."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from reappraisal.errors import PipelineInputError
from reappraisal.provenance.dvc_state import stage_records
from reappraisal.run_io import RUN_LOCK, run_lock

from .tiny_project import dvc, make_project, reappraisal


@pytest.fixture
def project(tmp_path):
    return make_project(tmp_path / "p")


def test_run_builds_then_records_so_dvc_status_is_clean_and_hashes_match_the_lock(project):
    proc = reappraisal(project, "run", "--cores", "1")
    assert proc.returncode == 0, proc.stderr
    assert (project / "results" / "total.txt").read_text() == "41"
    assert "recorded 2 stage(s)" in proc.stdout
    status = dvc(project, "status", "--json")
    assert status.returncode == 0 and status.stdout.strip() in {"{}", ""}, status.stdout + status.stderr
    lock = yaml.safe_load((project / "dvc.lock").read_text())["stages"]
    records = stage_records(project)
    for stage, body in lock.items():
        assert {o["path"]: o["md5"] for o in body["outs"]} == records[stage]["outs"]
        assert {d["path"]: d["md5"] for d in body.get("deps", [])} == records[stage]["deps"]
        assert body.get("params", {}).get("config.yaml", {}) == records[stage]["params"]


def test_restore_brings_back_the_recorded_results_after_a_failed_rerun(project):
    assert reappraisal(project, "run", "--cores", "1").returncode == 0
    original = (project / "results" / "double.txt").read_text(), (project / "results" / "total.txt").read_text()
    (project / "data" / "in.txt").write_text("not a number")  # the rerun fails and deletes its outputs
    assert reappraisal(project, "run", "--cores", "1").returncode != 0
    assert not (project / "results" / "double.txt").exists()
    (project / "data" / "in.txt").write_text("20")  # the input is fixed (or restored) ...
    proc = reappraisal(project, "restore")
    assert proc.returncode == 0, proc.stderr
    assert ((project / "results" / "double.txt").read_text(), (project / "results" / "total.txt").read_text()) == original
    dry = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1"], cwd=project, capture_output=True,
                         text=True)
    assert "Nothing to be done" in dry.stdout + dry.stderr


def test_restore_before_anything_was_recorded_says_so(project):
    proc = reappraisal(project, "restore")
    assert proc.returncode == 2 and "nothing recorded yet" in proc.stderr


def test_a_second_run_in_the_same_checkout_stops_naming_the_holder(project):
    holder = subprocess.Popen([sys.executable, "-c", "import time\nfrom pathlib import Path\n"
                               "from reappraisal.run_io import run_lock\n"
                               f"with run_lock(Path({str(project)!r})):\n    print('held', flush=True)\n"
                               "    time.sleep(30)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(PipelineInputError, match=rf"another run .*\(pid {holder.pid}\)"):
            with run_lock(project):
                pass
    finally:
        holder.kill()
        holder.wait()
    with run_lock(project):  # a lock file left by a dead holder does not block
        assert (project / RUN_LOCK).read_text().strip() == str(os.getpid())


def test_a_hand_started_snakemake_is_not_raced(project):
    (project / "data" / "sleep.txt").write_text("20")
    other = subprocess.Popen([sys.executable, "-m", "snakemake", "--cores", "1"], cwd=project,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 30
        while not any((project / ".snakemake" / "locks").glob("*")) and time.time() < deadline:
            time.sleep(0.2)
        proc = reappraisal(project, "run", "--cores", "1")
        assert proc.returncode == 2 and f"pid {other.pid}" in proc.stderr
    finally:
        other.kill()
        other.wait()


def test_after_snakemake_is_killed_the_same_run_command_finishes(project):
    """SIGKILL of Snakemake mid-job leaves a stale lock and an incomplete output: `run` needs no manual step."""
    (project / "data" / "sleep.txt").write_text("3")
    launcher = subprocess.Popen([sys.executable, "-m", "reappraisal", "run", "--cores", "1"], cwd=project,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    deadline = time.time() + 60
    snake = None
    import psutil

    while snake is None and time.time() < deadline:
        for child in psutil.Process(launcher.pid).children(recursive=True):
            try:
                cmdline = child.cmdline()
            except psutil.NoSuchProcess:  # a process that ended (or is a zombie) since the scan listed it
                continue
            if any("sleep" == Path(part).name for part in cmdline[:1]):
                snake = child.parent()
                while snake is not None and "snakemake" not in " ".join(snake.cmdline()):
                    snake = snake.parent()
        time.sleep(0.1)
    assert snake is not None, "the job never started"
    os.kill(snake.pid, signal.SIGKILL)  # the Snakemake parent only: its job lives on
    launcher.wait(timeout=60)
    assert launcher.returncode != 0
    assert any((project / ".snakemake" / "locks").glob("*")), "a killed Snakemake leaves its lock"
    (project / "data" / "sleep.txt").write_text("0")
    proc = reappraisal(project, "run", "--cores", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (project / "results" / "total.txt").read_text() == "41"
    assert dvc(project, "status", "--json").stdout.strip() in {"{}", ""}


def test_a_changed_config_value_reruns_its_stage_before_the_record_vouches_for_it(project):
    """Snakemake does not see a config value or an imported module change; DVC does: `run` forces those rules."""
    assert reappraisal(project, "run", "--cores", "1").returncode == 0
    built = (project / "results" / "double.txt").stat().st_mtime_ns
    assert "rerunning" not in reappraisal(project, "run", "--cores", "1").stdout  # nothing changed: nothing rerun
    (project / "config.yaml").write_text("factor: 3\n")
    proc = reappraisal(project, "run", "--cores", "1")
    assert proc.returncode == 0, proc.stderr
    assert "rerunning double" in proc.stdout
    assert (project / "results" / "double.txt").stat().st_mtime_ns > built
    assert dvc(project, "status", "--json").stdout.strip() in {"{}", ""}


def test_a_dry_run_through_run_records_nothing(project):
    proc = reappraisal(project, "run", "--cores", "1", "--", "-n")
    assert proc.returncode == 0, proc.stderr
    assert not (project / "results" / "total.txt").exists() and not (project / "dvc.lock").exists()


def test_push_and_pull_work_with_the_shipped_default_remote(project):
    assert reappraisal(project, "run", "--cores", "1").returncode == 0
    pushed = dvc(project, "push")
    assert pushed.returncode == 0, pushed.stderr
    assert (project / ".dvc-remote").is_dir()  # the default remote: a folder in the clone
    shutil.rmtree(project / ".dvc" / "cache")
    (project / "results" / "total.txt").unlink()
    pulled = dvc(project, "pull")
    assert pulled.returncode == 0, pulled.stderr
    assert (project / "results" / "total.txt").read_text() == "41"
