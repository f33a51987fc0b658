"""A stage's work folder: made for one run spec, locked for the stage, resumed from its newest checkpoint.

Also here: what killed atomic writes left beside a stage's outputs
(:func:`remove_stale_temporaries`) and the fingerprint of the data a work
folder was made from.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from ..atomic import write_json
from ..errors import FinishedElsewhere
from .checkpoints import last_complete_checkpoint, read_trainer_state, schedule_finished
from .locks import WorkLock, _describe, lock_work_dir, spec_digest

log = logging.getLogger("reappraisal.training")

RUN_SPEC = "RUN_SPEC.json"


@dataclass
class WorkDir:
    """A stage's work folder and where training resumes from (see :func:`open_work_dir`).

    The folder :func:`open_work_dir` opened carries its lock: use it as a
    context manager (or call :meth:`release`) around the whole stage,
    training and export.
    """

    path: Path
    resume: Path | None = None
    state: dict | None = None
    lock: WorkLock | None = field(default=None, repr=False, compare=False)

    @property
    def finished(self) -> bool:
        """The last complete checkpoint already ends the schedule: export it, do not train again."""
        return self.state is not None and schedule_finished(self.state)

    def subdir(self, name: str, *, main_process: bool = True) -> "WorkDir":
        """A stage inside this folder (the GRM's ``sft`` and ``grpo``), with its own checkpoints (under this
        folder's lock)."""
        return _locate(self.path / name, main_process=main_process)

    def release(self) -> None:
        """Drop the folder's lock (nothing for a subfolder or a non-main process's view)."""
        if self.lock is not None:
            self.lock.release()

    def __enter__(self) -> "WorkDir":
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _locate(path: Path, *, main_process: bool) -> WorkDir:
    if main_process:
        path.mkdir(parents=True, exist_ok=True)
    resume = last_complete_checkpoint(path, remove_incomplete=main_process)
    work = WorkDir(path, resume, read_trainer_state(resume) if resume else None)
    if resume is not None and main_process:
        log.info("resuming from %s (step %s)", resume, work.state["global_step"])
    return work


def open_work_dir(path: str | Path, spec: Mapping[str, Any], *, main_process: bool = True,
                  wait: bool | float = True, take_finished: bool = True) -> WorkDir:
    """The work folder at ``path`` for a run made with ``spec`` (JSON-able settings and data fingerprints).

    The main process first takes the folder's lock (:func:`lock_work_dir`;
    ``wait`` as there) and keeps it in the returned WorkDir: hold it for
    the whole stage (``with open_work_dir(...) as work:``). A folder made
    with another spec is emptied (training starts over); a folder with the
    same spec keeps its checkpoints. Only the main process changes anything
    (others call this after it, with ``main_process=False``; they take no lock).

    When the lock was held by a trainer that then finished the same run (its
    done marker names this spec, and it removed the folder after placing its
    outputs), :class:`FinishedElsewhere` is raised: the outputs are that
    trainer's, and training again would only repeat it. ``take_finished=False``
    (a multi-process run, whose other processes cannot be told) opens the
    folder anew instead.
    """
    path = Path(path)
    spec = json.loads(json.dumps(spec, sort_keys=True, default=str))
    if not main_process:
        return _locate(path, main_process=False)
    lock = lock_work_dir(path, wait=wait)
    lock.spec_digest = spec_digest(spec)
    finished = lock.finished_by
    if take_finished and finished and finished["done"] == lock.spec_digest and not path.exists():
        lock.release()
        raise FinishedElsewhere(f"work folder {path}: the trainer this run waited for ({_describe(finished)}) "
                                "finished the same run; its outputs are in place")
    try:
        spec_path = path / RUN_SPEC
        if path.exists():
            try:
                previous = json.loads(spec_path.read_text())
            except (OSError, ValueError):
                previous = None
            if previous != spec:
                log.info("work folder %s was made with other settings or data: starting over", path)
                shutil.rmtree(path)
        path.mkdir(parents=True, exist_ok=True)
        if not spec_path.exists():
            write_json(spec, spec_path)
        work = _locate(path, main_process=True)
    except BaseException:
        lock.release()
        raise
    work.lock = lock
    return work


def work_dir_beside(output: str | Path) -> Path:
    """The conventional work folder of an output: ``<parent>/.<name>.work`` (its lock: ``.<name>.work.lock``)."""
    output = Path(output)
    return output.parent / f".{output.name}.work"



def _temporary_pattern(name: str) -> re.Pattern:
    # tempfile's names: 8 characters of [a-z0-9_]; atomic_* always add a suffix
    return re.compile(rf"^\.{re.escape(name)}\.[a-z0-9_]{{8}}\.[A-Za-z0-9]+$")


def remove_stale_temporaries(*outputs: str | Path) -> list[Path]:
    """Remove what killed atomic writes of ``outputs`` left beside them; return what was removed.

    Only names :mod:`reappraisal.atomic` makes for these outputs match, so
    the work folder (``.<name>.work``) and other files are never touched.
    """
    removed = []
    for out in outputs:
        out = Path(out)
        if not out.parent.is_dir():
            continue
        pattern = _temporary_pattern(out.name)
        for p in out.parent.iterdir():
            if pattern.match(p.name):
                shutil.rmtree(p, ignore_errors=True) if p.is_dir() and not p.is_symlink() else p.unlink(missing_ok=True)
                removed.append(p)
    if removed:
        log.info("removed %d leftover temporary file(s) of a killed run: %s", len(removed), [p.name for p in removed])
    return removed



def fingerprint(*parts: Any) -> str:
    """sha256 of JSON-able parts (data a work folder was made from)."""
    import hashlib

    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()
