"""Running a Trainer in its work folder and finishing it: resume, whole-run figures, export, the outputs put in place."""

from __future__ import annotations

import logging
import math
import shutil
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from ..atomic import atomic_dir, replace_dir
from ..errors import PipelineInputError
from .checkpoints import is_training_state
from .fused_head import score_labelled_positions_only
from .segments import _SegmentLog, read_segments, total_seconds
from .tracking import OFF, REPORTERS, Tracking
from .work_dir import WorkDir

log = logging.getLogger("reappraisal.training")

#: The folder inside a work folder that a finished model is exported into before it is put in place.
EXPORT_DIR = "export"


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


def run_training(trainer, work: WorkDir, *, where: str = "training", tracking: Tracking = OFF) -> RunResult:
    """Train (or resume) ``trainer`` in ``work``; skip training when the last checkpoint ends the schedule.

    ``trainer.args.output_dir`` must be ``work.path`` and its save strategy
    ``steps``. Refuses a run that stopped before its schedule's end without a
    reason (e.g. a batch the data cannot fill: no step at all). Each call
    that trains is one segment of ``segments.json`` (see the module doc).
    ``tracking``: the reporter the trainer's arguments were built with
    (:meth:`~reappraisal.training.tracking.Tracking.training_args`), pointed here at the job's folder.
    """
    if Path(trainer.args.output_dir).resolve() != work.path.resolve():
        raise ValueError(f"the trainer writes to {trainer.args.output_dir}, not to its work folder {work.path}")
    reporters = [r for r in trainer.args.report_to if r in REPORTERS]
    if reporters != ([] if tracking.report_to == "none" else [tracking.report_to]):
        raise ValueError(f"the trainer reports to {reporters}, not to {tracking.report_to!r} as run_training is told")
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

    score_labelled_positions_only()
    trainer.add_callback(log_at_save_callback())
    tracking.attach(trainer, resume=work.resume is not None)
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



def export_model(trainer, result: RunResult, dest: str | Path, *, tokenizer=None) -> None:
    """Write the trained model (and ``tokenizer``) to ``dest``: the trainer's model, or the checkpoint the
    schedule ended at.

    Every process must call it (``save_model`` gathers sharded weights); only
    the one that saves writes.
    """
    dest = Path(dest)
    if result.exported_from is None:
        trainer.save_model(str(dest))
        if trainer.args.should_save:
            (dest / "training_args.bin").unlink(missing_ok=True)
    elif trainer.args.should_save:
        dest.mkdir(parents=True, exist_ok=True)
        for p in sorted(result.exported_from.iterdir()):
            if is_training_state(p.name):
                continue
            if p.is_dir():
                shutil.copytree(p, dest / p.name, dirs_exist_ok=True)
            else:
                shutil.copy2(p, dest / p.name)
    if tokenizer is not None and trainer.args.should_save:
        tokenizer.save_pretrained(str(dest))


@contextmanager
def finished_outputs(work: WorkDir, *out_dirs: str | Path) -> Iterator[list[Path]]:
    """A stage's finish: a temporary folder beside each of ``out_dirs`` for the caller to fill; on success
    each replaces its output whole, then the work folder (checkpoints, segment log) is removed. A crash
    inside leaves the old outputs and the work folder, so a rerun resumes."""
    with ExitStack() as placed:
        yield [placed.enter_context(atomic_dir(d)) for d in out_dirs]
    shutil.rmtree(work.path, ignore_errors=True)


@contextmanager
def finished_model(trainer, result: RunResult, work: WorkDir, out_dir: str | Path, *, tokenizer=None,
                   wait_for_everyone: Callable[[], None] | None = None) -> Iterator[Path | None]:
    """A trainer's finish: the model (:func:`export_model`) and its ``tokenizer`` exported into
    ``<work folder>/export``, which the caller writes its records into; on success that folder replaces
    ``out_dir`` whole and the work folder is removed (as :func:`finished_outputs`).

    Every process of a run enters it (the export gathers sharded weights);
    ``wait_for_everyone`` (accelerate's, on a run of several processes) is
    called once all have exported. The process that saves gets the folder;
    the others get None, and their exit does nothing.
    """
    export = work.path / EXPORT_DIR
    saves = trainer.args.should_save
    if saves:
        shutil.rmtree(export, ignore_errors=True)  # what a killed earlier export left
    export_model(trainer, result, export, tokenizer=tokenizer)
    if wait_for_everyone is not None:
        wait_for_everyone()
    if not saves:
        yield None
        return
    yield export
    replace_dir(export, out_dir)
    shutil.rmtree(work.path, ignore_errors=True)
