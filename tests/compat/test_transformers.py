"""What ``reappraisal.compat.transformers`` relies on still holds for the installed transformers."""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import pytest
import torch
from transformers import DynamicCache, Qwen3Config, Qwen3ForCausalLM
from transformers.cache_utils import DynamicLayer
from transformers.integrations import DVCLiveCallback

from reappraisal.compat.transformers import (attention_kernel, cache_of_rows, decoding_step_mask, dvclive_callback,
                                             lean_decoding_step, prefix_keys_and_values, reserved_cache)


def _parameters(function) -> list[str]:
    return [f"{p.kind.name}:{p.name}" for p in inspect.signature(function).parameters.values()]


@pytest.fixture(scope="module")
def tiny_model():
    config = Qwen3Config(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
                         num_key_value_heads=1, head_dim=8, max_position_embeddings=64)
    torch.manual_seed(0)
    return Qwen3ForCausalLM(config).eval()


# -- The KV cache ------------------------------------------------------------------------------------------------


def test_dynamic_layer_keeps_the_interface_the_reserved_layer_replaces():
    assert _parameters(DynamicLayer.update) == ["POSITIONAL_OR_KEYWORD:self", "POSITIONAL_OR_KEYWORD:key_states",
                                                "POSITIONAL_OR_KEYWORD:value_states", "VAR_POSITIONAL:args",
                                                "VAR_KEYWORD:kwargs"]
    assert _parameters(DynamicLayer.lazy_initialization) == ["POSITIONAL_OR_KEYWORD:self",
                                                             "POSITIONAL_OR_KEYWORD:key_states",
                                                             "POSITIONAL_OR_KEYWORD:value_states"]
    layer = DynamicLayer()
    assert layer.is_initialized is False
    layer.update(torch.zeros(1, 1, 2, 4), torch.zeros(1, 1, 2, 4))
    assert layer.is_initialized and layer.keys.shape == (1, 1, 2, 4) and layer.get_seq_length() == 2


def test_a_full_attention_models_cache_is_reserved_and_gives_dynamic_layers_numbers(tiny_model):
    """The cache's ``layers`` are swapped (a cache of ``DynamicLayer`` for full attention) and, through
    ``DynamicCache.update`` and ``batch_select_indices``, hand attention what plain layers hand it."""
    plain, reserved = DynamicCache(config=tiny_model.config), reserved_cache(tiny_model, 3)
    assert [type(layer) for layer in plain.layers] == [DynamicLayer, DynamicLayer]
    assert [type(layer).__name__ for layer in reserved.layers] == ["ReservedLayer", "ReservedLayer"]
    generator = torch.Generator().manual_seed(0)
    steps = [4, 1, 1, "select", 1, 1, 1, 1, 2]  # past the reserve: the layer grows
    for step in steps:
        if step == "select":
            for cache in (plain, reserved):
                cache.batch_select_indices(torch.tensor([2, 0]))
            continue
        rows = plain.layers[0].keys.shape[0] if plain.get_seq_length() else 3
        k, v = (torch.randn(rows, 1, step, 8, generator=generator) for _ in range(2))
        for idx in range(2):
            got = reserved.update(k, v, layer_idx=idx)
            expected = plain.update(k, v, layer_idx=idx)
            assert torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1])
    assert reserved.get_seq_length() == plain.get_seq_length() == 12


def test_another_layer_kind_keeps_the_plain_cache():
    config = Qwen3Config(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
                         num_key_value_heads=1, head_dim=8, use_sliding_window=True, sliding_window=4,
                         max_window_layers=0, layer_types=["sliding_attention", "sliding_attention"])
    cache = reserved_cache(SimpleNamespace(config=config), 3)
    assert all(type(layer) is not DynamicLayer and type(layer).__name__ != "ReservedLayer" for layer in cache.layers)


# -- The decoding step's mask ------------------------------------------------------------------------------------


def test_a_model_names_its_attention_kernel_where_the_mask_is_chosen(tiny_model):
    """``config._attn_implementation`` is "sdpa" for a model built on CPU, and the full-attention check reads
    ``layer_types``: the prebuilt mask is used (``tests/test_batched_generation.py`` compares the bytes)."""
    assert tiny_model.config._attn_implementation == "sdpa"
    assert set(tiny_model.config.layer_types) == {"full_attention"} and not tiny_model.config.sliding_window
    mask = torch.tensor([[0, 1, 1], [1, 1, 1]])
    assert decoding_step_mask(tiny_model)(mask).shape == (2, 1, 1, 3)


# -- A training batch's shared prefix ----------------------------------------------------------------------------


@pytest.mark.parametrize("padded", [False, True], ids=["equal-rows", "right-padded"])
def test_a_prefix_run_once_gives_every_row_the_model_s_own_outputs_and_gradient(tiny_model, padded):
    """The decoder stack hands its ``past_key_values``; a cache of its keys and values expanded to every row, with
    the rows' rest and the whole mask, gives the logits and the gradient of the model called on the whole rows
    (the positions after the prefix; the order of sums aside)."""
    assert attention_kernel(tiny_model) == "sdpa" and attention_kernel(object()) is None
    generator = torch.Generator().manual_seed(0)
    prefix = torch.randint(0, 32, (1, 5), generator=generator)
    rows = torch.cat([prefix.expand(3, -1), torch.randint(0, 32, (3, 4), generator=generator)], dim=1)
    mask = torch.ones_like(rows)
    if padded:
        mask[1, 7:] = 0
        mask[2, 8:] = 0
    results = []
    for shared in (False, True):
        tiny_model.zero_grad()
        if shared:
            keys_values = prefix_keys_and_values(tiny_model, prefix)
            assert len(keys_values) == 2 and keys_values[0][0].shape == (1, 1, 5, 8)
            cache = cache_of_rows(tiny_model, keys_values, 3)
            assert cache.get_seq_length() == 5 and cache.layers[0].keys.shape == (3, 1, 5, 8)
            logits = tiny_model(input_ids=rows[:, 5:], attention_mask=mask, past_key_values=cache).logits
        else:
            logits = tiny_model(input_ids=rows, attention_mask=mask).logits[:, 5:]
        (logits * mask[:, 5:, None]).sum().backward()
        results.append((logits.detach(), {n: p.grad.clone() for n, p in tiny_model.named_parameters()}))
    tiny_model.zero_grad(set_to_none=True)
    (whole, grads), (cut, grads_cut) = results
    assert torch.allclose(cut * mask[:, 5:, None], whole * mask[:, 5:, None], rtol=1e-5, atol=1e-6)
    for name, grad in grads.items():
        assert torch.allclose(grads_cut[name], grad, rtol=1e-4, atol=1e-6), name


# -- The decoding step without module calls ----------------------------------------------------------------------


def _steps_both_ways(model, input_ids, attention_mask, steps: int, drop_at: int, prebuilt: bool):
    """Greedy decoding from one prefill, each step through the model and through the lean step on two caches:
    the two logits of every step; at ``drop_at`` the first row leaves both caches (as finished rows do). The
    steps get the decoding loop's prebuilt mask or the plain 2D padding mask."""
    lean = lean_decoding_step(model)
    step_mask = decoding_step_mask(model) if prebuilt else (lambda mask: mask)
    assert lean is not None
    caches = [reserved_cache(model, steps), reserved_cache(model, steps)]
    positions = (attention_mask.cumsum(-1) - 1).clamp(min=0)
    with torch.inference_mode():
        first = [model(input_ids=input_ids, attention_mask=attention_mask, position_ids=positions, past_key_values=c,
                       use_cache=True, logits_to_keep=1).logits[:, -1, :] for c in caches]
        assert torch.equal(first[0], first[1])
        logits, mask, pairs = first[0], attention_mask, []
        for step in range(steps):
            if step == drop_at:
                keep = torch.arange(1, logits.shape[0])
                for cache in caches:
                    cache.batch_select_indices(keep)
                logits, mask = logits[keep], mask[keep]
            tokens = logits.argmax(-1)[:, None]
            mask = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=1)
            at = mask.sum(-1, keepdim=True) - 1
            through_model = model(input_ids=tokens, attention_mask=step_mask(mask), position_ids=at,
                                  past_key_values=caches[0], use_cache=True).logits[:, -1, :]
            through_lean = lean(tokens, step_mask(mask), at, caches[1])
            pairs.append((through_model, through_lean))
            logits = through_model
    return pairs


@pytest.mark.parametrize("prebuilt", [True, False])
@pytest.mark.parametrize("padded", [True, False])
def test_the_lean_step_gives_the_models_logits_byte_for_byte_at_every_step(tiny_model, padded, prebuilt):
    """Grouped-query attention, left padding or none, the decoding loop's prebuilt mask or a 2D one, a row leaving
    mid-way: every step's logits are the model's bytes."""
    generator = torch.Generator().manual_seed(1)
    ids = torch.randint(3, 32, (4, 9), generator=generator)
    mask = torch.ones_like(ids)
    if padded:
        mask[1, :3] = mask[3, :5] = 0
    pairs = _steps_both_ways(tiny_model, ids, mask, steps=12, drop_at=5, prebuilt=prebuilt)
    assert all(torch.equal(a, b) for a, b in pairs) and pairs[0][0].shape == (4, 32) and pairs[-1][0].shape == (3, 32)


def test_the_lean_step_is_offered_only_for_a_plain_qwen3_model(tiny_model):
    """A subclass, a hook, another attention kernel, sliding windows or attention dropout while training: the
    caller calls the model."""
    config = tiny_model.config
    assert lean_decoding_step(tiny_model) is not None

    class Wrapped(Qwen3ForCausalLM):
        pass

    assert lean_decoding_step(Wrapped(config)) is None
    hooked = Qwen3ForCausalLM(config).eval()
    handle = hooked.model.layers[0].mlp.register_forward_hook(lambda module, args, out: out)
    assert lean_decoding_step(hooked) is None
    handle.remove()
    assert lean_decoding_step(hooked) is not None
    eager = Qwen3ForCausalLM(Qwen3Config(**{**config.to_dict(), "attn_implementation": "eager"}))
    assert eager.config._attn_implementation == "eager" and lean_decoding_step(eager) is None
    sliding = Qwen3ForCausalLM(Qwen3Config(**{**config.to_dict(), "use_sliding_window": True, "sliding_window": 4,
                                              "max_window_layers": 0,
                                              "layer_types": ["sliding_attention", "sliding_attention"]}))
    assert lean_decoding_step(sliding) is None
    dropout = Qwen3ForCausalLM(Qwen3Config(**{**config.to_dict(), "attention_dropout": 0.1}))
    assert lean_decoding_step(dropout.train()) is None and lean_decoding_step(dropout.eval()) is not None


def test_the_functions_the_lean_step_calls_keep_their_interfaces():
    """The lean step calls transformers' own rotary embedding, SDPA wrapper and cache update with these
    arguments; the model's attention calls the same SDPA wrapper for ``sdpa``."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
    from transformers.models.qwen3 import modeling_qwen3

    assert ALL_ATTENTION_FUNCTIONS["sdpa"] is sdpa_attention_forward
    assert _parameters(sdpa_attention_forward)[:7] == [
        "POSITIONAL_OR_KEYWORD:module", "POSITIONAL_OR_KEYWORD:query", "POSITIONAL_OR_KEYWORD:key",
        "POSITIONAL_OR_KEYWORD:value", "POSITIONAL_OR_KEYWORD:attention_mask", "POSITIONAL_OR_KEYWORD:dropout",
        "POSITIONAL_OR_KEYWORD:scaling"]
    assert _parameters(inspect.unwrap(modeling_qwen3.apply_rotary_pos_emb))[:4] == [
        "POSITIONAL_OR_KEYWORD:q", "POSITIONAL_OR_KEYWORD:k", "POSITIONAL_OR_KEYWORD:cos", "POSITIONAL_OR_KEYWORD:sin"]
    assert _parameters(DynamicCache.update)[:4] == [
        "POSITIONAL_OR_KEYWORD:self", "POSITIONAL_OR_KEYWORD:key_states", "POSITIONAL_OR_KEYWORD:value_states",
        "POSITIONAL_OR_KEYWORD:layer_idx"]


# -- The DVCLive reporter ----------------------------------------------------------------------------------------


class _FakeLive:
    def __init__(self) -> None:
        self.step, self.logged, self.steps, self.params = 0, [], 0, None

    def log_params(self, params) -> None:
        self.params = params

    def log_metric(self, name, value) -> None:
        self.logged.append((self.step, name, value))

    def next_step(self) -> None:
        self.steps += 1


def test_dvclive_callback_sets_up_once_with_the_opened_live_and_logs_at_the_global_step():
    assert DVCLiveCallback(log_model=False)._initialized is False
    assert [p.split(":")[1] for p in _parameters(DVCLiveCallback.setup)] == ["self", "args", "state", "model"]
    assert [p.split(":")[1] for p in _parameters(DVCLiveCallback.on_log)] == ["self", "args", "state", "control",
                                                                             "model", "logs", "kwargs"]
    opened = []
    callback = dvclive_callback(lambda: opened.append(_FakeLive()) or opened[-1])
    args = SimpleNamespace(to_dict=lambda: {"lr": 1})
    for step in (7, 9):
        callback.on_log(args, SimpleNamespace(is_world_process_zero=True, global_step=step), None, logs={"loss": 0.5})
    live = opened[0]
    assert len(opened) == 1 and callback._initialized and callback.live is live and live.params == {"lr": 1}
    assert [step for step, *_ in live.logged] == [7, 9] and live.steps == 2
