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
4. **Outputs missing from the workspace.** Snakemake rebuilds a missing output only when a job it runs
   needs it: an arm's model folder deleted by hand, or an output a killed forced rebuild removed before
   its job ran, is left missing ("Nothing to be done"). Such outputs (missing, and no job planned for
   them in Snakemake's own ``--summary``: :mod:`reappraisal.provenance.missing_outputs`) are forced too,
   so they and everything that depends on them are built again; a trainer resumes from its checkpoints.
5. **One warm process for the jobs.** The build's jobs are forked from one server that imported
   torch, transformers and TRL once (:mod:`reappraisal.job_server`) instead of each starting a fresh
   interpreter; ``--no-job-server`` turns it off. The outputs are the same bytes either way.
6. **Record.** After a successful build, every built stage is recorded in
   ``dvc.lock`` and DVC's cache (:mod:`reappraisal.provenance.record_io`), so
   ``dvc status`` is clean and ``reappraisal restore`` can bring these
   results back after a failed rerun. A stage with a missing output or
   dependency is left as it was and listed; a record DVC refuses is one line.

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
from .job_env import SERVER_ENV
from .job_server import Server
from .provenance.dvc_state import is_dvc_repository, record, stages_with_changed_sources
from .provenance.missing_outputs import unplanned_missing

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


def missing_outputs(root: Path, force: Sequence[str], build: Sequence[str]) -> list[str]:
    """Outputs of the build's DAG that are missing and that Snakemake would not rebuild (its ``--summary`` of the
    same arguments: :func:`reappraisal.provenance.missing_outputs.unplanned_missing`); none when the summary fails
    (the build itself then reports the problem)."""
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--summary", *force, *build], cwd=root,
                          capture_output=True, text=True)
    return unplanned_missing(proc.stdout) if proc.returncode == 0 else []


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


def serving(root: Path, job_server: bool):
    """The environment of the run's Snakemake (a context): one naming a new warm server (:mod:`reappraisal.job_server`),
    the caller's when it already names one (a calibration world's build, started by a job of a run whose server
    then forks the world's jobs too), or None without a server."""
    if not job_server:
        return nullcontext(None)
    if os.environ.get(SERVER_ENV):
        return nullcontext(dict(os.environ))
    return Server(root / JOB_SERVER_LOG)


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
        build = ["--cores", cores, "--rerun-incomplete", *targets, *extra]
        missing = [] if BUILDS_NOTHING & set(extra) else missing_outputs(root, ["--forcerun", *forced] if forced else [],
                                                                         build)
        if missing:
            shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
            print(f"missing from the workspace: rebuilding {shown} and what depends on them", flush=True)
        force = ["--forcerun", *forced, *missing] if forced or missing else []
        with serving(root, job_server) as env:
            code = snakemake(root, *force, *build, env=env)
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
