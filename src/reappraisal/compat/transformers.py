"""transformers' insides the package relies on, each seam with what it relies on (checked against transformers
5.23.0).

- The decoding loop's KV cache (:func:`reserved_cache`): ``DynamicLayer`` subclassed, its ``update`` replaced,
  a ``DynamicCache``'s ``layers`` swapped.
- The decoding step's attention mask (:func:`decoding_step_mask`): ``config._attn_implementation`` read, the
  mask transformers builds for SDPA built beforehand.
- The decoding step without the module calls (:func:`lean_decoding_step`): a ``Qwen3ForCausalLM``'s forward
  rerun as its own torch operations on its own weights, with transformers' rotary, cache and SDPA functions.
- A training batch's shared prefix (:func:`prefix_keys_and_values`, :func:`cache_of_rows`,
  :func:`attention_kernel`): the decoder stack's ``past_key_values`` read, a ``DynamicCache`` filled with
  expanded keys and values, ``config._attn_implementation`` read.
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


def lean_decoding_step(model) -> Callable | None:
    """``step(input_ids, attention_mask, position_ids, cache) -> logits`` of the last position, ``(rows, vocab)``:
    what ``model(input_ids=..., attention_mask=..., position_ids=..., past_key_values=cache, use_cache=True,
    logits_to_keep=1).logits[:, -1, :]`` returns, byte for byte, for a decoding step (one new position per row;
    the mask 2D over the whole cache, or 4D as :func:`decoding_step_mask` builds it); ``None`` where the model
    is not the plain case below, and the caller calls the model.

    A decoding step of a tiny model is mostly Python: ``Qwen3ForCausalLM.__call__`` goes through transformers'
    output-capturing and config-merging wrappers, a causal-mask builder, and about 40 module calls per layer, each
    with its hooks' bookkeeping; the arithmetic of a width-64 policy's step over 8 rows was about a fifth of its
    1.1 ms. :func:`lean_decoding_step` returns a function that runs the same step as the same torch operations on
    the same tensors in the same order (the same kernels, so the same bytes: a test compares the logits with the
    model's at every step, padded and unpadded, greedy decoding over many steps) and skips the rest. It is offered
    only where that holds: a plain ``Qwen3ForCausalLM`` (no subclass, no hooks) with SDPA over full attention, the
    default rotary embedding and no attention dropout in play; anything else gets ``None`` and the caller calls the
    model.

    Relies on (transformers 5.23.0), all read from ``transformers.models.qwen3.modeling_qwen3``:
    ``Qwen3ForCausalLM.forward`` is ``lm_head(model(...).last_hidden_state[:, -logits_to_keep:])``;
    ``Qwen3Model.forward`` embeds the ids (``embed_tokens``), takes ``rotary_emb(hidden, position_ids)``, hands a 4D
    mask to every layer as it is (``masking_utils``: a 4D mask is returned as is; a one-query step over an unpadded
    cache gets no mask), runs ``layers`` and ``norm``; ``Qwen3DecoderLayer.forward`` is
    ``h + self_attn(input_layernorm(h))`` then ``h + mlp(post_attention_layernorm(h))``; ``Qwen3Attention.forward``
    is ``q_norm(q_proj(x).view(..., -1, head_dim)).transpose(1, 2)`` (and ``k``; ``v`` without norm),
    ``apply_rotary_pos_emb(q, k, cos, sin)``, ``past_key_values.update(k, v, layer_idx)``, the attention interface of
    ``config._attn_implementation`` called with ``dropout=0.0`` (outside training), ``scaling`` and
    ``sliding_window``, then ``o_proj`` of the output reshaped to ``(*input_shape, -1)``; ``Qwen3RMSNorm.forward``
    is ``weight * (x.float() * rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps)).to(dtype)``;
    ``Qwen3MLP.forward`` is ``down_proj(act_fn(gate_proj(x)) * up_proj(x))``."""
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward
    from transformers.models.qwen3 import modeling_qwen3 as qwen3

    if type(model) is not qwen3.Qwen3ForCausalLM:
        return None
    config = model.config
    kinds = getattr(config, "layer_types", None) or ["full_attention"]
    inner = model.model
    full = all(kind == "full_attention" for kind in kinds) and not getattr(config, "sliding_window", None)
    if config._attn_implementation != "sdpa" or not full:
        return None
    if getattr(inner.rotary_emb, "rope_type", None) != "default" or len(inner.layers) != config.num_hidden_layers:
        return None
    if model.training and config.attention_dropout:
        return None
    hooks = torch.nn.modules.module
    if hooks._global_forward_hooks or hooks._global_forward_pre_hooks or any(
            m._forward_hooks or m._forward_pre_hooks or hasattr(m, "_hf_hook") for m in model.modules()):
        return None

    linear, embedding = torch.nn.functional.linear, torch.nn.functional.embedding
    rotary = qwen3.apply_rotary_pos_emb

    def norm(x, weight, eps):
        dtype = x.dtype
        x = x.to(torch.float32)
        variance = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(variance + eps)
        return weight * x.to(dtype)

    def weights(norm_module):
        return norm_module.weight, norm_module.variance_epsilon

    # The tensors themselves, looked up once (an optimizer updates them in place): a module's attribute lookup
    # costs about as much as a small operation here.
    layers = [(i, attn, weights(layer.input_layernorm), weights(layer.post_attention_layernorm),
               weights(attn.q_norm), weights(attn.k_norm), attn.head_dim, attn.scaling,
               (attn.q_proj.weight, attn.q_proj.bias), (attn.k_proj.weight, attn.k_proj.bias),
               (attn.v_proj.weight, attn.v_proj.bias), (attn.o_proj.weight, attn.o_proj.bias), layer.mlp.act_fn,
               layer.mlp.gate_proj.weight, layer.mlp.up_proj.weight, layer.mlp.down_proj.weight)
              for i, layer in enumerate(inner.layers) for attn in [layer.self_attn]]
    embed, padding_idx, rotary_emb = inner.embed_tokens.weight, inner.embed_tokens.padding_idx, inner.rotary_emb
    final_norm, head = weights(inner.norm), (model.lm_head.weight, model.lm_head.bias)

    def step(input_ids, attention_mask, position_ids, cache):
        mask = attention_mask
        if mask is not None and mask.dim() == 2:  # what transformers makes of it for one query over the cache
            mask = None if bool(mask.all()) else mask.bool()[:, None, None, :]
        hidden = embedding(input_ids, embed, padding_idx)
        cos, sin = rotary_emb(hidden, position_ids)
        for i, attn, in_norm, post_norm, q_norm, k_norm, head_dim, scaling, q_w, k_w, v_w, o_w, act, gate, up, down in layers:
            x = norm(hidden, *in_norm)
            shape = (*x.shape[:-1], -1, head_dim)
            q = norm(linear(x, *q_w).view(shape), *q_norm).transpose(1, 2)
            k = norm(linear(x, *k_w).view(shape), *k_norm).transpose(1, 2)
            v = linear(x, *v_w).view(shape).transpose(1, 2)
            q, k = rotary(q, k, cos, sin)
            k, v = cache.update(k, v, i)
            out, _ = sdpa_attention_forward(attn, q, k, v, mask, dropout=0.0, scaling=scaling, sliding_window=None)
            hidden = hidden + linear(out.reshape(*x.shape[:-1], -1).contiguous(), *o_w)
            x = norm(hidden, *post_norm)
            hidden = hidden + linear(act(linear(x, gate)) * linear(x, up), down)
        hidden = norm(hidden, *final_norm)
        return linear(hidden[:, -1:, :], *head)[:, -1, :]

    return step


def attention_kernel(model) -> str | None:
    """The attention kernel ``model`` runs (``"sdpa"``, ``"eager"``, ``"flash_attention_2"``...), None if unknown.

    Relies on (transformers 5.23.0): ``config._attn_implementation`` names it."""
    return getattr(getattr(model, "config", None), "_attn_implementation", None)


def prefix_keys_and_values(model, prefix_ids, attention_mask=None) -> list[tuple[Any, Any]]:
    """Each decoder layer's keys and values of the prefixes ``prefix_ids`` ``(prefixes, positions)`` (unpadded, or
    padded as ``attention_mask`` says), as the model's own forward computes them (with their autograd graph when
    gradients are on), for :func:`cache_of_rows`.

    Relies on (transformers 5.23.0): ``model.base_model`` is the decoder stack, which returns its
    ``past_key_values`` (a ``DynamicCache``) for ``use_cache=True``; its ``layers`` hold ``keys``/``values`` of
    shape ``(batch, heads, positions, dim)``."""
    import torch

    mask = torch.ones_like(prefix_ids) if attention_mask is None else attention_mask
    cache = model.base_model(input_ids=prefix_ids, attention_mask=mask, use_cache=True).past_key_values
    return [(layer.keys, layer.values) for layer in cache.layers]


def cache_of_rows(model, prefix: list[tuple[Any, Any]], rows):
    """A new ``DynamicCache`` holding ``prefix`` (:func:`prefix_keys_and_values`) for each row: one prefix for
    ``rows`` rows (an int), or row ``i`` the prefix ``rows[i]`` (a tensor of prefix indices). A model called with
    it and the rest of each row reads the prefix's keys and values as if it had computed them for every row, and
    the gradient of every row flows back to the one computation (``expand`` or ``index_select``, then
    ``DynamicCache.update``'s concatenation).

    Relies on (transformers 5.23.0): ``DynamicCache(config=...)`` has one layer per decoder layer and
    ``update(keys, values, layer_idx)`` appends to layer ``layer_idx``; the decoder reads the cache's length as
    the positions already seen (the rows' positions and causal mask start after the prefix)."""
    from transformers import DynamicCache

    def of_rows(states):
        return states.expand(rows, -1, -1, -1) if isinstance(rows, int) else states.index_select(0, rows)

    cache = DynamicCache(config=model.config)
    for index, (keys, values) in enumerate(prefix):
        cache.update(of_rows(keys), of_rows(values), index)
    return cache


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
