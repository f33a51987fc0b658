"""Sampled generation draws from the tempered (nucleus-filtered) softmax, reproducibly per seed."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from reappraisal.batched_generation import sampling_processors

LOGITS = torch.tensor([[2.0, 1.0, 0.0, -1.0, -3.0]], dtype=torch.float32)


def _draws(n: int, temperature: float, top_p: float, seed: int) -> np.ndarray:
    processors = sampling_processors(temperature, top_p, torch.Generator().manual_seed(seed))
    scores = processors(torch.zeros((n, 1), dtype=torch.long), LOGITS.expand(n, -1).clone())
    assert torch.isfinite(scores).sum(dim=-1).eq(1).all()  # one finite score per row: greedy search takes it
    return scores.argmax(dim=-1).numpy()


def _expected(temperature: float, top_p: float) -> np.ndarray:
    p = torch.softmax(LOGITS[0] / temperature, dim=-1).double().numpy()
    order = np.argsort(-p)
    keep = np.zeros_like(p, dtype=bool)
    cumulative = 0.0
    for i in order:  # the smallest set of most likely tokens whose mass reaches top_p
        keep[i] = True
        cumulative += p[i]
        if cumulative >= top_p:
            break
    p = np.where(keep, p, 0.0)
    return p / p.sum()


@pytest.mark.parametrize("temperature,top_p", [(1.0, 1.0), (0.7, 1.0), (1.3, 0.8)])
def test_the_draws_follow_the_tempered_filtered_softmax(temperature, top_p):
    n = 40_000
    drawn = _draws(n, temperature, top_p, seed=3)
    expected = _expected(temperature, top_p)
    freq = np.bincount(drawn, minlength=len(expected)) / n
    sd = np.sqrt(expected * (1 - expected) / n)
    assert np.all(np.abs(freq - expected) <= 4.5 * sd + 1e-12), (freq, expected)
    assert np.all(freq[expected == 0] == 0)  # a filtered token is never drawn


def test_a_seed_gives_the_same_draws_and_another_seed_others():
    assert np.array_equal(_draws(500, 0.7, 1.0, seed=11), _draws(500, 0.7, 1.0, seed=11))
    assert not np.array_equal(_draws(500, 0.7, 1.0, seed=11), _draws(500, 0.7, 1.0, seed=12))


# ------------------------------------------------------------ the decoding loop against transformers' generate

def _generate_reference(model, tokenizer, prompts, *, max_new_tokens, batch_size, temperature=0.0, seed=0):
    """``model.generate`` over the same sorted, left-padded batches (finished rows fed padding to the end)."""
    from transformers import GenerationConfig

    from reappraisal.batched_generation import prepare_for_batches, stop_token_ids

    prepare_for_batches(tokenizer)
    stop = stop_token_ids(model, tokenizer)
    config = GenerationConfig(do_sample=False, max_new_tokens=max_new_tokens, pad_token_id=tokenizer.pad_token_id,
                              eos_token_id=stop)
    encoded = tokenizer(list(prompts), add_special_tokens=False)["input_ids"]
    order = sorted(range(len(prompts)), key=lambda i: -len(encoded[i]))
    out = [None] * len(prompts)
    for b, start in enumerate(range(0, len(order), batch_size)):
        idx = order[start:start + batch_size]
        batch = tokenizer.pad({"input_ids": [encoded[i] for i in idx]}, padding=True, return_tensors="pt")
        processors = (sampling_processors(temperature, 1.0, torch.Generator().manual_seed(seed + b))
                      if temperature > 0 else None)
        with torch.inference_mode():
            generated = model.generate(**batch, generation_config=config, logits_processor=processors)
        for i, row in zip(idx, generated[:, batch["input_ids"].shape[1]:].tolist()):
            ended = next((j for j, t in enumerate(row) if t in stop), None)
            out[i] = row[: ended + 1] if ended is not None else row
    return out


@pytest.fixture(scope="module")
def policy_with_frequent_stops(tmp_path_factory):
    """A tiny random-init policy whose stop tokens are three tokens it often emits, so rows end at many steps."""
    from reappraisal.evaluation.generation import load_generator, render_prompts
    from reappraisal.policy.prompts import build_messages
    from tests.policy.fakes import SCENARIOS, build_tiny_policy

    model, tokenizer = load_generator(str(build_tiny_policy(tmp_path_factory.mktemp("policy") / "model")))
    scenarios = [text for text, _ in SCENARIOS.values()]
    prompts = render_prompts(tokenizer, [build_messages(s) for s in scenarios * 4])
    with torch.no_grad():  # sharper weights: a random init's greedy path is one token repeated whatever the prompt
        for weight in model.parameters():
            if weight.ndim == 2:
                weight.mul_(20.0)
    sampled = _generate_reference(model, tokenizer, prompts, max_new_tokens=24, batch_size=8, temperature=1.0, seed=5)
    greedy = _generate_reference(model, tokenizer, prompts, max_new_tokens=24, batch_size=8)
    counts = np.bincount(np.concatenate([np.asarray(r[1:]) for r in sampled + greedy]))
    model.generation_config.eos_token_id = [int(t) for t in np.argsort(-counts)[:3]]
    return model, tokenizer, prompts


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_the_pruning_loop_gives_the_tokens_generate_gives_greedy_and_sampled(policy_with_frequent_stops, temperature):
    from reappraisal.batched_generation import generate_token_ids

    model, tokenizer, prompts = policy_with_frequent_stops
    got = generate_token_ids(model, tokenizer, prompts, max_new_tokens=24, batch_size=8, temperature=temperature,
                             seed=7)
    expected = _generate_reference(model, tokenizer, prompts, max_new_tokens=24, batch_size=8,
                                   temperature=temperature, seed=7)
    assert [g.ids for g in got] == expected
    lengths = [len(g.ids) for g in got]
    assert len(set(lengths)) >= 3 and min(lengths) < 24  # rows left their batches at different steps
    assert [g.stopped for g in got] == [bool(r) and r[-1] in model.generation_config.eos_token_id for r in expected]


def test_a_repeated_prompt_is_read_once_and_its_rows_keep_their_order():
    from reappraisal.batched_generation import distinct_prompts

    ids = torch.tensor([[0, 5, 6], [1, 2, 3], [0, 5, 6], [1, 2, 3], [0, 0, 7]])
    mask = torch.tensor([[0, 1, 1], [1, 1, 1], [0, 1, 1], [1, 1, 1], [0, 0, 1]])
    distinct, copies = distinct_prompts(ids, mask)
    assert len(distinct) == 3 and sorted(distinct.tolist()) == [0, 1, 4]  # each prompt's first row
    assert torch.equal(ids[distinct][copies], ids) and torch.equal(mask[distinct][copies], mask)
    assert distinct_prompts(ids[[0, 1, 4]], mask[[0, 1, 4]]) == (None, None)  # nothing repeats: the plain path


def test_the_fixture_batches_repeat_prompts_so_the_shared_prompt_path_is_compared(policy_with_frequent_stops):
    from reappraisal.batched_generation import distinct_prompts

    _, tokenizer, prompts = policy_with_frequent_stops
    encoded = sorted(tokenizer(list(prompts), add_special_tokens=False)["input_ids"], key=lambda e: -len(e))
    batch = tokenizer.pad({"input_ids": encoded[:8]}, padding=True, return_tensors="pt")
    distinct, _ = distinct_prompts(batch["input_ids"], batch["attention_mask"])
    assert distinct is not None and len(distinct) < 8


# ------------------------------------------------------------ prompts that share long prefixes (a judge's)

def test_rows_sharing_prefixes_are_grouped_and_each_row_keeps_a_token_after_its_prefix():
    from reappraisal.batched_generation import plan_shared_prefixes

    instruction, first, second = list(range(100, 200)), list(range(400, 460)), list(range(500, 560))
    rows = [instruction + first + answer for answer in ([7, 8], [9], [7, 8, 9, 10])]
    rows += [instruction + second + answer for answer in ([7], [8, 8])]
    plan = plan_shared_prefixes(rows)
    assert plan is not None
    assert sorted(sorted(g) for g in plan.groups) == [[0, 1, 2], [3, 4]]  # one group per scenario
    for members, length in zip(plan.groups, plan.lengths):
        assert all(rows[i][:length] == rows[members[0]][:length] for i in members)
        assert all(len(rows[i]) > length for i in members)
    assert sorted(plan.lengths) == [160, 160]  # the instruction and the scenario


def test_a_split_that_saves_little_or_nothing_is_not_made():
    from reappraisal.batched_generation import plan_shared_prefixes

    assert plan_shared_prefixes([[1, 2, 3], [4, 5, 6]]) is None  # nothing shared
    assert plan_shared_prefixes([[1, 2, 3, 4], [1, 2, 3, 5]]) is None  # shared, but a second pass costs more
    assert plan_shared_prefixes([[1] * 300]) is None


def test_prompts_sharing_a_long_prefix_are_read_in_two_passes_and_decode_as_generate_does(policy_with_frequent_stops):
    from reappraisal.batched_generation import generate_token_ids, plan_shared_prefixes

    model, tokenizer, prompts = policy_with_frequent_stops
    instruction = " ".join(["Compare the two reappraisals of this scenario and say which helps more."] * 4)
    judged = [f"{instruction} {p} A: {a}" for p in prompts[:3] for a in ("maybe they forgot", "it could pass",
                                                                        "they were busy and tired today")]
    encoded = tokenizer(judged, add_special_tokens=False)["input_ids"]
    assert plan_shared_prefixes(encoded) is not None  # the two-pass prefill is what is compared
    for temperature in (0.0, 1.0):
        got = generate_token_ids(model, tokenizer, judged, max_new_tokens=24, batch_size=16,
                                 temperature=temperature, seed=3)
        expected = _generate_reference(model, tokenizer, judged, max_new_tokens=24, batch_size=16,
                                       temperature=temperature, seed=3)
        assert [g.ids for g in got] == expected


def test_a_decoding_step_given_the_prebuilt_mask_computes_the_same_bytes(policy_with_frequent_stops):
    from reappraisal.batched_generation import prefill
    from reappraisal.compat.transformers import decoding_step_mask, reserved_cache

    model, tokenizer, prompts = policy_with_frequent_stops
    batch = tokenizer.pad({"input_ids": tokenizer(prompts[:6], add_special_tokens=False)["input_ids"]},
                          padding=True, return_tensors="pt")
    assert int((batch["attention_mask"] == 0).sum()) > 0  # padded rows: the mask matters
    step_mask = decoding_step_mask(model)
    logits = []
    for given in (lambda m: m, step_mask):
        cache = reserved_cache(model, 4)
        with torch.inference_mode():
            first, mask = prefill(model, batch["input_ids"], batch["attention_mask"], cache)
            mask = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=1)
            out = model(input_ids=first.argmax(-1)[:, None], attention_mask=given(mask),
                        position_ids=mask.sum(-1, keepdim=True) - 1, past_key_values=cache, use_cache=True)
        logits.append(out.logits)
    assert step_mask(mask).ndim == 4  # the prebuilt path is the one compared
    assert torch.equal(logits[0], logits[1])


def test_models_whose_mask_is_not_plain_sdpa_get_the_padding_mask_as_it_is():
    from types import SimpleNamespace

    from reappraisal.compat.transformers import decoding_step_mask

    mask = torch.ones((2, 5), dtype=torch.long)
    for config in (SimpleNamespace(_attn_implementation="eager", layer_types=None, sliding_window=None),
                   SimpleNamespace(_attn_implementation="sdpa", layer_types=["sliding_attention"], sliding_window=4),
                   SimpleNamespace(_attn_implementation="flash_attention_2", layer_types=None, sliding_window=None)):
        assert decoding_step_mask(SimpleNamespace(config=config))(mask) is mask


def test_an_unpadded_decoding_step_keeps_the_mask_free_kernel(policy_with_frequent_stops):
    """Without padding transformers hands SDPA no mask, whose kernel rounds otherwise than a masked one's."""
    from reappraisal.compat.transformers import decoding_step_mask, reserved_cache

    model, tokenizer, prompts = policy_with_frequent_stops
    ids = torch.tensor([tokenizer(prompts[0], add_special_tokens=False)["input_ids"]] * 3)
    ids[1:, -1] = ids[0, -2]  # distinct rows of one length: no padding
    mask = torch.ones_like(ids)
    step_mask = decoding_step_mask(model)
    logits = []
    for given in (lambda m: m, step_mask):
        cache = reserved_cache(model, 4)
        with torch.inference_mode():
            first = model(input_ids=ids, attention_mask=mask, past_key_values=cache, use_cache=True).logits[:, -1]
            full = torch.cat([mask, mask.new_ones((3, 1))], dim=1)
            out = model(input_ids=first.argmax(-1)[:, None], attention_mask=given(full),
                        position_ids=full.sum(-1, keepdim=True) - 1, past_key_values=cache, use_cache=True)
        logits.append(out.logits)
    assert torch.equal(logits[0], logits[1])
