"""The reward model's batch trained in length-sorted parts, after the rows' common prefix run once, has the batch's
masked MSE and gradient (and the Bradley-Terry model's, TRL's loss and metrics)."""

from __future__ import annotations

import math

import pytest
import torch

from reappraisal.reward.prompts import format_prompt

#: Without a common prefix, and with the card's prompt (its instruction and scenario before every reappraisal).
PREFIXES = pytest.mark.parametrize("prompted", [False, True], ids=["plain", "card-prompt"])


def _prompted(texts, prompted: bool):
    return [format_prompt("Your friend forgot the dinner you planned together.", t) if prompted else t for t in texts]


def _counting_prefix_runs(monkeypatch) -> list[int]:
    from reappraisal.training import shared_prefix

    calls, run = [], shared_prefix.run_prefix
    monkeypatch.setattr(shared_prefix, "run_prefix", lambda *a: calls.append(a[2]) or run(*a))
    return calls


@PREFIXES
def test_the_regression_loss_in_parts_is_the_batch_loss_with_its_gradient(tiny_base, prompted, monkeypatch):
    from transformers import TrainingArguments

    from reappraisal.reward.base_model import load_base
    from reappraisal.reward.train_io import _trainer_class
    from reappraisal.training.batches import pad_right
    from reappraisal.training.length_parts import right_padded_parts

    tokenizer, model = load_base(str(tiny_base), 4, seed=0)
    texts = ["a", "They were busy and forgot about the dinner entirely.", "Maybe", "It will pass.",
             "Perhaps they needed time alone after a long and difficult week at work.", "ok"]
    ids = [tokenizer(t, add_special_tokens=False)["input_ids"] for t in _prompted(texts, prompted)]
    calls = _counting_prefix_runs(monkeypatch)
    labels = torch.tensor([[1.0, 2.0, math.nan, 0.5]] * 3 + [[0.0, math.nan, 1.0, 3.0]] * 3)
    batch = pad_right(ids, tokenizer.pad_token_id)
    assert right_padded_parts(batch["attention_mask"]) is not None  # split: the split is what is compared
    trainer = _trainer_class()(model=model, args=TrainingArguments(output_dir="/tmp/unused", use_cpu=True,
                                                                   report_to=[]))
    results = []
    for training in (False, True):  # eval mode: one forward over the batch; train mode: the parts
        model.train(training)
        model.zero_grad()
        loss = trainer.compute_loss(model, {**batch, "labels": labels.clone()})
        loss.backward()
        results.append((loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}))
    (whole, grads), (parts, grads_p) = results
    assert len(calls) == prompted  # the prompt's common prefix ran once, in the training pass
    assert torch.allclose(parts, whole, rtol=1e-6, atol=0)
    assert grads.keys() == grads_p.keys()
    for name, grad in grads.items():
        assert torch.allclose(grads_p[name], grad, rtol=1e-4, atol=1e-7), name


@PREFIXES
def test_the_bradley_terry_loss_in_parts_is_the_batch_loss_with_its_gradient(tiny_base, tmp_path, prompted,
                                                                              monkeypatch):
    from datasets import Dataset
    from trl import RewardConfig, RewardTrainer

    from reappraisal.reward.bradley_terry_io import load_bt_base
    from reappraisal.training.length_parts import classifier_in_length_parts, right_padded_parts

    tokenizer, model = load_bt_base(str(tiny_base), seed=0)
    chosen = ["They were busy and forgot about the dinner entirely.", "It will pass.", "Maybe",
              "Perhaps they needed time alone after a long and difficult week at work."]
    rejected = ["ok", "They meant to hurt me.", "Nobody cares about me and nobody ever will, I am sure.", "no"]

    def encode(texts):
        return [tokenizer(t, add_special_tokens=False)["input_ids"] for t in _prompted(texts, prompted)]

    data = Dataset.from_dict({"chosen_ids": encode(chosen), "rejected_ids": encode(rejected)})
    args = RewardConfig(output_dir=str(tmp_path), per_device_train_batch_size=4, use_cpu=True, report_to=[],
                        disable_tqdm=True, center_rewards_coefficient=0.01, bf16=False)  # the pipeline's precision on a CPU
    calls = _counting_prefix_runs(monkeypatch)
    results = []
    for trainer_cls in (RewardTrainer, classifier_in_length_parts(RewardTrainer)):
        trainer = trainer_cls(model=model, args=args, train_dataset=data, processing_class=tokenizer)
        batch = next(iter(trainer.get_train_dataloader()))
        assert right_padded_parts(batch["attention_mask"]) is not None  # the split is what is compared
        model.train()
        model.zero_grad()
        loss = trainer.compute_loss(model, dict(batch))
        loss.backward()
        metrics = {k: list(v) for k, v in trainer._metrics["train"].items()}
        results.append((loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None},
                        metrics))
    (whole, grads, metrics), (parts, grads_p, metrics_p) = results
    assert len(calls) == prompted  # the prompt's common prefix ran once, in the training pass
    assert torch.allclose(parts, whole, rtol=1e-6, atol=0)
    for name, grad in grads.items():
        assert torch.allclose(grads_p[name], grad, rtol=1e-4, atol=1e-7), name
    for key in ("accuracy", "margin", "mean_reward", "num_tokens"):
        assert metrics_p[key] == pytest.approx(metrics[key], rel=1e-5), key
