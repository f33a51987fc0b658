"""The run's warm job server: a command forked from it behaves as the command in its own interpreter.

Same output, exit status and files, in the job's own folder and environment; a signal to the job's
process ends the command as it would end a process of its own; a job whose process is killed stops its
command; without a reachable server the command runs alone.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reappraisal.job_client import delegate
from reappraisal.job_env import FORKED_BY_ENV, SERVER_ENV, with_runs_server
from reappraisal.job_server import Server
from reappraisal.run_io import serving

PYTHON = sys.executable


def command(*args: str, env=None, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, "-m", "reappraisal", *args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def _serve_with_probe(address: str) -> None:
    """A server (forked from this test process) that knows the probe command and imports nothing more."""
    from reappraisal import cli, job_server

    cli.COMMANDS["probe"] = "tests.job_server_probe:cli_main"
    job_server.PRELOAD, job_server.PRELOAD_ATTRIBUTES = ("torch",), {}
    import torch

    torch.set_num_threads(3)  # the server's own, unlike any job's below
    job_server.serve(address)


@pytest.fixture(scope="module")
def probe_server():
    address = f"reappraisal-job-server-test-{os.getpid()}"
    server = multiprocessing.get_context("fork").Process(target=_serve_with_probe, args=(address,), daemon=True)
    server.start()
    deadline = time.time() + 60
    while delegate(address, "probe", ["where"]) is None:  # not listening yet
        assert time.time() < deadline and server.is_alive(), "the probe server did not come up"
        time.sleep(0.1)
    yield address, server.pid
    server.terminate()
    server.join(10)


def through(address: str, *argv: str, env=None, cwd=None, **popen) -> subprocess.Popen:
    """A job's process handing the probe command to the server (as ``python -m reappraisal`` does)."""
    code = f"import sys; from reappraisal.job_client import delegate; sys.exit(delegate({address!r}, 'probe', sys.argv[1:]))"
    return subprocess.Popen([PYTHON, "-c", code, *argv], env=env,
                            cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def _gone(pid: int, within: float = 20.0) -> bool:
    deadline = time.time() + within
    while time.time() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def _started(pid_file: Path) -> int:
    deadline = time.time() + 60
    while not (pid_file.is_file() and pid_file.read_text()):
        assert time.time() < deadline, "the command never started"
        time.sleep(0.05)
    return int(pid_file.read_text())


def test_the_command_runs_in_the_jobs_folder_environment_and_streams_with_its_status(probe_server, tmp_path):
    address, server_pid = probe_server
    job = through(address, "where", "--flag", env={**os.environ, "PROBE": "yes", SERVER_ENV: address}, cwd=tmp_path)
    out, err = job.communicate(timeout=60)
    assert job.returncode == 3, err
    seen = json.loads(out)
    assert seen["cwd"] == str(tmp_path) and seen["probe"] == "yes" and seen["argv"] == ["probe", "where", "--flag"]
    assert seen["server"] is None  # the command's own subprocesses start fresh interpreters
    assert seen["forked_by"] == address  # unless it passes the server on (a calibration world's build)
    assert seen["pid"] not in (job.pid, server_pid)  # a fork of its own


@pytest.mark.parametrize("threads", ["1", "2"])
def test_a_forked_job_gets_the_torch_threads_its_environment_asks_for(probe_server, threads):
    """As a fresh interpreter reads OMP_NUM_THREADS (Snakemake sets it to the rule's threads) when torch loads."""
    address, _ = probe_server
    job = through(address, "where", env={**os.environ, "OMP_NUM_THREADS": threads})
    out, err = job.communicate(timeout=60)
    assert job.returncode == 3, err
    assert json.loads(out)["torch_threads"] == int(threads)
    fresh = subprocess.run([PYTHON, "-c", "import torch; print(torch.get_num_threads())"], capture_output=True,
                           text=True, env={**os.environ, "OMP_NUM_THREADS": threads}, check=True)
    assert int(fresh.stdout) == int(threads)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_jobs_process_ends_the_command_as_its_own_process(probe_server, tmp_path, sig):
    address, _ = probe_server
    job = through(address, "wait", str(tmp_path / "pid"))
    child = _started(tmp_path / "pid")
    job.send_signal(sig)
    job.communicate(timeout=60)
    assert _gone(child)
    # SIGTERM kills the command, and its job's process ends by the same signal; SIGINT is Python's
    # KeyboardInterrupt in the command: a traceback and status 1, as in a process of its own
    assert job.returncode == (-signal.SIGTERM if sig == signal.SIGTERM else 1)


def test_a_killed_jobs_process_stops_its_command(probe_server, tmp_path):
    address, _ = probe_server
    job = through(address, "wait", str(tmp_path / "pid"))
    child = _started(tmp_path / "pid")
    job.kill()
    job.wait(timeout=30)
    assert _gone(child)


def test_without_a_reachable_server_the_command_runs_alone():
    assert delegate("reappraisal-job-server-nobody-listens", "gold", ["--help"]) is None
    assert delegate("anything", "run", []) is None  # `run` starts a server: never forked from one
    env = {**os.environ, SERVER_ENV: "reappraisal-job-server-nobody-listens"}
    alone = command("gold", "--scenario", "v01", "Maybe they were tired.", env=env)
    assert alone.returncode == 0 and "Maybe they were tired" in alone.stdout


def test_the_runs_server_gives_the_same_output_as_a_fresh_interpreter(tmp_path):
    """The real server (torch, transformers and TRL imported) runs a command to the same bytes and errors."""
    text = "Maybe Jordan was just overwhelmed at work; you could ask how their week went."
    with Server(wait=True) as env:
        assert SERVER_ENV in env, "the server did not come up"
        forked = command("gold", "--scenario", "v01", "--json", text, env=env, cwd=tmp_path)
        bad_forked = command("gold", "--scenario", "nosuch", "x", env=env, cwd=tmp_path)
    alone = command("gold", "--scenario", "v01", "--json", text, cwd=tmp_path)
    bad_alone = command("gold", "--scenario", "nosuch", "x", cwd=tmp_path)
    assert alone.returncode == forked.returncode == 0 and forked.stdout == alone.stdout
    assert bad_forked.returncode == bad_alone.returncode != 0 and bad_forked.stderr == bad_alone.stderr


def test_a_run_does_not_wait_for_the_server_and_its_later_jobs_are_forked(tmp_path):
    """As `run` starts it (no waiting): jobs before it listens run alone, the ones after are forked."""
    log = tmp_path / "server.log"
    with Server(log) as env:
        address = env[SERVER_ENV]
        deadline = time.time() + 120
        while delegate(address, "gold", ["--help"], ) is None:
            assert time.time() < deadline, f"the server never listened: {log.read_text()[-2000:]}"
            time.sleep(0.2)
        forked = command("gold", "--scenario", "v01", "Maybe they were tired.", env=env)
    assert forked.returncode == 0 and "Maybe they were tired" in forked.stdout
    assert "gold --scenario" in log.read_text()  # the server's log names each job it forked


def test_a_run_started_by_a_job_of_a_run_hands_its_jobs_to_that_runs_server(tmp_path, monkeypatch):
    """A calibration world's build (`reappraisal world`, a job of the calibration's run) starts no server of its
    own: its jobs are forks of the run's, which imported the libraries once for every world."""
    forked_job = {"PATH": "/bin", FORKED_BY_ENV: "the-runs-server"}  # as the server forks `reappraisal world`
    alone_job = {"PATH": "/bin", SERVER_ENV: "the-runs-server"}  # as it runs before the server listens
    assert with_runs_server(forked_job)[SERVER_ENV] == with_runs_server(alone_job)[SERVER_ENV] == "the-runs-server"
    assert SERVER_ENV not in with_runs_server({"PATH": "/bin"})  # no run around it: the build starts its own

    (tmp_path / ".snakemake").mkdir()
    monkeypatch.setenv(SERVER_ENV, "the-runs-server")
    with serving(tmp_path, job_server=True) as env:
        assert env[SERVER_ENV] == "the-runs-server"
    assert not (tmp_path / ".snakemake" / "job-server.log").exists()  # no server started
    monkeypatch.delenv(SERVER_ENV)
    with serving(tmp_path, job_server=True) as env:
        assert env[SERVER_ENV].startswith("reappraisal-job-server-")  # a run of its own starts one
    with serving(tmp_path, job_server=False) as env:
        assert env is None
