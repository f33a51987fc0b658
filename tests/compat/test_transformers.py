"""What ``reappraisal.compat.transformers`` relies on still holds for the installed transformers."""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import pytest
import torch
from transformers import DynamicCache, Qwen3Config, Qwen3ForCausalLM
from transformers.cache_utils import DynamicLayer
from transformers.integrations import DVCLiveCallback

from reappraisal.compat.transformers import decoding_step_mask, dvclive_callback, reserved_cache


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
