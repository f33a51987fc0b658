"""One warm process for the jobs of a ``reappraisal run``: the libraries are imported once, each job is a fork.

Every job of the pipeline is ``python -m reappraisal <command>``, a fresh interpreter that spends about
5 s of one core importing torch, transformers and TRL before it does any work; the demo runs about 50
such jobs. ``reappraisal run`` starts one server (``python -m reappraisal.job_server``) that imports
them once and listens on a Unix socket, and tells Snakemake's jobs its address in
``REAPPRAISAL_JOB_SERVER``. A job's process (:func:`reappraisal.job_client.delegate`) then sends the server its arguments,
working folder, environment and standard streams (the descriptors themselves); the server forks a
child that takes them over and runs the command exactly as ``python -m reappraisal`` would
(:func:`reappraisal.cli.main`). The job's process waits for the child's exit status and exits with it,
passes on the signals it receives (Snakemake stopping a job), and a child whose job process dies is
stopped. The forked child starts from the same imported modules a fresh interpreter would import, and
every command seeds its own random state, so the outputs are the same bytes.

Without a server (Snakemake called directly, a cluster executor, the variable unset) or when the server
cannot be reached before the command starts, the command runs in its own process as before. The server
stops with the ``run`` that started it; a child running then goes on until its job is done.

A ``run`` started by one of its jobs (a calibration world's build, ``reappraisal world``) starts no server of
its own: the job passes the address on (:mod:`reappraisal.job_env`) and the world's jobs are
forks of the same server, which imported the libraries once for every world.
"""

from __future__ import annotations

import argparse
import atexit
import os
import signal
import socket
import sys
import threading
import traceback
from typing import Sequence

from .cli import main as cli_main
from .job_client import receive, send
from .job_env import FORKED_BY_ENV, SERVER_ENV
#: The libraries the server imports before it accepts a job (what almost every command imports).
PRELOAD = (
    "numpy", "pandas", "pyarrow.parquet", "scipy.stats", "yaml", "jsonschema", "torch", "transformers",
    "datasets", "trl", "dvclive",  # every trainer's live metrics (training.report_to: dvclive)
    "reappraisal.settings",  # every command types its --params: the schema read and its classes made once
)
#: transformers and TRL import their classes lazily, on first attribute access: the ones the commands use.
PRELOAD_ATTRIBUTES = {
    "transformers": ("AutoConfig", "AutoTokenizer", "AutoModelForCausalLM", "AutoModelForSequenceClassification",
                     "PreTrainedTokenizerFast", "Trainer", "TrainingArguments", "TrainerCallback", "DynamicCache",
                     "LogitsProcessorList", "Qwen3Config", "Qwen3ForCausalLM", "Qwen3ForSequenceClassification"),
    "trl": ("GRPOConfig", "GRPOTrainer", "SFTConfig", "SFTTrainer", "RewardConfig", "RewardTrainer"),
}


# --------------------------------------------------------------------------- the server's side
def _run_job(conn: socket.socket) -> int:
    """In the forked child: take over the job's streams, folder and environment, run the command."""
    request, fds = receive(conn, 3)
    if request is None or len(fds) != 3:
        return 2
    os.write(2, f"pid {os.getpid()}: {' '.join(request['argv'][:3])} ...\n".encode())  # the server's log
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    env = {k: v for k, v in request["env"].items() if k != SERVER_ENV}  # a job's own subprocesses start fresh
    if request["env"].get(SERVER_ENV):  # unless it passes the server on (a calibration world's build)
        env[FORKED_BY_ENV] = request["env"][SERVER_ENV]
    os.environ.clear()
    os.environ.update(env)
    _job_threads(env)
    _fresh_streams(env)
    sys.path[:] = request["path"]
    sys.argv = [request["argv0"], *request["argv"]]
    send(conn, {"pid": os.getpid()})

    def watch_job_process():  # the job's process died (killed): stop, as the job would have
        try:
            conn.recv(1)
        except OSError:
            pass
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch_job_process, daemon=True).start()
    try:
        code = cli_main(request["argv"])
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException:
        traceback.print_exc()
        code = 1
    return int(code or 0)


def _job_threads(env: dict[str, str]) -> None:
    """Torch's intra-op threads as many as the job's ``OMP_NUM_THREADS`` asks (Snakemake sets it to the rule's
    threads), as a fresh interpreter reads it when torch loads; the forked job has the server's torch, which read
    the server's own environment (all the cores, for a server started by ``reappraisal run``). A job that sets
    its threads itself (``training.settings.set_cpu_threads``) still does."""
    threads = env.get("OMP_NUM_THREADS", "")
    torch = sys.modules.get("torch")
    if torch is not None and threads.isdigit() and int(threads) > 0:
        torch.set_num_threads(int(threads))


def _fresh_streams(env: dict[str, str]) -> None:
    """``sys.stdin/stdout/stderr`` over descriptors 0-2 as a fresh interpreter would open them for ``env``."""
    import io

    unbuffered = bool(env.get("PYTHONUNBUFFERED"))
    encoding = env.get("PYTHONIOENCODING", "").split(":")[0] or None

    def stream(fd: int, mode: str, errors: str, line: bool):
        if mode == "w" and unbuffered:
            return io.TextIOWrapper(open(fd, "wb", buffering=0, closefd=False), encoding=encoding, errors=errors,
                                    write_through=True)
        return open(fd, mode, buffering=1 if line else -1, encoding=encoding, errors=errors, closefd=False)

    sys.stdin = sys.__stdin__ = stream(0, "r", "strict", False)
    sys.stdout = sys.__stdout__ = stream(1, "w", "strict", os.isatty(1))
    sys.stderr = sys.__stderr__ = stream(2, "w", "backslashreplace", True)  # line-buffered, as since Python 3.9


def _child(listener: socket.socket, conn: socket.socket) -> None:
    listener.close()
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
        signal.signal(signum, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    code = 1
    try:
        code = _run_job(conn)
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            atexit._run_exitfuncs()  # what a fresh interpreter runs when the command returns
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            send(conn, {"code": code})
        except BaseException:
            pass
        os._exit(code)


def _die_with_parent() -> None:
    """Linux: this process gets SIGTERM when the process that started it (the run) dies, even by SIGKILL."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def preload() -> None:
    import importlib

    for module in PRELOAD:
        importlib.import_module(module)
    for module, names in PRELOAD_ATTRIBUTES.items():
        loaded = sys.modules[module]
        for name in names:
            getattr(loaded, name)


def serve(address: str, ready_fd: int | None = None) -> int:
    """Import, then listen on the abstract Unix socket ``address`` and fork a child per job until SIGTERM."""
    _die_with_parent()
    preload()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind("\0" + address)
    listener.listen(64)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are never waited for: no zombies
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if ready_fd is not None:
        os.write(ready_fd, b"1")
        os.close(ready_fd)
    while True:
        try:
            conn, _ = listener.accept()
        except InterruptedError:
            continue
        if os.fork() == 0:
            _child(listener, conn)
        conn.close()


class Server:
    """The server of one run, as a context: ``with Server() as env: subprocess.run(..., env=env)``; ``env`` is
    this process's environment naming the server. The server imports for a few seconds before it listens;
    a job that comes earlier runs alone. ``wait=True`` returns only once it listens (or has died: then the
    environment does not name it)."""

    def __init__(self, log_path: str | os.PathLike | None = None, *, wait: bool = False):
        self.address = f"reappraisal-job-server-{os.getpid()}-{os.urandom(4).hex()}"
        self.log_path = log_path
        self.wait = wait
        self.process = None

    def __enter__(self) -> dict[str, str]:
        import subprocess

        read_fd, write_fd = os.pipe() if self.wait else (None, None)
        log = open(self.log_path, "ab") if self.log_path else subprocess.DEVNULL
        ready_args = ["--ready-fd", str(write_fd)] if write_fd is not None else []
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "reappraisal.job_server", "--address", self.address, *ready_args],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, pass_fds=() if write_fd is None else (write_fd,))
        finally:
            if write_fd is not None:
                os.close(write_fd)
            if log is not subprocess.DEVNULL:
                log.close()
        ready = True
        if read_fd is not None:
            ready = bool(os.read(read_fd, 1))  # empty if the server died while importing
            os.close(read_fd)
        env = dict(os.environ)
        if ready:
            env[SERVER_ENV] = self.address
        return env

    def __exit__(self, *exc) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except Exception:
                self.process.kill()
                self.process.wait()


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m reappraisal.job_server", description=__doc__.splitlines()[0])
    ap.add_argument("--address", required=True, help="abstract Unix socket name (without the leading NUL)")
    ap.add_argument("--ready-fd", type=int, default=None, help="a descriptor to write one byte to once listening")
    args = ap.parse_args(argv)
    return serve(args.address, args.ready_fd)


if __name__ == "__main__":
    sys.exit(main())
