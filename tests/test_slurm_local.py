"""The demo's stages as real SLURM jobs, on the one-node cluster of `scripts/slurm-local.sh`.

The test starts the cluster (installing Debian's slurm-wlm and munge when missing: it needs root), runs the
data half, one reward seed, the Bradley-Terry reward model, the warm start, one policy arm and that arm's
evaluation answers with `--profile workflow/profiles/slurm-local` in a clean copy, and stops the cluster whatever happened. Each rule
ran as an sbatch job with the profile's resources (the controller's own record of the jobs, kept
MinJobAge = 2 h without accounting), and every output has the bytes of the same file in the suite's local
demo build (the weights and tables byte for byte; JSON files and model cards less their wall-clock readings).
The paper's `train_policy` launch across processes inside an allocation: the two-process GRPO test of
tests/policy/test_multiprocess.py (`accelerate launch --num_processes 2` on CPU) runs as a batch job whose
srun step runs its command, and gives the one-process committee. Both tests share one cluster. After the
stop, no daemon is left and `scontrol` without the cluster's wrappers fails at once (it would hold every
later Snakemake start 10 s waiting for a controller).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import psutil
import pytest
import yaml

# The fixtures of tests/policy/test_multiprocess.py, which the GRPO test here asks for by name.
from tests.policy.conftest import real_judges, targets, tiny_policy, vignettes, warm_policy  # noqa: F401  (fixtures)
from tests.test_slurm_limits import gpu_rules
from tests.workflow_utils import PYTHON, REPO, env_with_venv, make_clean_copy

pytestmark = [pytest.mark.slow, pytest.mark.slurm]

SCRIPT = REPO / "scripts" / "slurm-local.sh"
PROFILE = "workflow/profiles/slurm-local"
#: The data half, a reward seed, the Bradley-Terry reward model, one policy arm (the v1 recipe's first seed: it needs
#: neither the GRM, the demo's longest training, nor the other reward seeds) and its evaluation answers (all runs:
#: one job).
ARM = "bradley_terry-seed0"
TARGETS = ("results/data/leakage.json", "results/reward/seed0", "results/reward/bradley_terry",
           f"results/policy/{ARM}/model", f"results/evaluation/run1/generations/{ARM}.parquet")
RULES = {"fetch_data", "ingest", "normalize_ratings", "split_reappraisals", "check_leakage", "prepare_base_models",
         "train_reward_model", "train_bradley_terry", "warm_start_policy", "train_policy", "check_ood",
         "generate_answers"}


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
        # Stopped: SLURM's commands without the cluster's wrappers find no configuration and fail at once.
        if not Path("/etc/slurm/slurm.conf").exists() and shutil.which("scontrol"):
            started = time.monotonic()
            probe = subprocess.run(["scontrol", "show", "config"], capture_output=True, timeout=60)
            assert probe.returncode != 0 and time.monotonic() - started < 5


@pytest.fixture(scope="module")
def cluster() -> Path:
    """One started cluster for this module's tests (its wrappers' folder), stopped after the last."""
    with slurm_cluster() as slurm_bin:
        yield slurm_bin


#: What a run writes from the clock, not from its inputs: wall times (TRL's GRPO logs each step's `step_time`)
#: and the fetch's date.
CLOCK_KEY = re.compile(r"fetched_at|seconds|train_seconds|step_time|\w+_runtime|\w+_per_second")
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


def test_the_demo_s_stages_run_as_slurm_jobs_with_the_local_build_s_bytes(tmp_path, cluster, demo_run):
    repo = make_clean_copy(tmp_path / "slurm")
    profile = yaml.safe_load((repo / PROFILE / "config.yaml").read_text())["default-resources"]

    env = env_with_venv()
    env["PATH"] = f"{cluster}{os.pathsep}{env['PATH']}"
    proc = subprocess.run([PYTHON, "-m", "snakemake", "--profile", PROFILE, *TARGETS], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=900)
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

    # The same files of the local demo build (`reappraisal run results/report.html --cores 2`), byte for byte.
    built, local = files_under(repo), files_under(demo_run)
    assert {f"results/policy/{ARM}/model/model.safetensors", "results/reward/bradley_terry/model.safetensors",
            f"results/evaluation/run1/generations/{ARM}.parquet"} <= set(built)
    assert sorted(set(built) - set(local)) == []
    assert [path for path in built if built[path] != local[path]] == []


class _ThroughSlurm:
    """Stands for `subprocess` in tests/policy/test_multiprocess.py: `run(cmd)` submits a batch job (2 CPUs)
    whose one `srun` step runs `cmd`, as the SLURM executor runs a rule's shell command inside its job
    (sbatch, then srun); the job's log is the result's stdout, its exit code the return code."""

    def __init__(self, slurm_bin: Path, folder: Path):
        self.slurm_bin, self.folder, self.jobs = slurm_bin, folder, []

    def run(self, cmd, *, env, timeout, **_):
        n = len(self.jobs)
        script, log = self.folder / f"job{n}.sh", self.folder / f"job{n}.log"
        announce = 'echo "step $SLURM_JOB_ID.$SLURM_STEP_ID: $SLURM_STEP_NUM_TASKS task, $SLURM_CPUS_PER_TASK CPUs"'
        script.write_text(f"#!/bin/sh\nexec srun --ntasks=1 sh -c '{announce}; exec \"$@\"' sh {shlex.join(cmd)}\n")
        env = dict(env, PATH=f"{self.slurm_bin}{os.pathsep}{env['PATH']}")
        job = subprocess.run(["sbatch", "--parsable", "--cpus-per-task=2", "--mem=4000", "-t", "15", "-o", str(log),
                              str(script)], env=env, capture_output=True, text=True, check=True, timeout=30).stdout.strip()
        self.jobs.append(job)
        # Polled here: `sbatch --wait` doubles its own polling interval and returned about 30 s after a 13 s job.
        deadline = time.monotonic() + timeout
        while (state := squeue_state(job, env)) in ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING"):
            assert time.monotonic() < deadline, f"job {job} still {state} after {timeout} s"
            time.sleep(0.5)
        code = re.search(r"\bExitCode=(\d+):(\d+)", subprocess.run(
            ["scontrol", "show", "job", job], env=env, capture_output=True, text=True, check=True, timeout=30).stdout)
        returncode = int(code.group(1)) or int(code.group(2))
        return subprocess.CompletedProcess(cmd, returncode, log.read_text() if log.exists() else "", f"job {job}: {state}")


def squeue_state(job: str, env: dict) -> str:
    """A job's state in the controller's record (kept MinJobAge = 2 h after it ends)."""
    return subprocess.run(["squeue", "-h", "-t", "all", "-j", job, "-o", "%T"], env=env, capture_output=True,
                          text=True, check=True, timeout=30).stdout.strip()


def test_grpo_in_two_processes_under_srun_gives_the_one_process_committee(cluster, tmp_path, monkeypatch, request):
    """tests/policy/test_multiprocess.py's real `train-policy` run (`accelerate launch --multi_gpu
    --num_processes 2` on CPU, a prompt group straddling the processes, two GRPO steps), as a SLURM job: the
    same command in an srun step of a batch job, checked by the same test against one process's ensemble,
    GRM and committee on the gathered answers."""
    from tests.policy import test_multiprocess

    slurm = _ThroughSlurm(cluster, tmp_path / "slurm")
    slurm.folder.mkdir()
    monkeypatch.setattr(test_multiprocess, "subprocess", slurm)
    inputs = [request.getfixturevalue(name) for name in ("warm_policy", "real_judges", "vignettes", "targets")]
    test_multiprocess.test_train_policy_command_two_processes_matches_one_process_committee(tmp_path, *inputs)
    (job,) = slurm.jobs
    assert f"step {job}.0: 1 task, 2 CPUs" in (slurm.folder / "job0.log").read_text()
    assert squeue_state(job, dict(os.environ, PATH=f"{cluster}{os.pathsep}{os.environ['PATH']}")) == "COMPLETED"
