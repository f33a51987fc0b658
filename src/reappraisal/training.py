"""Training plumbing shared by the reward-model, GRM and policy trainers (core layer).

Every trainer here is a ``transformers.Trainer`` (TRL's ``SFTTrainer`` and
``GRPOTrainer`` are ones too) and runs the same way:

* **Work folder.** Checkpoints go to a persistent folder beside the output
  (``<output folder>/.<output name>.work/``, or one the caller names), never
  to a temporary directory, so a killed run keeps what it did. The folder
  carries ``RUN_SPEC.json``, the settings and data fingerprints it was made
  with (:func:`open_work_dir`): a rerun with the same spec resumes, any
  other starts over.
* **Resume.** From the newest *complete* checkpoint (:func:`is_complete_checkpoint`:
  its ``trainer_state.json`` is the last file the Trainer writes, and the
  weights are there); newer, half-written ones (a kill during saving) are
  removed, never fatal. A checkpoint that already reached the end of the
  schedule (``global_step >= max_steps``, or early stopping decided) is not
  trained again: its model is exported as it is (:func:`export_model`), so
  a rerun after the final checkpoint never passes ``max_steps``.
* **Whole-run figures.** The Trainer's ``train_loss`` covers only the steps
  run in this call; :func:`log_at_save_callback` logs at every checkpoint, so the
  loss of the steps before the checkpoint is in its log history, and
  :func:`whole_run_loss` combines both (:func:`run_training` reports it and
  puts it in the log history).
* **One trainer per work folder.** :func:`open_work_dir` takes an exclusive
  ``flock`` on a lock file beside the folder (:func:`work_lock_path`:
  ``<parent>/.<folder name>.lock``, e.g. ``.seed0.work.lock``; beside, not
  inside, since the folder may be emptied) and writes its pid, host and
  start time into it. The caller keeps it for the whole stage (training and
  export: ``with open_work_dir(...) as work:``). A second opener (a rerun
  while a trainer orphaned by a killed pipeline still runs) logs one line
  naming the holder and waits for it, then resumes from what it left, or,
  when the holder finished the same run, takes its outputs
  (:class:`~reappraisal.errors.FinishedElsewhere`: a done marker in the lock file);
  ``wait=False`` (or a number of seconds) refuses instead. A lock file left
  by a dead process holds no lock and never blocks.
* **Segments.** Every ``trainer.train`` call is a segment, recorded in the
  work folder's ``segments.json`` when it starts and at every checkpoint
  (the checkpoint it resumed from, its first and last step, its seconds),
  so a killed segment counts up to its last checkpoint;
  :meth:`RunResult.record` gives ``segments``, ``train_seconds`` (their
  total) and ``resumed_from`` (the last segment's) for a stage's record.
* **Leftovers.** Temporaries of atomic writes that a kill left behind
  (:mod:`reappraisal.atomic` names them ``.<name>.<8 chars>.<suffix>``) are
  removed before a stage writes its outputs again (:func:`remove_stale_temporaries`).

Also here: the precision rule (:func:`use_bf16`), CPU threads
(:func:`set_cpu_threads`) and right padding of token-id batches
(:func:`pad_right`). The KL check of every GRPO stage is
:func:`reappraisal.config.check_kl_beta`.
Heavy libraries (torch, transformers) are imported inside the functions.
"""

from __future__ import annotations

import datetime
import errno
import fcntl
import json
import logging
import math
import os
import re
import shutil
import socket
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Mapping, Sequence

from .atomic import atomic_dir, write_json
from .errors import ConfigError, FinishedElsewhere, PipelineInputError

log = logging.getLogger("reappraisal.training")

RUN_SPEC = "RUN_SPEC.json"
SEGMENTS = "segments.json"
LOCK_SUFFIX = ".lock"
TRAINER_STATE = "trainer_state.json"
CHECKPOINT_PREFIX = "checkpoint-"
#: Any of these makes a checkpoint folder hold weights.
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")
#: Files of a checkpoint that are training state, not the model (left out by :func:`export_model`).
TRAINING_STATE_FILES = ("optimizer.pt", "scheduler.pt", "scaler.pt", TRAINER_STATE, "training_args.bin", "latest",
                        "zero_to_fp32.py")
_TRAINING_STATE_PATTERNS = (re.compile(r"^rng_state(_\d+)?\.pth$"), re.compile(r"^global_step\d+$"))


# ------------------------------------------------------------------ settings
def bf16_capable() -> bool:
    """Whether this machine has a CUDA GPU that supports bf16."""
    import torch

    return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())


def use_bf16(setting: str | bool, *, where: str, capable: bool | None = None) -> bool:
    """The precision rule of every trainer: bf16 mixed precision or float32.

    ``setting``: ``"auto"`` (bf16 where the GPU supports it, never on CPU),
    ``True``/``"bf16"`` (bf16; a ConfigError naming ``where`` when the machine
    cannot) or ``False``/``"fp32"``. ``capable`` overrides the detection (to
    lay out settings for another machine, e.g. a cluster preset).
    """
    capable = bf16_capable() if capable is None else bool(capable)
    if setting == "auto":
        return capable
    if setting is True or setting == "bf16":
        if not capable:
            raise ConfigError("bf16 requested but this machine has no bf16-capable GPU", where=where)
        return True
    if setting is False or setting == "fp32":
        return False
    raise ConfigError(f"{setting!r} is not a precision (auto, bf16/true or fp32/false)", where=where)


def model_dtype(bf16: bool) -> str:
    """The dtype name models are loaded in for the precision :func:`use_bf16` chose."""
    return "bfloat16" if bf16 else "float32"


def set_cpu_threads(n: int | None, *, use_cpu: bool | None = None) -> None:
    """Torch intra-op threads for a CPU run (``None`` or a GPU run keeps torch's default).

    ``use_cpu=None``: the run is on CPU when no GPU is visible. On a shared
    2-core machine two jobs each using torch's default (every core) compete
    for the cores, which slows tiny models far more than one thread each.
    """
    from .numerics import check_pinned

    check_pinned()
    if not n:
        return
    import torch

    if use_cpu is None:
        use_cpu = not torch.cuda.is_available()
    if use_cpu:
        torch.set_num_threads(int(n))


def checkpointing_args(output_dir: str | Path, *, seed: int, save_steps: int, save_total_limit: int, bf16: bool,
                       use_cpu: bool, activation_checkpointing: bool) -> dict[str, Any]:
    """The ``TrainingArguments`` every trainer here shares: checkpoints every ``save_steps`` into its work
    folder (what :func:`run_training` resumes from), precision, device, seed, no external loggers."""
    return dict(output_dir=str(output_dir), save_strategy="steps", save_steps=int(save_steps),
                save_total_limit=int(save_total_limit), report_to="none", seed=int(seed), bf16=bool(bf16),
                use_cpu=bool(use_cpu), activation_checkpointing=bool(activation_checkpointing))


# ------------------------------------------------------------------- batches
def pad_right(seqs: Sequence[Sequence[int]], pad_id: int, *, labels: Sequence[Sequence[int]] | None = None,
              label_pad: int = -100) -> dict[str, Any]:
    """Right-padded ``input_ids`` and ``attention_mask`` (and ``labels`` padded with ``label_pad``).

    Every real token keeps the position it has alone, so a batch scores like
    its rows one at a time (the sequence-classification head pools the last
    non-pad token).
    """
    import torch
    from torch.nn.utils.rnn import pad_sequence

    ids = [torch.as_tensor(list(s), dtype=torch.long) for s in seqs]
    out = {
        "input_ids": pad_sequence(ids, batch_first=True, padding_value=int(pad_id)),
        "attention_mask": pad_sequence([torch.ones(len(t), dtype=torch.long) for t in ids], batch_first=True),
    }
    if labels is not None:
        lab = [torch.as_tensor(list(s), dtype=torch.long) for s in labels]
        out["labels"] = pad_sequence(lab, batch_first=True, padding_value=int(label_pad))
    return out


# --------------------------------------------------------------- checkpoints
def checkpoint_step(path: Path) -> int | None:
    """N of a ``checkpoint-N`` folder, else None."""
    name = Path(path).name
    tail = name[len(CHECKPOINT_PREFIX):]
    return int(tail) if name.startswith(CHECKPOINT_PREFIX) and tail.isdigit() else None


def read_trainer_state(checkpoint: Path) -> dict | None:
    """The checkpoint's ``trainer_state.json``, or None when absent or half-written."""
    try:
        state = json.loads((Path(checkpoint) / TRAINER_STATE).read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) and "global_step" in state else None


def is_complete_checkpoint(checkpoint: Path) -> bool:
    """A checkpoint the Trainer finished writing: weights present, ``trainer_state.json`` (written last) readable."""
    checkpoint = Path(checkpoint)
    return any((checkpoint / f).is_file() for f in WEIGHT_FILES) and read_trainer_state(checkpoint) is not None


def last_complete_checkpoint(work_dir: str | Path, *, remove_incomplete: bool = True) -> Path | None:
    """The newest complete ``checkpoint-N`` in ``work_dir``; newer incomplete ones are removed (or skipped)."""
    work_dir = Path(work_dir)
    if not work_dir.is_dir():
        return None
    found = sorted(((checkpoint_step(p), p) for p in work_dir.iterdir() if p.is_dir() and checkpoint_step(p) is not None),
                   reverse=True)
    for _, p in found:
        if is_complete_checkpoint(p):
            return p
        if remove_incomplete:
            log.warning("removing incomplete checkpoint %s (killed while saving)", p)
            shutil.rmtree(p, ignore_errors=True)
    return None


def schedule_finished(state: Mapping[str, Any]) -> bool:
    """Whether a trainer state is at the end of its schedule (max_steps reached, or early stopping decided)."""
    if int(state.get("max_steps") or 0) > 0 and int(state["global_step"]) >= int(state["max_steps"]):
        return True
    control = ((state.get("stateful_callbacks") or {}).get("TrainerControl") or {}).get("attributes") or {}
    return bool(control.get("should_training_stop"))


# ------------------------------------------------------------------- locking
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


# ----------------------------------------------------------------- work dirs
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


# ------------------------------------------------------------------ leftovers
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


# ------------------------------------------------------------------- running
def whole_run_loss(log_history: Iterable[Mapping[str, Any]], *, upto_step: int, segment_loss: float,
                   global_step: int) -> float | None:
    """Mean training loss per step over steps 1..``global_step``.

    Steps up to ``upto_step`` (the checkpoint resumed from) are read from the
    log history (each logged ``loss`` is the mean of the steps since the
    previous log); the steps after it contribute ``segment_loss`` each (the
    Trainer's ``train_loss`` of this call). None when the history does not
    cover ``upto_step`` exactly (a checkpoint that was not logged at).
    """
    total, last = 0.0, 0
    for entry in sorted((e for e in log_history if "loss" in e and "step" in e), key=lambda e: e["step"]):
        step = int(entry["step"])
        if step > upto_step:
            break
        if step > last:
            total += float(entry["loss"]) * (step - last)
            last = step
    if last != upto_step:
        return None
    total += float(segment_loss) * (global_step - upto_step)
    return total / global_step if global_step > 0 else math.nan


def log_at_save_callback():
    """A ``TrainerCallback`` that logs at every checkpoint, so a checkpoint's log history covers every step."""
    from transformers import TrainerCallback

    class LogAtSave(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if control.should_save:
                control.should_log = True
            return control

    return LogAtSave()


# ------------------------------------------------------------------ segments
def read_segments(work_dir: str | Path) -> list[dict]:
    """The training segments recorded in a work folder (``segments.json``; none when absent or unreadable)."""
    try:
        data = json.loads((Path(work_dir) / SEGMENTS).read_text())
    except (OSError, ValueError):
        return []
    return [s for s in data if isinstance(s, dict)] if isinstance(data, list) else []


def total_seconds(segments: Iterable[Mapping[str, Any]]) -> float:
    """The training time of a run: the sum of its segments' seconds."""
    return round(sum(float(s.get("seconds") or 0.0) for s in segments), 3)


def segment_record(*, resumed_from: str | None, start_step: int, end_step: int, seconds: float,
                   completed: bool) -> dict[str, Any]:
    """One segment's entry: the checkpoint it resumed from (None: from the start), its first and last step,
    its seconds up to its last checkpoint (or its end) and whether it ran to its end (False: killed)."""
    return {"resumed_from": resumed_from, "start_step": int(start_step), "end_step": int(end_step),
            "seconds": round(float(seconds), 3), "completed": bool(completed)}


class _SegmentLog:
    """Keeps the current segment's entry of ``segments.json`` up to date (main process only)."""

    def __init__(self, work_dir: Path, resumed_from: str | None, start_step: int, *, write: bool):
        self.path = Path(work_dir) / SEGMENTS
        self.write = write
        self.segments = read_segments(work_dir)
        self.t0 = time.monotonic()
        self.entry = segment_record(resumed_from=resumed_from, start_step=start_step, end_step=start_step,
                                    seconds=0.0, completed=False)
        self.segments.append(self.entry)
        self._save()

    def update(self, step: int, *, completed: bool = False) -> None:
        self.entry.update(end_step=int(step), seconds=round(time.monotonic() - self.t0, 3), completed=completed)
        self._save()

    def _save(self) -> None:
        if self.write:
            write_json(self.segments, self.path)

    def callback(self):
        """A ``TrainerCallback`` recording the step and seconds at every checkpoint."""
        from transformers import TrainerCallback

        segment_log = self

        class RecordSegment(TrainerCallback):
            def on_save(self, args, state, control, **kwargs):
                segment_log.update(state.global_step)
                return control

        return RecordSegment()


@dataclass
class RunResult:
    """What one stage's training amounted to, over the whole run (every segment)."""

    global_step: int
    max_steps: int
    train_loss: float | None
    log_history: list[dict] = field(default_factory=list)
    resumed_from: str | None = None
    exported_from: Path | None = None  # set when the schedule had ended at a checkpoint: the model is there
    segments: list[dict] = field(default_factory=list)  # every training segment of the run, killed ones too

    @property
    def train_seconds(self) -> float:
        """Seconds of training over every segment (a killed one up to its last checkpoint)."""
        return total_seconds(self.segments)

    def record(self) -> dict[str, Any]:
        """What a stage's record says about its run: ``segments``, ``train_seconds`` (their total) and
        ``resumed_from`` (the checkpoint the last segment, or this export, started from)."""
        return {"segments": [dict(s) for s in self.segments], "train_seconds": self.train_seconds,
                "resumed_from": self.resumed_from}


def run_training(trainer, work: WorkDir, *, where: str = "training") -> RunResult:
    """Train (or resume) ``trainer`` in ``work``; skip training when the last checkpoint ends the schedule.

    ``trainer.args.output_dir`` must be ``work.path`` and its save strategy
    ``steps``. Refuses a run that stopped before its schedule's end without a
    reason (e.g. a batch the data cannot fill: no step at all). Each call
    that trains is one segment of ``segments.json`` (see the module doc).
    """
    if Path(trainer.args.output_dir).resolve() != work.path.resolve():
        raise ValueError(f"the trainer writes to {trainer.args.output_dir}, not to its work folder {work.path}")
    resumed_from = work.resume.name if work.resume else None
    if work.finished:
        state = work.state
        source = work.resume
        best = state.get("best_model_checkpoint")
        if trainer.args.load_best_model_at_end and best and (work.path / Path(best).name).is_dir():
            source = work.path / Path(best).name  # what load_best_model_at_end would have loaded
        history = list(state.get("log_history") or [])
        step = int(state["global_step"])
        loss = whole_run_loss(history, upto_step=step, segment_loss=0.0, global_step=step)
        history = [e for e in history if "train_loss" not in e] + [{"train_loss": loss, "step": step}]
        log.info("%s: checkpoint %s already ends the schedule (step %d): exporting it, no training", where,
                 work.resume.name, step)
        return RunResult(step, int(state.get("max_steps") or step), loss, history, resumed_from, source,
                         read_segments(work.path))

    trainer.add_callback(log_at_save_callback())
    start_step = int(work.state["global_step"]) if work.state else 0
    segment = _SegmentLog(work.path, resumed_from, start_step, write=trainer.is_world_process_zero())
    # first in line: the checkpoint is counted even when a later callback raises at the same save
    trainer.callback_handler.callbacks.insert(0, segment.callback())
    output = trainer.train(resume_from_checkpoint=str(work.resume) if work.resume else None)
    state = trainer.state
    segment.update(state.global_step, completed=True)
    if state.global_step == 0 or (state.global_step < state.max_steps and not trainer.control.should_training_stop):
        raise PipelineInputError(
            f"training stopped after step {state.global_step} of {state.max_steps}: the data cannot fill "
            "the configured batches",
            where=where,
        )
    loss = whole_run_loss(state.log_history, upto_step=start_step, segment_loss=output.training_loss,
                          global_step=state.global_step)
    if loss is None:
        log.warning("%s: the resumed checkpoint was not logged at; train_loss covers the resumed steps only", where)
        loss = float(output.training_loss)
    for entry in reversed(state.log_history):
        if "train_loss" in entry:
            entry["train_loss"] = loss
            break
    return RunResult(int(state.global_step), int(state.max_steps), loss, list(state.log_history), resumed_from,
                     segments=[dict(s) for s in segment.segments])


def _is_training_state(name: str) -> bool:
    return name in TRAINING_STATE_FILES or any(p.match(name) for p in _TRAINING_STATE_PATTERNS)


def export_model(trainer, result: RunResult, dest: str | Path) -> None:
    """Write the trained model to ``dest``: the trainer's model, or the checkpoint the schedule ended at.

    Every process must call it (``save_model`` gathers sharded weights); only
    the one that saves writes.
    """
    dest = Path(dest)
    if result.exported_from is None:
        trainer.save_model(str(dest))
        if trainer.args.should_save:
            (dest / "training_args.bin").unlink(missing_ok=True)
        return
    if not trainer.args.should_save:
        return
    dest.mkdir(parents=True, exist_ok=True)
    for p in sorted(result.exported_from.iterdir()):
        if _is_training_state(p.name):
            continue
        if p.is_dir():
            shutil.copytree(p, dest / p.name, dirs_exist_ok=True)
        else:
            shutil.copy2(p, dest / p.name)


@contextmanager
def finished_model(trainer, result: RunResult, work: "WorkDir", out_dir: str | Path, *,
                   tokenizer=None) -> Iterator[Path]:
    """A trainer's finish, the same for every one-process trainer: the model (:func:`export_model`) and its
    ``tokenizer`` in a temporary folder beside ``out_dir`` that the caller writes its records into; on success
    that folder replaces ``out_dir`` whole and the work folder (checkpoints, segment log) is removed. A crash
    inside leaves the old output and the work folder, so a rerun resumes."""
    with atomic_dir(out_dir) as tmp:
        export_model(trainer, result, tmp)
        if tokenizer is not None:
            tokenizer.save_pretrained(str(tmp))
        yield tmp
    shutil.rmtree(work.path, ignore_errors=True)


def fingerprint(*parts: Any) -> str:
    """sha256 of JSON-able parts (data a work folder was made from)."""
    import hashlib

    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()
