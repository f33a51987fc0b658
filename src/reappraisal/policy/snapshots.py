"""Weights kept at chosen optimizer steps of a GRPO run (``policy.snapshot_steps``), beside the final model.

The truth along the KL from the start (:mod:`reappraisal.evaluation.trajectory_io`) draws fresh answers from
each. A snapshot is written at the end of its step, before that step's checkpoint, into the run's work
folder (which a kill leaves in place and a resume reuses) under a temporary name renamed when complete, so a
run killed at any point and resumed has every snapshot of the steps it passed exactly once; one already
there is kept (the resumed run computes the same weights). When the run finishes they are copied to
``<arm>/steps`` with ``STEPS.json`` naming them (an empty list when none are kept).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Iterable

STEP_FOLDER = re.compile(r"^step-(\d{5})$")
#: Where a run keeps its snapshots while it trains (inside its work folder, which survives a kill) and where
#: they are published beside the final model (``results/policy/<arm>/steps``) with a manifest.
SNAPSHOT_WORK_DIR = "snapshots"
STEPS_DIR = "steps"
MANIFEST = "STEPS.json"


def snapshot_folder(folder: str | Path, step: int) -> Path:
    return Path(folder) / f"step-{int(step):05d}"


def snapshots(folder: str | Path) -> dict[int, Path]:
    """Step -> its snapshot folder, for the complete ones under ``folder`` (none when it does not exist)."""
    folder = Path(folder)
    if not folder.is_dir():
        return {}
    found = {}
    for child in sorted(folder.iterdir()):
        m = STEP_FOLDER.match(child.name)
        if m and child.is_dir():
            found[int(m.group(1))] = child
    return found


def snapshot_callback(steps: Iterable[int], folder: str | Path, tokenizer=None):
    """A ``transformers.TrainerCallback`` that saves the model (and ``tokenizer``) after each step of ``steps``."""
    from transformers import TrainerCallback

    wanted = frozenset(int(s) for s in steps)
    folder = Path(folder)

    class SnapshotCallback(TrainerCallback):
        def on_step_end(self, args, state, control, model=None, **kwargs):
            step = int(state.global_step)
            if step not in wanted or not state.is_world_process_zero or model is None:
                return control
            target = snapshot_folder(folder, step)
            if target.is_dir():
                return control
            tmp = target.with_name(f".{target.name}.tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            model.save_pretrained(tmp, safe_serialization=True)
            if tokenizer is not None:
                tokenizer.save_pretrained(tmp)
            os.replace(tmp, target)
            return control

    return SnapshotCallback()


def publish_snapshots(work_folder: str | Path | None, steps_dir: str | Path, wanted: Iterable[int]) -> list[int]:
    """Copy the complete snapshots of ``work_folder`` into ``steps_dir`` (replaced whole, written under a
    temporary name) with its manifest; a wanted step with no snapshot stops here (the run never reached it).
    Returns the steps published."""
    from reappraisal.atomic import atomic_dir

    found = snapshots(work_folder) if work_folder is not None else {}
    missing = sorted(set(int(s) for s in wanted) - set(found))
    if missing:
        raise RuntimeError(f"policy.snapshot_steps {missing} were not saved (beyond max_steps?)")
    steps = sorted(found)
    with atomic_dir(steps_dir) as tmp:
        for step in steps:
            shutil.copytree(found[step], snapshot_folder(tmp, step))
        (Path(tmp) / MANIFEST).write_text(json.dumps({"steps": steps}, indent=2) + "\n")
    return steps
