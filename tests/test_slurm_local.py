"""The demo's first stages as real SLURM jobs, on the one-node cluster of `scripts/slurm-local.sh`.

The test starts the cluster (installing Debian's slurm-wlm and munge when missing: it needs root), runs the
data half and one reward seed with `--profile workflow/profiles/slurm-local` in a clean copy, and stops the
cluster whatever happened. Each rule ran as an sbatch job with the profile's resources (the controller's own
record of the jobs, kept MinJobAge = 300 s without accounting), and every output has the bytes of the same
targets built by a local Snakemake run (the weights and tables byte for byte; JSON files and model cards
less their wall-clock readings). After the stop, no daemon is left and `scontrol` without the
cluster's wrappers fails at once (it would hold every later Snakemake start 10 s waiting for a controller).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import psutil
import pytest
import yaml

from tests.test_slurm_limits import gpu_rules
from tests.workflow_utils import PYTHON, REPO, env_with_venv, make_clean_copy, run_snakemake

pytestmark = [pytest.mark.slow, pytest.mark.slurm]

SCRIPT = REPO / "scripts" / "slurm-local.sh"
PROFILE = "workflow/profiles/slurm-local"
TARGETS = ("results/data/leakage.json", "results/reward/seed0")
RULES = {"fetch_data", "ingest", "normalize_ratings", "split_reappraisals", "check_leakage",
         "prepare_base_models", "train_reward_model"}


def running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@contextlib.contextmanager
def slurm_cluster(*options: str):
    """A started cluster (its wrapper commands' folder, for PATH; `options` for the script's `start`, e.g.
    `--gpu-site`); stopped on leaving, also on failure. Its folder is short (munged's socket path must fit a
    Unix socket's 108 bytes) and removed after."""
    if os.geteuid() != 0:
        pytest.skip("the local SLURM cluster needs root (apt-get, munged, slurmd)")
    folder = Path(tempfile.mkdtemp(prefix="slurm-local-", dir="/tmp"))
    try:
        start = subprocess.run(["bash", str(SCRIPT), "start", str(folder), *options], capture_output=True,
                               text=True, timeout=600)
        logs = "".join(f"\n--- {p.name}\n{p.read_text()[-2000:]}" for p in folder.glob("*.log"))
        assert start.returncode == 0, start.stdout + start.stderr[-3000:] + logs
        assert start.stdout.strip() == f"export PATH={folder}/bin:$PATH"
        yield folder / "bin"
    finally:
        pids = [int(p) for p in (folder / "pids").read_text().split()] if (folder / "pids").exists() else []
        stop = subprocess.run(["bash", str(SCRIPT), "stop", str(folder)], capture_output=True, text=True, timeout=120)
        assert stop.returncode == 0, stop.stderr
        alive = [pid for pid in pids if running(pid)]
        assert not alive, f"daemons left running: {alive}"
        shutil.rmtree(folder, ignore_errors=True)


#: What a run writes from the clock, not from its inputs: wall times and the fetch's date.
CLOCK_KEY = re.compile(r"fetched_at|seconds|train_seconds|\w+_runtime|\w+_per_second")
CLOCK_LINE = re.compile(rb"^ +\d+(\.\d+)? s$", flags=re.M)  # a model card's training time


def without_clock(value):
    if isinstance(value, dict):
        return {k: without_clock(v) for k, v in value.items() if not CLOCK_KEY.fullmatch(k)}
    if isinstance(value, list):
        return [without_clock(v) for v in value]
    return value


def files_under(repo: Path) -> dict[str, bytes]:
    """Every output's bytes; JSON files and model cards without their clock readings."""
    out = {}
    for top in ("data/raw", "data/interim", "data/processed", "results"):
        for path in sorted((repo / top).rglob("*")):
            if path.is_file():
                data = path.read_bytes()
                if path.suffix == ".json":
                    data = json.dumps(without_clock(json.loads(data)), sort_keys=True).encode()
                elif path.name == "README.md":
                    data = CLOCK_LINE.sub(b"", data)
                out[str(path.relative_to(repo))] = data
    return out


def test_the_profile_runs_every_gpu_rule_on_cpu():
    profile = yaml.safe_load((REPO / PROFILE / "config.yaml").read_text())
    assert profile["executor"] == "slurm" and profile["slurm-status-command"] == "squeue"
    assert {rule for rule, res in profile["set-resources"].items() if res.get("gpu") == 0} == gpu_rules()


def test_data_stages_and_a_reward_seed_run_as_slurm_jobs_with_the_local_bytes(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the local SLURM cluster needs root (apt-get, munged, slurmd)")
    local = make_clean_copy(tmp_path / "local")
    run_snakemake(local, "--cores", "2", *TARGETS)
    repo = make_clean_copy(tmp_path / "slurm")
    profile = yaml.safe_load((repo / PROFILE / "config.yaml").read_text())["default-resources"]

    with slurm_cluster() as slurm_bin:
        env = env_with_venv()
        env["PATH"] = f"{slurm_bin}{os.pathsep}{env['PATH']}"
        proc = subprocess.run([PYTHON, "-m", "snakemake", "--profile", PROFILE, *TARGETS], cwd=repo, env=env,
                              capture_output=True, text=True, timeout=600)
        log = proc.stdout + proc.stderr
        assert proc.returncode == 0, log[-6000:]
        jobs = re.findall(r"submitted with SLURM jobid (\d+) \(log: (\S*/slurm_logs/rule_(\w+)/\S*)\)", log)
        submitted = {job: rule for job, _, rule in jobs}
        assert sorted(submitted.values()) == sorted(RULES), log[-4000:]
        # The controller's record: each job finished, on the profile's CPUs, memory and time limit.
        queue = subprocess.run(["squeue", "-h", "-t", "all", "-j", ",".join(submitted), "-o", "%i %T %C %m %l"],
                               env=env, capture_output=True, text=True, check=True, timeout=30).stdout
        rows = {line.split()[0]: line.split()[1:] for line in queue.splitlines()}
        limit = f"{profile['runtime']}:00"
        assert rows == {job: ["COMPLETED", str(profile["cpus_per_task"]), f"{profile['mem_mb']}M", limit]
                        for job in submitted}, queue
        for job, path, rule in jobs:  # the job's own log, written on the node
            assert Path(path).name == f"{job}.log" and f"rule {rule}:" in Path(path).read_text()

    built, expected = files_under(repo), files_under(local)
    assert sorted(built) == sorted(expected)
    assert [path for path in built if built[path] != expected[path]] == []
    # Stopped: SLURM's commands without the cluster's wrappers find no configuration and fail at once.
    if not Path("/etc/slurm/slurm.conf").exists():
        started = time.monotonic()
        probe = subprocess.run(["scontrol", "show", "config"], capture_output=True, timeout=60)
        assert probe.returncode != 0 and time.monotonic() - started < 5
