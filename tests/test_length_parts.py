"""An SFT batch trained in length-sorted parts has the whole batch's loss, gradient and logged metrics."""

from __future__ import annotations

import pytest
import torch

from reappraisal.training.length_parts import PART_COST, length_parts


def _padded_positions(lengths, groups) -> int:
    return sum(len(g) * max(lengths[i] for i in g) for g in groups)


@pytest.mark.parametrize("lengths", [[173, 351, 240, 198, 300, 222, 180, 260], [12, 300, 15, 290, 11, 310],
                                     [100] * 8, [5, 400]])
def test_parts_cover_every_row_once_in_length_order_and_never_cost_more(lengths):
    groups = length_parts(lengths)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    flat = [i for g in groups for i in g]
    assert [lengths[i] for i in flat] == sorted(lengths, reverse=True)  # consecutive runs of the sorted rows
    whole = len(lengths) * max(lengths) + PART_COST
    assert _padded_positions(lengths, groups) + PART_COST * len(groups) <= whole


def test_equal_lengths_stay_one_batch_and_two_length_clusters_split():
    assert length_parts([100] * 8) == [list(range(8))]
    groups = length_parts([12, 300, 15, 290, 11, 310])
    assert sorted(map(sorted, groups)) == [[0, 2, 4], [1, 3, 5]]


@pytest.fixture(scope="module")
def sft_batch(tmp_path_factory):
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    from tests.policy.fakes import SCENARIOS, build_tiny_policy

    model_dir = build_tiny_policy(tmp_path_factory.mktemp("policy") / "model")
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    texts = [text for text, _ in SCENARIOS.values()]
    data = Dataset.from_dict({
        "prompt": [" ".join([t] * (1 + i % 3)) for i, t in enumerate(texts * 2)][:8],  # one to three times as long
        "completion": [" Maybe they were busy." if i % 2 else " It could pass soon enough." for i in range(8)],
    })
    args = SFTConfig(output_dir=str(tmp_path_factory.mktemp("out")), per_device_train_batch_size=8, max_steps=1,
                     use_cpu=True, report_to=[], disable_tqdm=True, seed=0, bf16=False)  # the pipeline's precision on a CPU
    model = AutoModelForCausalLM.from_pretrained(str(model_dir))
    trainer = SFTTrainer(model=model, args=args, train_dataset=data, processing_class=tokenizer)
    batch = next(iter(trainer.get_train_dataloader()))
    return model, args, data, tokenizer, batch


def _loss_grads_metrics(trainer_cls, sft_batch, tmp_path):
    from trl import SFTTrainer  # noqa: F401  (the class under test wraps it)

    from reappraisal.compat.trl import train_metrics

    model, args, data, tokenizer, batch = sft_batch
    trainer = trainer_cls(model=model, args=args, train_dataset=data, processing_class=tokenizer)
    model.train()
    model.zero_grad()
    n = int((batch["labels"][..., 1:] != -100).sum())
    loss = trainer.compute_loss(model, dict(batch), num_items_in_batch=n)
    loss.backward()
    grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    metrics = {k: list(v) for k, v in train_metrics(trainer).items()}
    return loss.detach(), grads, metrics


def test_the_parts_give_the_batch_loss_gradient_and_metrics(sft_batch, tmp_path):
    from trl import SFTTrainer

    from reappraisal.training.length_parts import _right_padded_lengths, in_length_parts

    *_, batch = sft_batch
    lengths = _right_padded_lengths(batch["attention_mask"])
    assert lengths is not None and len(length_parts(lengths)) >= 2  # the batch is split: the split is what is compared
    loss, grads, metrics = _loss_grads_metrics(SFTTrainer, sft_batch, tmp_path)
    loss_p, grads_p, metrics_p = _loss_grads_metrics(in_length_parts(SFTTrainer), sft_batch, tmp_path)
    assert torch.allclose(loss_p, loss, rtol=1e-6, atol=0)
    assert grads.keys() == grads_p.keys()
    for name, grad in grads.items():
        assert torch.allclose(grads_p[name], grad, rtol=1e-4, atol=1e-7), name
    for key in ("entropy", "mean_token_accuracy", "num_tokens"):
        assert len(metrics_p[key]) == len(metrics[key]) == 1, key  # one value for the step, pooled over the parts
        assert metrics_p[key][0] == pytest.approx(metrics[key][0], rel=1e-6), key
