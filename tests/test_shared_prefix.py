"""A training batch's common prefix run once: the batch's loss, gradient and logged metrics, at less cost."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from reappraisal.training.shared_prefix import MIN_SHARED, applies, shared_length

#: A judge-like instruction every prompt begins with, then each prompt's own text.
INSTRUCTION = ("You judge cognitive reappraisals. Compare two reappraisals of the same scenario on effectiveness, "
               "reason briefly, then end your reply with the verdict. SCENARIO: ")


def test_the_shared_length_stops_at_the_first_difference_padding_or_counted_label():
    ids = torch.tensor([[5] * 30 + [7, 8, 0], [5] * 30 + [9, 0, 0]])
    mask = torch.tensor([[1] * 33, [1] * 31 + [0, 0]])
    labels = torch.full_like(ids, -100)
    assert shared_length(ids, mask, labels) == 30  # the first position whose tokens differ
    labels[1, 25] = 4  # a label counted at 25 is predicted from position 24: the cut is before it
    assert shared_length(ids, mask, labels) == 25
    labels[1, 25] = -100
    short = mask.clone()
    short[1, 20:] = 0  # a row of 20 tokens: its last one stays in its own pass (a classifier reads it there)
    assert shared_length(ids, short, labels) == 19
    labels[0, MIN_SHARED - 1] = 1
    assert shared_length(ids, mask, labels) == 0  # too few positions to be worth a call of their own
    assert shared_length(ids[:1], mask[:1], torch.full_like(ids[:1], -100)) == 0  # one row shares with nobody


@pytest.fixture(scope="module")
def prefixed_batch(tmp_path_factory):
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    from tests.policy.fakes import SCENARIOS, build_tiny_policy

    model_dir = build_tiny_policy(tmp_path_factory.mktemp("policy") / "model")
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    texts = [text for text, _ in SCENARIOS.values()]
    data = Dataset.from_dict({
        "prompt": [INSTRUCTION + " ".join([t] * (1 + i % 3)) for i, t in enumerate(texts * 2)][:8],
        "completion": [" Maybe they were busy." if i % 2 else " It could pass soon enough." for i in range(8)],
    })
    args = SFTConfig(output_dir=str(tmp_path_factory.mktemp("out")), per_device_train_batch_size=8, max_steps=1,
                     use_cpu=True, report_to=[], disable_tqdm=True, seed=0, bf16=False)  # the pipeline's precision on a CPU
    model = AutoModelForCausalLM.from_pretrained(str(model_dir))
    trainer = SFTTrainer(model=model, args=args, train_dataset=data, processing_class=tokenizer)
    batch = next(iter(trainer.get_train_dataloader()))
    return model, args, data, tokenizer, batch


def _loss_grads_metrics(trainer_cls, prefixed_batch):
    from reappraisal.compat.trl import train_metrics

    model, args, data, tokenizer, batch = prefixed_batch
    trainer = trainer_cls(model=model, args=args, train_dataset=data, processing_class=tokenizer)
    model.train()
    model.zero_grad()
    n = int((batch["labels"][..., 1:] != -100).sum())
    loss = trainer.compute_loss(model, dict(batch), num_items_in_batch=n)
    loss.backward()
    grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    metrics = {k: list(v) for k, v in train_metrics(trainer).items()}
    return trainer, loss.detach(), grads, metrics


def test_the_prefix_run_once_gives_the_batch_loss_gradient_and_metrics(prefixed_batch, monkeypatch):
    from trl import SFTTrainer

    from reappraisal.training import shared_prefix
    from reappraisal.training.length_parts import in_length_parts

    model, *_, batch = prefixed_batch
    shared = shared_length(batch["input_ids"], batch["attention_mask"], batch["labels"])
    assert shared >= 20  # the instruction's tokens
    calls = []
    run_prefix = shared_prefix.run_prefix
    monkeypatch.setattr(shared_prefix, "run_prefix", lambda *a: calls.append(a[2]) or run_prefix(*a))

    _, loss, grads, metrics = _loss_grads_metrics(SFTTrainer, prefixed_batch)
    trainer, loss_p, grads_p, metrics_p = _loss_grads_metrics(in_length_parts(SFTTrainer), prefixed_batch)
    assert applies(trainer, model) and calls == [shared]  # the prefix ran once, for every part of the batch
    assert torch.allclose(loss_p, loss, rtol=1e-6, atol=0)
    assert grads.keys() == grads_p.keys()
    for name, grad in grads.items():
        assert torch.allclose(grads_p[name], grad, rtol=1e-4, atol=1e-7), name
    for key in ("entropy", "mean_token_accuracy", "num_tokens"):
        assert len(metrics_p[key]) == len(metrics[key]) == 1, key
        assert metrics_p[key][0] == pytest.approx(metrics[key][0], rel=1e-6), key


def test_the_prefix_is_not_cut_where_it_is_not_checked(prefixed_batch):
    from trl import SFTTrainer

    model, args, data, tokenizer, _ = prefixed_batch
    trainer = SFTTrainer(model=model, args=args, train_dataset=data, processing_class=tokenizer)
    assert applies(trainer, model)
    model.activation_checkpointing_enable()  # its recomputation would append to the cache twice
    try:
        assert not applies(trainer, model)
    finally:
        model.activation_checkpointing_disable()
    model.config._attn_implementation = "flex_attention"
    try:
        assert not applies(trainer, model)
    finally:
        model.config._attn_implementation = "sdpa"
    autocast = SFTTrainer(model=model, args=dataclasses.replace(args, bf16=True), train_dataset=data,
                          processing_class=tokenizer)
    assert not applies(autocast, model)  # in bf16 the rows' gradients would meet in bf16 at the prefix
