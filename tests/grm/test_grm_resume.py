"""The GRM's RL stage checkpoints every ``grm.grpo.save_steps``: killed after an RL checkpoint, a rerun says
where it resumes from and ends with the weights of an uninterrupted run; the summary lists every segment."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from transformers import TrainerCallback

from reappraisal.grm.train_io import train_grm
from reappraisal.grm.training_summary import SUMMARY_FILE
from reappraisal.training.locks import lock_holder
from reappraisal.training.segments import read_segments

from .conftest import DATA, grm_settings


class Killed(Exception):
    pass


def _stage(args) -> str:
    return Path(args.output_dir).name


class _KillAfterRLCheckpoint(TrainerCallback):
    def on_save(self, args, state, control, **kw):
        if _stage(args) == "grpo" and state.global_step == 1:
            raise Killed("after grpo checkpoint-1")


class _Probe(TrainerCallback):
    """Where each stage starts, and who holds the work folder's lock when the RL stage starts."""

    def __init__(self, work: Path):
        self.work, self.start, self.lock_pid = work, {}, None

    def on_train_begin(self, args, state, control, **kw):
        self.start[_stage(args)] = state.global_step
        if _stage(args) == "grpo":
            self.lock_pid = (lock_holder(self.work) or {}).get("pid")


def _weights(model_dir: Path):
    from safetensors.torch import load_file

    return load_file(str(model_dir / "model.safetensors"))


def test_killed_after_an_rl_checkpoint_the_rerun_resumes_there_and_matches_an_uninterrupted_run(
        tables, tiny_base, tmp_path, caplog):
    import torch

    cfg = grm_settings(sft={"num_train_epochs": 1}, grpo={"max_steps": 2, "save_steps": 1})
    args = (str(tiny_base), tables["pairs"], tables["targets"], tables["vignettes"])
    kw = dict(grm=cfg, data=DATA, seed=7)
    fresh = train_grm(*args, **kw, out_dir=tmp_path / "fresh" / "grm", sft_out_dir=tmp_path / "fresh" / "grm_sft")

    root = tmp_path / "run"
    work = root / ".grm.work"
    out = dict(out_dir=root / "grm", sft_out_dir=root / "grm_sft")
    with pytest.raises(Killed):
        train_grm(*args, **kw, **out, callbacks=[_KillAfterRLCheckpoint()])
    assert (work / "grpo" / "checkpoint-1" / "trainer_state.json").is_file()  # saved on the RL stage's schedule
    assert [(s["start_step"], s["end_step"], s["completed"]) for s in read_segments(work / "grpo")] == [(0, 1, False)]

    probe = _Probe(work)
    with caplog.at_level(logging.INFO, logger="reappraisal.training"):
        summary = train_grm(*args, **kw, **out, callbacks=[probe])
    resumed = [r.getMessage() for r in caplog.records if r.getMessage().startswith("resuming from")]
    assert f"resuming from {work / 'grpo' / 'checkpoint-1'} (step 1)" in resumed
    assert probe.start == {"grpo": 1}  # SFT had ended (exported as it was); the RL stage went on from step 1
    assert probe.lock_pid == os.getpid()  # the lock is still held after the SFT export

    grpo = summary["grpo"]
    assert grpo["resumed_from"] == "checkpoint-1" and grpo["global_step"] == 2
    assert [(s["resumed_from"], s["start_step"], s["end_step"], s["completed"]) for s in grpo["segments"]] == [
        (None, 0, 1, False), ("checkpoint-1", 1, 2, True)]
    assert [r["step"] for r in grpo["log"] if "reward" in r] == [1, 2]
    stages = [(s["stage"], s["resumed_from"]) for s in summary["segments"]]
    assert stages == [("sft", None), ("grpo", None), ("grpo", "checkpoint-1")]
    assert summary["train_seconds"] == pytest.approx(sum(s["seconds"] for s in summary["segments"]), abs=1e-3)
    assert summary["train_seconds"] == pytest.approx(summary["sft"]["train_seconds"] + grpo["train_seconds"], abs=1e-3)
    import json

    assert json.loads((root / "grm" / SUMMARY_FILE).read_text())["segments"] == summary["segments"]
    assert sorted(p.name for p in root.iterdir()) == ["grm", "grm_sft"]  # no work folder, no lock file

    a, b = _weights(root / "grm"), _weights(tmp_path / "fresh" / "grm")
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(a[name], b[name], atol=1e-5, rtol=1e-4, msg=name)
    assert fresh["grpo"]["segments"][0]["completed"] and len(fresh["segments"]) == 2
