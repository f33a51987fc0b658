"""Training one seed: different seeds differ, the card is written, an interrupted run resumes."""

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import TrainerCallback

from reappraisal.errors import PipelineInputError
from reappraisal.reward.train_io import masked_mse, train_reward_model
from reappraisal.training.checkpoints import last_complete_checkpoint
from reappraisal.training.locks import lock_holder
from reappraisal.training.segments import read_segments

from .conftest import tiny_train_config, toy_examples


def _weights(d):
    return load_file(str(d / "model.safetensors"))


def test_seeds_differ_and_outputs_are_complete(trained_seeds):
    dirs, summaries = trained_seeds
    w0, w1 = _weights(dirs[0]), _weights(dirs[1])
    assert not torch.equal(w0["score.weight"], w1["score.weight"])  # head init differs
    assert any(not torch.equal(w0[k], w1[k]) for k in w0 if k != "score.weight")  # data order differs
    for d, s in zip(dirs, summaries):
        assert {"config.json", "model.safetensors", "tokenizer.json", "README.md", "metrics.json"} <= {p.name for p in d.iterdir()}
        assert not (d.parent / f".{d.name}.work").exists()  # work dir removed on success
        card = (d / "README.md").read_text()
        assert "REAPPRAISAL:" in card and "pairwise accuracy" in card
        assert f"{s['validation']['pairwise']['accuracy']:.3f}" in card
        assert json.loads((d / "metrics.json").read_text())["seed"] == s["seed"]
        cfg = json.loads((d / "config.json").read_text())
        assert cfg["num_labels"] == 4 if "num_labels" in cfg else len(cfg["id2label"]) == 4
        assert cfg["problem_type"] == "regression" and cfg["pad_token_id"] is not None


def test_each_seed_logs_its_loss_and_moves_every_parameter(trained_seeds, tiny_base):
    """TRL's ``test_train``: the seed's starting model (base + its seeded head, rebuilt as the trainer built it)
    against the saved model, and the loss in the saved training log."""
    import math

    from transformers import AutoModelForSequenceClassification

    from reappraisal.reward.base_model import load_base

    for d, s in zip(*trained_seeds):
        _, start = load_base(str(tiny_base), len(s["dimensions"]), s["effective_seed"])
        before = {n: p.detach().clone() for n, p in start.named_parameters()}
        after = dict(AutoModelForSequenceClassification.from_pretrained(d).named_parameters())
        assert after.keys() == before.keys()
        unchanged = [n for n, p in before.items() if torch.allclose(p, after[n])]
        assert not unchanged, f"seed {s['seed']}: not trained: {unchanged}"
        log = json.loads((d / "training_log.json").read_text())
        losses = [e["loss"] for e in log if "loss" in e]
        assert len(losses) >= 2 and all(math.isfinite(x) and x > 0 for x in losses)
        assert [e["train_loss"] for e in log if "train_loss" in e] == [pytest.approx(s["train_loss"])]
        assert math.isfinite(s["train_loss"]) and s["global_steps"] > 0


def test_training_learns_the_planted_quality(trained_seeds):
    # toy quality is a text feature plus rating noise: a working loop ranks val pairs well
    # above chance (a broken one sits at 0.5); the demo-data test holds the real bar
    for s in trained_seeds[1]:
        assert s["validation"]["pairwise"]["accuracy"] > 0.65
        assert s["validation"]["spearman_primary"]["pooled"] > 0.5


def test_masked_mse_ignores_unrated_dimensions():
    logits = torch.tensor([[1.0, 2.0], [0.0, 0.0]])
    labels = torch.tensor([[0.0, float("nan")], [1.0, 1.0]])
    assert masked_mse(logits, labels).item() == pytest.approx((1 + 1 + 1) / 3)
    allnan = torch.full((2, 2), float("nan"))
    assert masked_mse(logits, allnan).item() == 0


class _Crash(TrainerCallback):
    """Simulates a kill right after the checkpoint at ``step`` was saved (``None``: the final one)."""

    def __init__(self, step=None):
        self.step = step

    def on_save(self, args, state, control, **kwargs):
        if state.global_step == (self.step or state.max_steps):
            raise KeyboardInterrupt("killed")


class _Probe(TrainerCallback):
    """Records the step training starts at and the optimizer's step count at the first step."""

    def __init__(self):
        self.seen = {}

    def on_train_begin(self, args, state, control, **kwargs):
        self.seen["start_step"] = state.global_step

    def on_step_begin(self, args, state, control, optimizer=None, **kwargs):
        if "adam_step" not in self.seen:
            param = next(p for g in optimizer.param_groups for p in g["params"])
            self.seen["adam_step"] = float(optimizer.state[param]["step"])


def test_killed_runs_resume_and_match_an_uninterrupted_one(tmp_path, tiny_base, toy_tables):
    """Killed mid-run, mid-save and after the final checkpoint: the result equals one uninterrupted run."""
    import shutil
    import tempfile

    train, val, val_pairs = toy_examples(toy_tables)
    kw = dict(base=str(tiny_base), train=train, val=val, val_pairs=val_pairs, seed=2, global_seed=100,
              cfg=tiny_train_config(num_train_epochs=1, logging_steps=2), primary_dimension="effectiveness")
    fresh = train_reward_model(out_dir=tmp_path / "fresh" / "seed2", **kw)
    n = fresh["global_steps"]
    assert fresh["resumed_from"] is None and n >= 7

    out = tmp_path / "seed2"
    work = tmp_path / ".seed2.work"
    with pytest.raises(KeyboardInterrupt):
        train_reward_model(out_dir=out, callbacks=[_Crash(3)], **kw)
    assert not out.exists()  # nothing Snakemake could take for a finished model
    assert last_complete_checkpoint(work).name == "checkpoint-3"
    # a kill while checkpoint-6 was being written (weights there, trainer state half-written),
    # and the temporary output folder a kill during the final write leaves
    (work / "checkpoint-6").mkdir()
    shutil.copy(work / "checkpoint-3" / "model.safetensors", work / "checkpoint-6")
    (work / "checkpoint-6" / "trainer_state.json").write_text('{"global_step": 6, "log_hi')
    stale = Path(tempfile.mkdtemp(prefix=".seed2.", suffix=".tmp", dir=tmp_path))

    probe = _Probe()
    with pytest.raises(KeyboardInterrupt):
        train_reward_model(out_dir=out, callbacks=[probe, _Crash()], **kw)
    assert probe.seen == {"start_step": 3, "adam_step": 3.0}  # step count and optimizer state restored
    assert last_complete_checkpoint(work).name == f"checkpoint-{n}"
    assert not stale.exists()

    probe = _Probe()
    resumed = train_reward_model(out_dir=out, callbacks=[probe], **kw)
    assert probe.seen == {}  # the final checkpoint ends the schedule: nothing trained again
    assert resumed["resumed_from"] == f"checkpoint-{n}" and resumed["global_steps"] == n
    assert resumed["train_loss"] == pytest.approx(fresh["train_loss"], rel=1e-6)  # over the whole run
    assert resumed["validation"]["pairwise"]["accuracy"] == fresh["validation"]["pairwise"]["accuracy"]
    assert not work.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh", "seed2"]
    a, b = _weights(out), _weights(tmp_path / "fresh" / "seed2")
    for k in a:
        torch.testing.assert_close(a[k], b[k], atol=1e-5, rtol=1e-4)


def test_stale_work_dir_restarts_cleanly(tmp_path, tiny_base, toy_tables):
    train, val, val_pairs = toy_examples(toy_tables)
    kw = dict(base=str(tiny_base), train=train, val=val, val_pairs=val_pairs, seed=0, global_seed=100,
              primary_dimension="effectiveness")
    out = tmp_path / "seed0"
    with pytest.raises(KeyboardInterrupt):
        train_reward_model(out_dir=out, callbacks=[_Crash(3)], cfg=tiny_train_config(num_train_epochs=1), **kw)
    # other settings: the old checkpoints are discarded, training starts over
    summary = train_reward_model(out_dir=out, cfg=tiny_train_config(num_train_epochs=1, learning_rate=1e-3), **kw)
    assert summary["resumed_from"] is None and out.exists()


def test_missing_base_model_is_a_clear_error(tmp_path, toy_tables):
    train, val, val_pairs = toy_examples(toy_tables)
    with pytest.raises(PipelineInputError, match="does not exist"):
        train_reward_model(base=str(tmp_path / "no_such_model"), train=train, val=val, val_pairs=val_pairs, seed=0,
                           global_seed=0, out_dir=tmp_path / "seed0", cfg=tiny_train_config(), primary_dimension="effectiveness")
    assert not (tmp_path / "seed0").exists()


def test_base_tokenizer_without_pad_token_pads_with_eos(tmp_path, tiny_base, toy_tables):
    import shutil

    from transformers import AutoTokenizer

    base = tmp_path / "nopad_base"
    shutil.copytree(tiny_base, base)
    tok = AutoTokenizer.from_pretrained(base)
    tok.pad_token = None
    tok.save_pretrained(base)
    cfg = json.loads((base / "config.json").read_text())
    cfg["pad_token_id"] = None
    (base / "config.json").write_text(json.dumps(cfg))
    train, val, val_pairs = toy_examples(toy_tables)
    s = train_reward_model(base=str(base), train=train, val=val, val_pairs=val_pairs, seed=0, global_seed=0,
                           out_dir=tmp_path / "seed0", cfg=tiny_train_config(num_train_epochs=1), primary_dimension="effectiveness")
    saved = json.loads((tmp_path / "seed0" / "config.json").read_text())
    assert saved["pad_token_id"] == tok.eos_token_id
    assert AutoTokenizer.from_pretrained(tmp_path / "seed0").pad_token == tok.eos_token
    assert s["n_train"] == len(train)


@pytest.mark.slow
def test_sigkill_mid_run_then_rerun_resumes(tmp_path, toy_files, tiny_base):
    """A real kill (SIGKILL) of the stage's command: no model directory, then the rerun resumes."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from .toy import DATA

    params = json.dumps({
        "data": DATA,
        "reward": {"seeds": [0], "max_length": 128, "learning_rate": 3e-3, "num_train_epochs": 60,
                         "per_device_train_batch_size": 8, "save_steps": 2, "eval_steps": 1000,
                         "logging_steps": 1000, "cpu_threads": 1},
        "seed": 1, "preset": "demo",
    })
    out = tmp_path / "rm" / "seed0"
    cmd = [sys.executable, "-m", "reappraisal", "train-reward-model", "--base-model", str(tiny_base),
           "--targets", str(toy_files["targets"]), "--vignettes", str(toy_files["vignettes"]),
           "--pairs", str(toy_files["pairs"]), "--seed", "0", "--out", str(out), "--params", params]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    work = tmp_path / "rm" / ".seed0.work"
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None:
            # any complete checkpoint (older ones are rotated away by save_total_limit), counted in segments.json
            segments = read_segments(work)
            if any(work.glob("checkpoint-*/trainer_state.json")) and segments and segments[-1]["end_step"] > 0:
                break
            time.sleep(0.05)
        assert proc.poll() is None, "training finished before it could be killed"
        assert lock_holder(work)["pid"] == proc.pid  # the trainer holds its folder's lock
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not out.exists()
    assert last_complete_checkpoint(work) is not None
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "resuming from" in done.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["resumed_from"].startswith("checkpoint-")
    killed, resumed = metrics["segments"]  # the SIGKILLed segment is in the record, up to its last checkpoint
    assert killed["resumed_from"] is None and not killed["completed"] and killed["end_step"] >= 2
    assert resumed["resumed_from"] == metrics["resumed_from"] and resumed["completed"]
    assert metrics["train_seconds"] == pytest.approx(killed["seconds"] + resumed["seconds"], abs=1e-3)
    assert not work.exists() and not (work.parent / ".seed0.work.lock").exists()


def test_early_stopping_keeps_the_best_checkpoint(tmp_path, tiny_base, toy_tables):
    train, val, val_pairs = toy_examples(toy_tables)
    s = train_reward_model(base=str(tiny_base), train=train, val=val, val_pairs=val_pairs, seed=0, global_seed=0,
                           out_dir=tmp_path / "seed0", primary_dimension="effectiveness",
                           cfg=tiny_train_config(num_train_epochs=3, early_stopping_patience=1, save_steps=2))
    evals = [e["eval_loss"] for e in json.loads((tmp_path / "seed0" / "training_log.json").read_text()) if "eval_loss" in e]
    assert evals and s["config"]["early_stopping_patience"] == 1
    assert not (tmp_path / ".seed0.work").exists()
