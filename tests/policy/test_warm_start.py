"""The demo's warm start (TRL ``SFTTrainer``): the loss on the completion only, every step reported, and a killed
run that resumes from its checkpoint and ends with the weights of an uninterrupted run."""

from __future__ import annotations

import json
import logging

import pandas as pd
import pytest
from transformers import TrainerCallback

from reappraisal.policy.committee import FormatGate
from reappraisal.policy.warm_start_io import RECORD_FILE, prompt_completion, run_warm_start, warm_start_examples
from reappraisal.settings import WarmStartSettings
from reappraisal.training.tracking import Tracking

SHORT = {"max_steps": 4, "learning_rate": 3e-3, "per_device_train_batch_size": 4, "max_length": 256, "save_steps": 2}


class Killed(Exception):
    pass


class _KillAtCheckpoint(TrainerCallback):
    def on_save(self, args, state, control, **kw):
        if state.global_step == 2:
            raise Killed("after checkpoint-2")


@pytest.fixture(scope="module")
def examples(targets, vignettes):
    return warm_start_examples(targets, vignettes, seed=0, gate=FormatGate(2, -3.0))


def _weights(model_dir):
    from safetensors.torch import load_file

    return load_file(str(model_dir / "model.safetensors"))


def test_the_loss_covers_the_thinking_and_the_answer_not_the_prompt(tmp_path, tiny_policy, examples):
    """TRL's completion-only loss on the warm start's prompt/completion texts: the labels are the completion's
    tokens, EOS included, and the prompt (the chat template's, ending in the opened think block) has none."""
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    tokenizer = AutoTokenizer.from_pretrained(tiny_policy)
    data = prompt_completion(tokenizer, examples[:3])
    assert all(p.rstrip().endswith("<think>") for p in data["prompt"])
    trainer = SFTTrainer(model=str(tiny_policy), args=SFTConfig(output_dir=str(tmp_path), report_to="none", use_cpu=True),
                         train_dataset=Dataset.from_dict(data), processing_class=tokenizer)
    for row, prompt, completion in zip(trainer.train_dataset, data["prompt"], data["completion"]):
        prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        completion_ids = tokenizer(completion + tokenizer.eos_token, add_special_tokens=False)["input_ids"]
        assert row["input_ids"] == prompt_ids + completion_ids
        assert row["labels"] == [-100] * len(prompt_ids) + completion_ids


def test_the_warm_start_reports_every_steps_loss_to_dvclive(tmp_path, tiny_policy, examples, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no DVC repository here: DVCLive writes its folder and nothing else
    live = tmp_path / "dvclive" / "warm_start_policy"
    summary = run_warm_start(tiny_policy, examples, tmp_path / "warm", warm_start=WarmStartSettings.from_config(SHORT),
                             seed=0, tracking=Tracking("dvclive", live))
    loss = pd.read_csv(live / "plots" / "metrics" / "loss.tsv", sep="\t")
    assert list(loss["step"]) == [1, 2, 3, 4] and loss["loss"].iloc[0] == pytest.approx(summary["loss_first"])
    assert [e["step"] for e in summary["log"]] == [1, 2, 3, 4]
    assert json.loads((tmp_path / "warm" / RECORD_FILE).read_text()) == json.loads(json.dumps(summary))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dvclive", "warm"]  # no work folder, no lock file


def test_a_killed_warm_start_resumes_from_its_checkpoint_and_matches_an_uninterrupted_run(
        tmp_path, tiny_policy, examples, caplog):
    import torch

    settings = WarmStartSettings.from_config(SHORT)
    fresh = run_warm_start(tiny_policy, examples, tmp_path / "fresh" / "warm", warm_start=settings, seed=0)
    out = tmp_path / "run" / "warm"
    with pytest.raises(Killed):
        run_warm_start(tiny_policy, examples, out, warm_start=settings, seed=0, callbacks=[_KillAtCheckpoint()])
    work = tmp_path / "run" / ".warm.work"
    assert (work / "checkpoint-2" / "trainer_state.json").is_file() and not out.exists()

    with caplog.at_level(logging.INFO, logger="reappraisal.training"):
        summary = run_warm_start(tiny_policy, examples, out, warm_start=settings, seed=0)
    assert f"resuming from {work / 'checkpoint-2'} (step 2)" in [r.getMessage() for r in caplog.records]
    assert summary["resumed_from"] == "checkpoint-2" and summary["steps"] == 4
    assert [(s["start_step"], s["end_step"], s["completed"]) for s in summary["segments"]] == [(0, 2, False), (2, 4, True)]
    assert [e["loss"] for e in summary["log"]] == pytest.approx([e["loss"] for e in fresh["log"]], rel=1e-5)
    assert sorted(p.name for p in out.parent.iterdir()) == ["warm"]
    a, b = _weights(out), _weights(tmp_path / "fresh" / "warm")
    assert a.keys() == b.keys()
    for name in a:
        torch.testing.assert_close(a[name], b[name], atol=1e-5, rtol=1e-4, msg=name)


def test_the_batches_are_seeded_permutations_laid_end_to_end_with_nothing_dropped():
    from reappraisal.policy.warm_start_io import batch_order

    order = batch_order(10, steps=7, batch_size=4, seed=3)
    assert len(order) == 28
    # passes of 10 laid end to end: each pass holds every example once, the third pass runs into the last batch
    assert sorted(order[:10]) == sorted(order[10:20]) == list(range(10)) and len(set(order[20:])) == 8
    assert order[:10] != order[10:20]  # a new permutation each pass
    assert batch_order(10, 7, 4, seed=3) == order and batch_order(10, 7, 4, seed=4) != order


def test_the_learning_rate_warms_up_from_its_first_step_then_stays(tmp_path, tiny_policy, examples):
    settings = WarmStartSettings.from_config({**SHORT, "max_steps": 30, "save_steps": 30, "per_device_train_batch_size": 2})
    summary = run_warm_start(tiny_policy, examples, tmp_path / "warm", warm_start=settings, seed=0)
    rates = [e["learning_rate"] for e in summary["log"]]
    # three warm-up steps (30 // 10): the first step already trains, at a third of the rate
    assert rates[:4] == pytest.approx([1e-3, 2e-3, 3e-3, 3e-3]) and rates[-1] == pytest.approx(3e-3)
