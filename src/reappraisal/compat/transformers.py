"""transformers' insides the package relies on, each seam with what it relies on (checked against transformers
5.23.0).

- The decoding loop's KV cache (:func:`reserved_cache`): ``DynamicLayer`` subclassed, its ``update`` replaced,
  a ``DynamicCache``'s ``layers`` swapped.
- The decoding step's attention mask (:func:`decoding_step_mask`): ``config._attn_implementation`` read, the
  mask transformers builds for SDPA built beforehand.
- The DVCLive reporter (:func:`dvclive_callback`): ``DVCLiveCallback._initialized`` read.

transformers is imported where a seam uses it, not with this module. ``tests/compat/test_transformers.py``
checks every reliance named here against the installed transformers.
"""

from __future__ import annotations

from typing import Any, Callable

from .version_guard import require_tested

#: The transformers every seam here was checked against (requirements.lock and requirements-gpu.lock pin it).
TESTED_VERSION = "5.23.0"
require_tested("transformers", TESTED_VERSION, __name__)


def reserved_cache(model, reserve: int):
    """A ``DynamicCache`` for ``model`` whose layers keep ``reserve`` free positions after the prompt, so a decoding
    step writes its keys and values in place instead of copying the whole cache (``DynamicLayer`` concatenates
    at every step: a truth-draw job of 5,120 answers took 16.5 s with it against 19.1 s without, two at once on
    2 cores). The layers hand attention views of the filled positions, the same numbers ``DynamicLayer`` hands
    it; a model with other layer kinds (sliding windows) gets the plain cache.

    Relies on (transformers 5.23.0): ``DynamicCache(config=...)`` keeps one layer object per decoder layer in its
    ``layers`` list (``DynamicLayer`` for full attention), which it calls for every cache operation and which may
    be replaced; ``DynamicLayer.update(self, key_states, value_states, *args, **kwargs)`` returns the keys and
    values attention uses, after ``lazy_initialization(key_states, value_states)`` on first use
    (``is_initialized``), keeping them as ``self.keys``/``self.values`` of shape ``(batch, heads, positions, dim)``
    that ``get_seq_length``, ``crop`` and the other methods read; ``batch_select_indices(indices)`` keeps rows."""
    import torch
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    class ReservedLayer(DynamicLayer):
        def update(self, key_states, value_states, *args, **kwargs):
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            if self.keys.numel() == 0:
                self._store(key_states, value_states, reserve)
                return self.keys, self.values
            filled, new = self.keys.shape[-2], key_states.shape[-2]
            if filled + new > self._k.shape[-2]:
                self._store(self.keys, self.values, new + reserve)
            self._k[..., filled:filled + new, :] = key_states
            self._v[..., filled:filled + new, :] = value_states
            self.keys, self.values = self._k[..., :filled + new, :], self._v[..., :filled + new, :]
            return self.keys, self.values

        def _store(self, keys, values, spare: int) -> None:
            """Room for ``spare`` more positions after ``keys``/``values``, which are copied in."""
            shape = (*keys.shape[:-2], keys.shape[-2] + spare, keys.shape[-1])
            self._k = torch.empty(shape, dtype=keys.dtype, device=keys.device)
            self._v = torch.empty(shape, dtype=values.dtype, device=values.device)
            n = keys.shape[-2]
            self._k[..., :n, :], self._v[..., :n, :] = keys, values
            self.keys, self.values = self._k[..., :n, :], self._v[..., :n, :]

        def batch_select_indices(self, indices) -> None:
            if self.get_seq_length() > 0:
                n = self.keys.shape[-2]
                self._k, self._v = self._k[indices, ...], self._v[indices, ...]
                self.keys, self.values = self._k[..., :n, :], self._v[..., :n, :]

    cache = DynamicCache(config=model.config)
    if all(type(layer) is DynamicLayer for layer in cache.layers):
        cache.layers = [ReservedLayer() for _ in cache.layers]
    return cache


def decoding_step_mask(model) -> Callable:
    """What a decoding step hands the model for a ``(rows, positions)`` padding mask: where some position is padded,
    the 4D boolean mask transformers would build from it for SDPA, ``(rows, 1, 1, positions)`` (True: attend), when
    the model runs SDPA over full attention only; else the 2D mask itself (unpadded, transformers hands SDPA no mask
    at all, another kernel). A step's one query attends to every unpadded position, so the two are the same mask,
    and the model's outputs are the same bytes; building it here spared a width-64 policy's step 0.12 of its
    0.83 ms of mask building.

    Relies on (transformers 5.23.0): ``config._attn_implementation`` names the attention kernel (``"sdpa"``);
    ``config.layer_types`` (None or one kind per layer) and ``config.sliding_window`` say whether every layer
    attends fully; a 4D boolean mask is handed to SDPA as it is, and for a 2D mask of one query over a cache SDPA
    gets ``mask[:, None, None, :]`` as booleans, or no mask where nothing is padded."""
    config = getattr(model, "config", None)
    full = all(kind == "full_attention" for kind in (getattr(config, "layer_types", None) or ["full_attention"]))
    if getattr(config, "_attn_implementation", None) != "sdpa" or not full or getattr(config, "sliding_window", None):
        return lambda mask: mask
    return lambda mask: mask if bool(mask.all()) else mask.bool()[:, None, None, :]


def dvclive_callback(open_live: Callable[[], Any]):
    """transformers' DVCLive reporter writing into the ``dvclive.Live`` that ``open_live()`` opens (on the main
    process, when it first sets up), at the trainer's global step, logging no model.

    Relies on (transformers 5.23.0): ``DVCLiveCallback(log_model=...)`` keeps its ``Live`` as ``self.live`` (None
    until ``setup(args, state, model)`` opens one, which uses a ``live`` already set) and ``self._initialized``
    (False until ``setup`` runs); ``on_log(self, args, state, control, model=None, logs=None, **kwargs)`` sets up
    when not initialized, logs each value through ``self.live.log_metric`` and calls ``self.live.next_step()``."""
    from transformers.integrations import DVCLiveCallback

    class JobDVCLive(DVCLiveCallback):
        def setup(self, args, state, model):
            if state.is_world_process_zero and self.live is None:
                self.live = open_live()
            super().setup(args, state, model)

        def on_log(self, args, state, control, model=None, logs=None, **kwargs):
            if not self._initialized:
                self.setup(args, state, model)
            if state.is_world_process_zero:
                self.live.step = state.global_step  # not one step per log call: evaluation logs its own
            super().on_log(args, state, control, model=model, logs=logs, **kwargs)

    return JobDVCLive(log_model=False)
