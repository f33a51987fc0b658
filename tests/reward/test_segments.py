"""A seed's record covers the whole run: every training segment, killed ones too, and their total time."""

from __future__ import annotations

import json
import os

import pytest
from transformers import TrainerCallback

from reappraisal.reward.train_io import train_reward_model
from reappraisal.training.locks import lock_holder
from reappraisal.training.segments import read_segments

from .conftest import tiny_train_config, toy_examples


class _KilledAt(TrainerCallback):
    """A kill right after the checkpoint at ``step`` was saved (what a SIGKILL then leaves on disk)."""

    def __init__(self, step):
        self.step = step

    def on_save(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            raise KeyboardInterrupt(f"killed after checkpoint-{self.step}")


class _LockProbe(TrainerCallback):
    """Who holds the work folder's lock while the seed trains."""

    def __init__(self):
        self.holders = set()

    def on_step_end(self, args, state, control, **kwargs):
        self.holders.add((lock_holder(args.output_dir) or {}).get("pid"))


def test_the_record_lists_every_segment_of_a_twice_resumed_run(tmp_path, tiny_base, toy_tables):
    train, val, val_pairs = toy_examples(toy_tables)
    kw = dict(base=str(tiny_base), train=train, val=val, val_pairs=val_pairs, seed=1, global_seed=100,
              cfg=tiny_train_config(num_train_epochs=1, save_steps=3), primary_dimension="effectiveness")
    out, work = tmp_path / "seed1", tmp_path / ".seed1.work"

    probe = _LockProbe()
    with pytest.raises(KeyboardInterrupt):
        train_reward_model(out_dir=out, callbacks=[probe, _KilledAt(3)], **kw)
    assert probe.holders == {os.getpid()}  # the trainer held its folder's lock while it trained
    killed = read_segments(work)
    assert [(s["resumed_from"], s["start_step"], s["end_step"], s["completed"]) for s in killed] == [
        (None, 0, 3, False)]
    with pytest.raises(KeyboardInterrupt):
        train_reward_model(out_dir=out, callbacks=[_KilledAt(6)], **kw)
    summary = train_reward_model(out_dir=out, **kw)

    n = summary["global_steps"]
    assert n > 6
    segments = summary["segments"]
    assert [(s["resumed_from"], s["start_step"], s["end_step"], s["completed"]) for s in segments] == [
        (None, 0, 3, False), ("checkpoint-3", 3, 6, False), ("checkpoint-6", 6, n, True)]
    assert segments[0]["seconds"] == killed[0]["seconds"]  # a killed segment keeps its time up to its checkpoint
    assert all(s["seconds"] > 0 for s in segments)
    assert summary["train_seconds"] == pytest.approx(sum(s["seconds"] for s in segments), abs=1e-3)
    assert summary["resumed_from"] == "checkpoint-6"  # the last segment's, as before
    assert json.loads((out / "metrics.json").read_text())["segments"] == segments
    assert sorted(p.name for p in tmp_path.iterdir()) == ["seed1"]  # no work folder, no lock file left


def test_a_rerun_after_the_final_checkpoint_adds_no_segment(tmp_path, tiny_base, toy_tables):
    train, val, val_pairs = toy_examples(toy_tables)
    kw = dict(base=str(tiny_base), train=train, val=val, val_pairs=val_pairs, seed=1, global_seed=100,
              cfg=tiny_train_config(num_train_epochs=1, save_steps=3), primary_dimension="effectiveness")
    fresh = train_reward_model(out_dir=tmp_path / "fresh" / "seed1", **kw)
    n = fresh["global_steps"]
    assert [(s["resumed_from"], s["start_step"], s["end_step"], s["completed"]) for s in fresh["segments"]] == [
        (None, 0, n, True)]
    assert fresh["train_seconds"] == fresh["segments"][0]["seconds"] > 0

    out = tmp_path / "seed1"
    with pytest.raises(KeyboardInterrupt):  # killed after the final checkpoint, before the export
        train_reward_model(out_dir=out, callbacks=[_KilledAt(n)], **kw)
    summary = train_reward_model(out_dir=out, **kw)
    assert summary["resumed_from"] == f"checkpoint-{n}"  # exported as it was: nothing trained again
    assert [(s["resumed_from"], s["start_step"], s["end_step"]) for s in summary["segments"]] == [(None, 0, n)]
    assert summary["train_seconds"] == summary["segments"][0]["seconds"] > 0
