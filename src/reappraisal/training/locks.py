"""One trainer per work folder: an exclusive ``flock`` on a lock file beside it, with its holder written in.

The lock file is ``<parent>/.<folder name>.lock`` (beside, not inside, since
the folder may be emptied). A second opener logs one line naming the holder
and waits for it, or refuses (``wait=False`` or a number of seconds). When the
holder finished the same run it leaves a done marker in the file, which the
waiter reads (:class:`~reappraisal.errors.FinishedElsewhere`). A lock file left
by a dead process holds no lock and never blocks.
"""

from __future__ import annotations

import datetime
import errno
import fcntl
import json
import logging
import os
import socket
import time
import weakref
from pathlib import Path
from typing import Any, Mapping

from ..errors import PipelineInputError

log = logging.getLogger("reappraisal.training")

LOCK_SUFFIX = ".lock"


def work_lock_path(work_dir: str | Path) -> Path:
    """The lock file of a work folder: beside it, ``<parent>/.<folder name without a leading dot>.lock``.

    ``results/reward/.seed0.work`` -> ``results/reward/.seed0.work.lock``;
    ``results/policy/<arm>/checkpoints`` -> ``results/policy/<arm>/.checkpoints.lock``.
    """
    work_dir = Path(work_dir)
    return work_dir.parent / f".{work_dir.name.lstrip('.')}{LOCK_SUFFIX}"


#: Locks this process holds: lock file -> its WorkLock (a second open in the same process would wait for itself).
#: Weak: a WorkLock nobody keeps any more is released (its ``__del__``).
_HELD: "weakref.WeakValueDictionary[str, WorkLock]" = weakref.WeakValueDictionary()


def _read_holder(lock: Path) -> dict:
    try:
        info = json.loads(Path(lock).read_text())
    except (OSError, ValueError):
        return {}
    return info if isinstance(info, dict) else {}


def _describe(info: Mapping[str, Any]) -> str:
    if not info.get("pid"):
        return "another process (pid not yet written)"
    where = f" on {info['host']}" if info.get("host") else ""
    since = f" since {info['started']}" if info.get("started") else ""
    return f"pid {info['pid']}{where}{since}"


def lock_holder(work_dir: str | Path) -> dict | None:
    """What the holder of a work folder's lock wrote (``pid``, ``host``, ``started``), or None when nobody holds it.

    A lock file left by a dead process holds no lock: None.
    """
    lock = work_lock_path(work_dir)
    try:
        fd = os.open(lock, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise
        return _read_holder(lock)
    finally:
        os.close(fd)  # releases the probe's lock, if it got one
    return None


class WorkLock:
    """An exclusive ``flock`` on a work folder's lock file (:func:`lock_work_dir`), held until :meth:`release`
    (or the end of the process: the kernel drops it, however the process ends)."""

    def __init__(self, work_dir: Path, path: Path, fd: int):
        self.work_dir, self.path, self._fd, self._pid = work_dir, path, fd, os.getpid()
        #: The run spec's digest (:func:`open_work_dir` sets it): written as the done marker on a finished release.
        self.spec_digest: str | None = None
        #: The done marker of a holder this lock waited for, when it finished its run (:func:`lock_work_dir`).
        self.finished_by: dict | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Remove the lock file and drop the lock (once; a forked child never drops its parent's lock).

        When the work folder is gone (a trainer removes it only once its outputs are in place), the lock
        file first gets the done marker, ``{"done": <spec digest>, ...}``: a rerun waiting on this file
        (one that found an orphaned trainer holding it) reads it and takes the finished outputs
        (:class:`FinishedElsewhere`) instead of training again.
        """
        fd, self._fd = self._fd, None
        if fd is None or os.getpid() != self._pid:
            return
        _HELD.pop(str(self.path), None)
        try:
            if self.spec_digest is not None and not self.work_dir.exists():
                marker = {"pid": os.getpid(), "host": socket.gethostname(), "done": self.spec_digest,
                          "finished": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
                os.ftruncate(fd, 0)
                os.pwrite(fd, (json.dumps(marker) + "\n").encode(), 0)
            # unlinked before unlocking: a waiter that then gets the lock on this (now nameless) file sees that it
            # is no longer the file at the path and locks the path anew (lock_work_dir)
            self.path.unlink(missing_ok=True)
        finally:
            os.close(fd)

    def __enter__(self) -> "WorkLock":
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def __del__(self):
        try:
            self.release()
        except Exception:  # interpreter shutdown
            pass


def lock_work_dir(work_dir: str | Path, *, wait: bool | float = True, poll: float = 0.2) -> WorkLock:
    """Take the exclusive lock of ``work_dir`` (see :func:`work_lock_path`) and write this process into it.

    ``wait``: True waits for the holder however long it runs (one log line
    names it); False refuses at once, a number waits that many seconds: a
    :class:`PipelineInputError` naming the holder's pid.
    """
    work_dir = Path(work_dir)
    path = work_lock_path(work_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    mine = _HELD.get(str(path))
    if mine is not None and mine.held and mine._pid == os.getpid():
        raise RuntimeError(f"this process already holds the lock of {work_dir}: release it (WorkDir.release) first")
    deadline = None if wait is True else time.monotonic() + (0.0 if wait is False else max(0.0, float(wait)))
    announced = False
    finished_by = None
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise
                holder = _describe(_read_holder(path))
                if deadline is not None and time.monotonic() >= deadline:
                    raise PipelineInputError(
                        f"in use by {holder}: another trainer (e.g. one a killed pipeline left running) trains "
                        "there; let it finish or end it, then rerun",
                        where=f"work folder {work_dir}",
                    ) from None
                if not announced:
                    log.warning("work folder %s is in use by %s: waiting until it ends (lock %s)", work_dir, holder,
                                path.name)
                    announced = True
                if deadline is None:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                else:
                    os.close(fd)
                    fd = None
                    time.sleep(max(0.0, min(poll, deadline - time.monotonic())))
                    continue
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(path))
            except FileNotFoundError:
                same = False
            if not same:  # the holder removed the file as it released it: lock the one at the path now
                finished_by = _done_marker(fd) or finished_by
                os.close(fd)
                fd = None
                continue
            info = {"pid": os.getpid(), "host": socket.gethostname(), "work_dir": str(work_dir),
                    "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
            if announced:
                log.info("work folder %s is free now: going on", work_dir)
            lock = WorkLock(work_dir, path, fd)
            lock.finished_by = finished_by
            fd = None
            _HELD[str(path)] = lock
            return lock
        finally:
            if fd is not None:
                os.close(fd)


def _done_marker(fd: int) -> dict | None:
    """The done marker a finished holder wrote into the lock file open at ``fd`` (None when it wrote none)."""
    try:
        info = json.loads(os.pread(fd, 65536, 0).decode() or "{}")
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) and info.get("done") else None


def spec_digest(spec: Mapping[str, Any]) -> str:
    import hashlib

    return hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()
