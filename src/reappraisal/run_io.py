"""The ``run`` command: build targets with Snakemake, recovering from any kill, then record them in DVC.

``reappraisal run results/report.html`` is the one command for a fresh build
and for every recovery:

1. **One run at a time.** It holds an exclusive lock on
   ``.snakemake/reappraisal-run.lock`` (holding its pid) for its whole run; a
   second ``run`` in the same checkout stops with one line naming that pid.
   A Snakemake started by hand in this checkout (found among the live
   processes by its working directory) stops it the same way.
2. **Stale state of a killed run.** With no run live, a Snakemake lock left
   by a killed Snakemake is stale: it is removed (``--unlock``), and
   Snakemake runs with ``--rerun-incomplete``, so jobs a kill interrupted run
   again. A job that outlived its killed Snakemake (an orphaned trainer) keeps
   the lock on its work folder; the rerun's trainer waits for it, then
   resumes from its checkpoints (:func:`reappraisal.training.work_dir.open_work_dir`),
   so two trainers never share a work folder.
3. **What DVC knows and Snakemake does not.** Snakemake reruns a job when
   its inputs are newer or its rule changed, not when a module it imports or
   a config value it reads changed; DVC tracks both. Stages whose code,
   config values or raw inputs changed since the last record
   (:func:`reappraisal.provenance.dvc_state.stages_with_changed_sources`) have
   their rules forced (``--forcerun``), so the record that follows never
   says an output came from code it did not come from.
4. **One warm process for the jobs.** The build's jobs are forked from one server that imported
   torch, transformers and TRL once (:mod:`reappraisal.job_server`) instead of each starting a fresh
   interpreter; ``--no-job-server`` turns it off. The outputs are the same bytes either way.
5. **Record.** After a successful build, every built stage is recorded in
   ``dvc.lock`` and DVC's cache (:mod:`reappraisal.provenance.record_io`), so
   ``dvc status`` is clean and ``reappraisal restore`` can bring these
   results back after a failed rerun.

Arguments after ``--`` go to Snakemake as they are.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import subprocess
import sys
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Iterator, Sequence

from .errors import PipelineInputError
from .job_server import Server
from .provenance.dvc_state import is_dvc_repository, record, stages_with_changed_sources

RUN_LOCK = Path(".snakemake") / "reappraisal-run.lock"
JOB_SERVER_LOG = Path(".snakemake") / "job-server.log"
#: Snakemake options after which nothing was built, so nothing is recorded.
BUILDS_NOTHING = {"-n", "--dry-run", "--dryrun", "--touch", "-t", "--lint", "--summary", "-S", "--list-rules"}


@contextmanager
def run_lock(root: Path) -> Iterator[None]:
    """Hold the checkout's run lock (pid inside) or stop with one line naming the holder."""
    path = root / RUN_LOCK
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a+", encoding="utf-8")  # Python opens it non-inheritable: jobs never hold it
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            raise PipelineInputError(f"another run is building in this checkout (pid {holder}); "
                                     "wait for it or stop it first", where=str(path)) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        yield
    finally:
        handle.close()


def live_snakemake(root: Path) -> list[int]:
    """Pids of live Snakemake processes (not jobs) whose working directory is ``root``."""
    import psutil

    here = root.resolve()
    found = []
    for proc in psutil.process_iter(["pid", "cmdline", "cwd"]):
        try:
            cmd = proc.info["cmdline"] or []
            cwd = proc.info["cwd"]
        except (psutil.Error, OSError):
            continue
        if proc.pid == os.getpid() or not cwd or Path(cwd).resolve() != here:
            continue
        if _is_snakemake(cmd):
            found.append(proc.pid)
    return found


def _is_snakemake(cmd: Sequence[str]) -> bool:
    if not cmd:
        return False
    if Path(cmd[0]).name == "snakemake":
        return True
    return len(cmd) >= 3 and cmd[1] == "-m" and cmd[2] == "snakemake"


def snakemake(root: Path, *args: str, env: dict[str, str] | None = None) -> int:
    return subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=root, env=env).returncode


def stage_rules(root: Path, stages: Sequence[str]) -> list[str]:
    """The Snakemake rules each DVC stage runs (its command's ``--allowed-rules``)."""
    import yaml

    spec = yaml.safe_load((root / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    rules: list[str] = []
    for stage in stages:
        cmd = str(spec.get(stage, {}).get("cmd", ""))
        if "--allowed-rules" in cmd:
            rules += [r for r in cmd.split("--allowed-rules", 1)[1].split("--", 1)[0].split() if r not in rules]
    return rules


def run(root: Path, targets: Sequence[str], *, cores: str, extra: Sequence[str] = (), record_after: bool = True,
        job_server: bool = True) -> int:
    with run_lock(root):
        live = live_snakemake(root)
        if live:
            raise PipelineInputError(f"a Snakemake started outside `reappraisal run` is live in this checkout "
                                     f"(pid {live[0]}); wait for it or stop it first", where=str(root))
        if any((root / ".snakemake" / "locks").glob("*")):
            print("removing the lock a killed Snakemake left (no run is live)", flush=True)
            if snakemake(root, "--unlock", "--quiet", "all") != 0:
                return 1
        forced = stage_rules(root, stages_with_changed_sources(root))
        if forced:
            print(f"code, config values or raw inputs changed since the last record: rerunning {', '.join(forced)}",
                  flush=True)
        force = ["--forcerun", *forced] if forced else []
        with Server(root / JOB_SERVER_LOG) if job_server else nullcontext(None) as env:
            code = snakemake(root, *force, "--cores", cores, "--rerun-incomplete", *targets, *extra, env=env)
        if code != 0 or not record_after or BUILDS_NOTHING & set(extra):
            return code
        if is_dvc_repository(root):
            recorded, skipped = record(root)
            print(f"recorded {len(recorded)} stage(s) in dvc.lock and DVC's cache"
                  + (f" ({len(skipped)} not built: {', '.join(skipped)})" if skipped else ""), flush=True)
        return 0


def cli_main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1:]
    ap = argparse.ArgumentParser(prog="reappraisal run", description=__doc__.splitlines()[0])
    ap.add_argument("targets", nargs="*", default=[], help="Snakemake targets (default: the Snakefile's first rule)")
    ap.add_argument("--cores", default="all")
    ap.add_argument("--root", type=Path, default=Path("."), help="repository root (holds the Snakefile)")
    ap.add_argument("--no-record", action="store_true", help="do not record the build in DVC afterwards")
    ap.add_argument("--no-job-server", action="store_true",
                    help="every job starts its own interpreter (no warm server; same outputs, slower)")
    a = ap.parse_args(argv)
    return run(a.root, a.targets, cores=a.cores, extra=extra, record_after=not a.no_record,
               job_server=not a.no_job_server)
