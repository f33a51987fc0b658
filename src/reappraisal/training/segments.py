"""The segment log: every ``trainer.train`` call of a run, with the checkpoint it resumed from, its steps and seconds.

Recorded in the work folder's ``segments.json`` when a segment starts and at
every checkpoint, so a killed segment counts up to its last checkpoint.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..atomic import write_json

SEGMENTS = "segments.json"


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
