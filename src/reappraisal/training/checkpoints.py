"""A Trainer's checkpoints in a work folder: which are complete, the newest one, whether its schedule ended.

A checkpoint is complete when its weights are there and its
``trainer_state.json`` (the last file the Trainer writes) is readable; a
newer, half-written one (a kill during saving) is removed, never fatal.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path
from typing import Any, Mapping

log = logging.getLogger("reappraisal.training")

TRAINER_STATE = "trainer_state.json"
CHECKPOINT_PREFIX = "checkpoint-"
#: Any of these makes a checkpoint folder hold weights.
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")
#: Files of a checkpoint that are training state, not the model (left out by :func:`~reappraisal.training.run.export_model`).
TRAINING_STATE_FILES = ("optimizer.pt", "scheduler.pt", "scaler.pt", TRAINER_STATE, "training_args.bin", "latest",
                        "zero_to_fp32.py")
_TRAINING_STATE_PATTERNS = (re.compile(r"^rng_state(_\d+)?\.pth$"), re.compile(r"^global_step\d+$"))


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



def is_training_state(name: str) -> bool:
    """Whether a file of a checkpoint is training state (optimizer, scheduler, RNG), not the model."""
    return name in TRAINING_STATE_FILES or any(p.match(name) for p in _TRAINING_STATE_PATTERNS)
