"""GRPO reading each prompt once for its completions: TRL's log-probabilities, entropies and gradient."""

from __future__ import annotations

import inspect

import pytest
import torch


def _grpo(model_dir, tmp_path, trainer_cls, vignettes, bf16=False):
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOConfig

    from reappraisal.policy.prompts import prompt_rows

    args = GRPOConfig(output_dir=str(tmp_path / trainer_cls.__name__), use_cpu=True, num_generations=4,
                      per_device_train_batch_size=8, max_completion_length=12, temperature=0.9, seed=5,
                      report_to=[], max_steps=1, disable_tqdm=True, bf16=bf16)
    rows = prompt_rows(vignettes[vignettes["pool"] == "train"].to_dict("records"))
    return trainer_cls(model=str(model_dir), reward_funcs=[lambda completions, **_: [0.0] * len(completions)],
                       args=args, train_dataset=Dataset.from_list(rows),
                       processing_class=AutoTokenizer.from_pretrained(str(model_dir)))


def _batch(tokenizer, vignettes, generations=4, completion=12):
    """GRPO's rows: two prompts of different lengths, left-padded, each followed by ``generations`` completions
    of different lengths (right-padded)."""
    from reappraisal.policy.prompts import build_messages

    texts = vignettes[vignettes["pool"] == "train"]["text"].tolist()
    texts = [texts[0], texts[0] + " " + texts[1]]
    prompts = [list(tokenizer.apply_chat_template(build_messages(t), tokenize=True, add_generation_prompt=True,
                                                  return_dict=True)["input_ids"]) for t in texts]
    width = max(len(p) for p in prompts)
    gen = torch.Generator().manual_seed(0)
    ids, mask = [], []
    for prompt in prompts:
        for g in range(generations):
            length = completion - 3 * g
            tokens = torch.randint(5, tokenizer.vocab_size, (length,), generator=gen).tolist()
            pad = width - len(prompt)
            ids.append([tokenizer.pad_token_id] * pad + prompt + tokens + [tokenizer.pad_token_id] * (completion - length))
            mask.append([0] * pad + [1] * (len(prompt) + length) + [0] * (completion - length))
    return torch.tensor(ids), torch.tensor(mask), completion


def _scored(trainer, ids, mask, keep):
    model = trainer.model
    model.zero_grad()
    logps, entropies, _ = trainer._get_per_token_logps_and_entropies(model, ids, mask, keep, compute_entropy=True)
    (logps * mask[:, -keep:]).sum().backward()
    grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    return logps.detach(), entropies.detach(), grads


@pytest.mark.parametrize("bf16", [False, True], ids=["float32", "bf16-autocast"])
def test_each_prompt_read_once_gives_trls_logps_entropies_and_gradient(tiny_policy, vignettes, tmp_path,
                                                                       monkeypatch, bf16):
    from trl import GRPOTrainer

    from reappraisal.policy.shared_prompts import with_shared_prompts
    from reappraisal.training import shared_prefix

    ours = _grpo(tiny_policy, tmp_path, with_shared_prompts(GRPOTrainer), vignettes, bf16)
    theirs = _grpo(tiny_policy, tmp_path, GRPOTrainer, vignettes, bf16)
    ids, mask, keep = _batch(ours.processing_class, vignettes)
    assert (mask[:, 0] == 0).any() and (mask[:, -1] == 0).any()  # padding on both sides is exercised
    prefixes = []
    keys_and_values = shared_prefix.prefix_keys_and_values
    monkeypatch.setattr(shared_prefix, "prefix_keys_and_values",
                        lambda model, ids_, mask_: prefixes.append(ids_.shape) or keys_and_values(model, ids_, mask_))

    logps, entropies, grads = _scored(ours, ids, mask, keep)
    # Two distinct prompts, each read once; under bf16 autocast TRL's path (the rows' gradients would meet in bf16).
    assert prefixes == ([] if bf16 else [(2, ids.shape[1] - keep - 1)])
    ref_logps, ref_entropies, ref_grads = _scored(theirs, ids, mask, keep)
    counted = mask[:, -keep:].bool()
    torch.testing.assert_close(logps[counted], ref_logps[counted], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(entropies[counted], ref_entropies[counted], rtol=1e-4, atol=1e-5)
    assert grads.keys() == ref_grads.keys() and len(grads) > 10
    for name, grad in grads.items():
        torch.testing.assert_close(grad, ref_grads[name], rtol=1e-3, atol=1e-5, msg=name)

    # Rows that share no prompt (or too short a one) and chunked calls go through TRL's own path.
    prefixes.clear()
    single = ids[::4], mask[::4]
    torch.testing.assert_close(ours._get_per_token_logps_and_entropies(ours.model, *single, keep)[0],
                               theirs._get_per_token_logps_and_entropies(theirs.model, *single, keep)[0])
    ours._get_per_token_logps_and_entropies(ours.model, ids, mask, keep, batch_size=4)
    assert prefixes == []


def test_the_seam_matches_trls_method():
    """The override keeps TRL's signature (the seam's reliance: reappraisal.compat.trl.with_completion_logps)."""
    from trl import GRPOTrainer

    params = list(inspect.signature(GRPOTrainer._get_per_token_logps_and_entropies).parameters)
    assert params[:8] == ["self", "model", "input_ids", "attention_mask", "logits_to_keep", "batch_size",
                          "compute_entropy", "compute_aux_loss"]
    source = inspect.getsource(GRPOTrainer._get_per_token_logps_and_entropies)
    assert "fused_lm_head=True" in source and "labels[:, :-logits_to_keep] = -100" in source


@pytest.mark.parametrize("kernel", ["flash_attention_2"])
def test_other_attention_kernels_keep_trls_path(tiny_policy, vignettes, tmp_path, kernel):
    from trl import GRPOTrainer

    from reappraisal.policy.shared_prompts import with_shared_prompts
    from reappraisal.training.shared_prefix import completion_logps

    ours = _grpo(tiny_policy, tmp_path, with_shared_prompts(GRPOTrainer), vignettes)
    ids, mask, keep = _batch(ours.processing_class, vignettes)
    ours.model.config._attn_implementation = kernel
    assert completion_logps(ours, ours.model, ids, mask, keep, False) is None
