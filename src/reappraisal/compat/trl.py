"""TRL's insides the package relies on, each seam with what it relies on (checked against trl 1.16.0).

- GRPO's completions (:func:`with_completion_sampler`, :func:`grpo_left_padded_prompts`,
  :func:`grpo_generation_model`): ``GRPOTrainer._generate_single_turn`` overridden, its regular
  transformers path's padding and generation context rebuilt; reads ``_is_vlm``, ``_tokenizer``, ``_dist``.
- GRPO's prompt order (:func:`with_train_sampler`, :func:`epoch_repeat_sampler`, ``EpochRepeatSampler``,
  :func:`repeat_sampler_permutation`): ``GRPOTrainer._get_train_sampler`` overridden, ``RepeatSampler.__iter__``
  copied.
- GRPO's log-probabilities of the completions (:func:`with_completion_logps`):
  ``GRPOTrainer._get_per_token_logps_and_entropies`` overridden, its fused-head call rebuilt.
- SFT's logged metrics (:func:`train_metrics`): ``SFTTrainer._metrics``.
- The Bradley-Terry loss's forward (:func:`with_reward_forward`): how ``RewardTrainer.compute_loss`` calls the
  model.
- The fused LM head (:func:`compact_fused_head_on_cpu`): ``trl.trainer.utils._use_triton`` replaced.

TRL is imported where a seam uses it, not with this module. ``tests/compat/test_trl.py`` checks every reliance
named here against the installed TRL.
"""

from __future__ import annotations

import functools
from contextlib import contextmanager
from typing import Any, Callable

from .version_guard import SeamBroken, require_tested

#: The TRL every seam here was checked against (requirements.lock and requirements-gpu.lock pin it).
TESTED_VERSION = "1.16.0"
require_tested("trl", TESTED_VERSION, __name__)


# -- GRPO's completions ------------------------------------------------------------------------------------------


def with_completion_sampler(trainer_cls: type, sample: Callable[[Any, list[list[int]]], list[list[int]]],
                            applies: Callable[..., bool], *, name: str) -> type:
    """``trainer_cls`` (``GRPOTrainer`` or a subclass) whose text-only completions come from
    ``sample(trainer, prompt_ids)`` (each row's new token ids) wherever ``applies(trainer.args, is_vlm=...)``;
    anything else (images, multimodal fields, other settings) goes through TRL's own path unchanged. The class is
    named ``name + trainer_cls.__name__``.

    Relies on (trl 1.16.0): ``GRPOTrainer._generate_single_turn(self, prompt_ids, images, multimodal_fields,
    num_generations, has_tool_images=False)`` is what samples one turn's completions, ``prompt_ids`` being one
    list of token ids per completion (each prompt already repeated ``num_generations`` times), and returns
    ``(completion_ids, logprobs)``, ``logprobs`` None on the transformers path; ``self._is_vlm`` says whether the
    processing class is a multimodal processor."""

    class CompletionSampled(trainer_cls):
        def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations,
                                  has_tool_images=False):
            if images is not None or multimodal_fields or not applies(self.args, is_vlm=self._is_vlm):
                return super()._generate_single_turn(prompt_ids, images, multimodal_fields, num_generations,
                                                     has_tool_images=has_tool_images)
            return sample(self, prompt_ids), None

    CompletionSampled.__name__ = CompletionSampled.__qualname__ = f"{name}{trainer_cls.__name__}"
    return CompletionSampled


def with_completion_logps(trainer_cls: type, compute: Callable[..., Any], *, name: str) -> type:
    """``trainer_cls`` (``GRPOTrainer`` or a subclass) whose per-token log-probabilities (and entropies) of the
    completions come from ``compute(trainer, model, input_ids, attention_mask, logits_to_keep, compute_entropy)``
    wherever it returns ``(logps, entropies or None)``: text-only batches scored in one chunk, without an MoE aux
    loss; None, or anything else, goes through TRL's own path. The class is named ``name + trainer_cls.__name__``.

    Relies on (trl 1.16.0): ``GRPOTrainer._get_per_token_logps_and_entropies(self, model, input_ids,
    attention_mask, logits_to_keep, batch_size=None, compute_entropy=False, compute_aux_loss=False,
    **multimodal_fields)`` scores every completion (policy, reference and old log-probabilities, and the loss's),
    ``input_ids`` being the left-padded prompts then the completions (the last ``logits_to_keep`` positions);
    it returns ``(logps, entropies or None, aux_loss or None)``, each per-token tensor ``(rows, logits_to_keep)``,
    from the model's fused LM head: ``model(input_ids=..., attention_mask=..., labels=..., fused_lm_head=True)``
    with the labels -100 outside the completions' unpadded tokens, its ``log_probs``/``entropy`` read at the last
    ``logits_to_keep`` positions (the model's autocast around the call)."""

    class LogpsComputed(trainer_cls):
        def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep,
                                               batch_size=None, compute_entropy=False, compute_aux_loss=False,
                                               **multimodal_fields):
            one_chunk = batch_size is None or batch_size >= input_ids.size(0)
            if one_chunk and not compute_aux_loss and all(v is None for v in multimodal_fields.values()):
                got = compute(self, model, input_ids, attention_mask, logits_to_keep, compute_entropy)
                if got is not None:
                    return got[0], got[1], None
            return super()._get_per_token_logps_and_entropies(
                model, input_ids, attention_mask, logits_to_keep, batch_size=batch_size,
                compute_entropy=compute_entropy, compute_aux_loss=compute_aux_loss, **multimodal_fields)

    LogpsComputed.__name__ = LogpsComputed.__qualname__ = f"{name}{trainer_cls.__name__}"
    return LogpsComputed


def grpo_left_padded_prompts(trainer, prompt_ids: list[list[int]]):
    """``(input_ids, attention_mask)`` of ``prompt_ids`` left-padded on the trainer's device, as
    ``GRPOTrainer._generate_single_turn``'s transformers path pads them (without ``pad_to_multiple_of``).

    Relies on (trl 1.16.0): ``trainer._tokenizer`` is the text tokenizer (the processor's for a multimodal model),
    whose ``pad_token_id`` that path pads with; ``trl.trainer.utils.pad(tensors, padding_value, padding_side)``."""
    import torch
    from trl.trainer.utils import pad

    device = trainer.accelerator.device
    prompts = [torch.tensor(ids) for ids in prompt_ids]
    input_ids = pad(prompts, padding_value=trainer._tokenizer.pad_token_id, padding_side="left").to(device)
    mask = pad([torch.ones_like(t) for t in prompts], padding_value=0, padding_side="left").to(device)
    return input_ids, mask


@contextmanager
def grpo_generation_model(trainer):
    """The model to generate with, in the context ``GRPOTrainer._generate_single_turn``'s transformers path
    generates in: unwrapped for generation (DeepSpeed ZeRO-3 parameters gathered as the config says), under
    ``torch.no_grad``, with FSDP's full parameters summoned.

    Relies on (trl 1.16.0): ``trl.models.unwrap_model_for_generation(model, accelerator,
    gather_deepspeed3_params=..., gradient_checkpointing_kwargs=...)``; ``trainer._dist`` is TRL's
    ``DistributedBackend`` of the trainer's accelerator, whose ``summon_full_params(model, recurse=False)`` that
    path enters."""
    import torch
    from trl.models import unwrap_model_for_generation

    with (
        unwrap_model_for_generation(
            trainer.model_wrapped, trainer.accelerator, gather_deepspeed3_params=trainer.args.ds3_gather_for_generation,
            gradient_checkpointing_kwargs=trainer.args.gradient_checkpointing_kwargs,
        ) as unwrapped_model,
        torch.no_grad(),
        trainer._dist.summon_full_params(trainer.model_wrapped, recurse=False),
    ):
        yield unwrapped_model


# -- GRPO's prompt order -----------------------------------------------------------------------------------------


def repeat_sampler_permutation(num_samples: int, seed: int | None, epoch: int) -> list[int]:
    """The permutation ``RepeatSampler`` draws on its ``epoch``-th pass (0-based) from a generator seeded ``seed``.

    Relies on (trl 1.16.0): ``RepeatSampler(shuffle=True)`` makes one ``torch.Generator()`` in its constructor
    (seeded when ``seed`` is not None) and draws ``torch.randperm(num_samples, generator=...)`` once per pass."""
    import torch

    generator = torch.Generator()
    if seed is not None:
        generator.manual_seed(seed)
    for _ in range(epoch):
        torch.randperm(num_samples, generator=generator)
    return torch.randperm(num_samples, generator=generator).tolist()


@functools.cache
def _epoch_repeat_sampler_class() -> type:
    from trl.trainer.utils import RepeatSampler

    class EpochRepeatSampler(RepeatSampler):
        """``RepeatSampler`` whose pass over the data is chosen by :meth:`set_epoch` (default: the next pass).

        Its ``__iter__`` is ``RepeatSampler.__iter__`` of trl 1.16.0 (chunks of ``batch_size`` indexes, an
        incomplete last chunk dropped, each chunk ``repeat_count`` times, each index ``mini_repeat_count`` times),
        with the pass's permutation from :func:`repeat_sampler_permutation`."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.epoch = 0

        def set_epoch(self, epoch: int) -> None:
            self.epoch = int(epoch)

        def __iter__(self):
            if self.shuffle:
                indexes = repeat_sampler_permutation(self.num_samples, self.seed, self.epoch)
            else:
                indexes = list(range(self.num_samples))
            self.epoch += 1  # a pass without set_epoch draws the next permutation, as RepeatSampler does
            chunks = [indexes[i: i + self.batch_size] for i in range(0, len(indexes), self.batch_size)]
            for chunk in chunks:
                if len(chunk) != self.batch_size:
                    continue
                for _ in range(self.repeat_count):
                    for index in chunk:
                        for _ in range(self.mini_repeat_count):
                            yield index

    EpochRepeatSampler.__qualname__ = "EpochRepeatSampler"
    EpochRepeatSampler.__module__ = __name__
    return EpochRepeatSampler


def __getattr__(name: str):
    if name == "EpochRepeatSampler":  # built on first use: importing this module does not import TRL
        return _epoch_repeat_sampler_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def epoch_repeat_sampler(sampler):
    """The ``EpochRepeatSampler`` of ``sampler``'s settings; ``sampler`` must be TRL's ``RepeatSampler`` itself
    (anything else raises :class:`SeamBroken`: its order could not be replayed by epoch).

    Relies on (trl 1.16.0): ``RepeatSampler(data_source, mini_repeat_count, batch_size, repeat_count, shuffle,
    seed)`` keeps each argument under its name."""
    from trl.trainer.utils import RepeatSampler

    if type(sampler) is not RepeatSampler:
        raise SeamBroken(f"GRPOTrainer._get_train_sampler returned {type(sampler).__module__}."
                         f"{type(sampler).__qualname__}, not trl's RepeatSampler: its prompt order cannot be replayed "
                         f"by epoch ({__name__} was checked against trl {TESTED_VERSION})")
    return _epoch_repeat_sampler_class()(sampler.data_source, sampler.mini_repeat_count, batch_size=sampler.batch_size,
                                         repeat_count=sampler.repeat_count, shuffle=sampler.shuffle, seed=sampler.seed)


def with_train_sampler(trainer_cls: type, replace: Callable[[Any], Any], *, name: str) -> type:
    """``trainer_cls`` (``GRPOTrainer`` or a subclass) training on ``replace(sampler)`` where TRL would use
    ``sampler``; the class is named ``name + trainer_cls.__name__``.

    Relies on (trl 1.16.0): ``GRPOTrainer._get_train_sampler(self, dataset=None)`` makes the training
    dataloader's sampler (a ``RepeatSampler``), called through ``Trainer._get_dataloader``'s ``sampler_fn``."""

    class SamplerReplaced(trainer_cls):
        def _get_train_sampler(self, *args: Any, **kwargs: Any):
            return replace(super()._get_train_sampler(*args, **kwargs))

    SamplerReplaced.__name__ = SamplerReplaced.__qualname__ = f"{name}{trainer_cls.__name__}"
    return SamplerReplaced


# -- SFT's logged metrics ----------------------------------------------------------------------------------------


def train_metrics(trainer) -> dict[str, list[float]]:
    """The values ``trainer`` (an ``SFTTrainer``) collected for its next training log, per metric name.

    Relies on (trl 1.16.0): ``SFTTrainer.__init__`` sets ``self._metrics = {"train": defaultdict(list), "eval":
    ...}``; ``SFTTrainer.compute_loss`` appends one ``entropy`` and one ``mean_token_accuracy`` per call (the
    batch's, over its labelled tokens) to ``self._metrics[mode]``, and ``log`` logs each list's mean and clears it."""
    return trainer._metrics["train"]


# -- The Bradley-Terry loss's forward ----------------------------------------------------------------------------


def with_reward_forward(trainer_cls: type, forward: Callable[[Any, Any], Any], *, name: str) -> type:
    """``trainer_cls`` (``RewardTrainer``) whose training loss calls ``forward(trainer, model)`` in place of the model (a batch
    with an attention mask, outputs not returned); the loss and metrics are TRL's on what it returns. The class is
    named ``name + trainer_cls.__name__``.

    Relies on (trl 1.16.0): ``RewardTrainer.compute_loss(self, model, inputs, return_outputs=False,
    num_items_in_batch=None)`` calls ``model(**inputs)`` once (``input_ids``, ``attention_mask``,
    ``use_cache=False``: the chosen rows then the rejected ones) and reads only the output's ``logits``."""

    class ForwardReplaced(trainer_cls):
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            if model.training and not return_outputs and "attention_mask" in inputs:
                model = forward(self, model)
            return super().compute_loss(model, inputs, return_outputs=return_outputs,
                                        num_items_in_batch=num_items_in_batch)

    ForwardReplaced.__name__ = ForwardReplaced.__qualname__ = f"{name}{trainer_cls.__name__}"
    return ForwardReplaced


# -- The fused LM head -------------------------------------------------------------------------------------------


def compact_fused_head_on_cpu() -> None:
    """Make TRL's fused LM head drop the unlabelled positions before projecting on CPU too (CUDA and XPU as TRL
    does); idempotent. The replacement keeps TRL's own choice as its ``upstream`` attribute.

    Relies on (trl 1.16.0): ``trl.trainer.utils._use_triton(device) -> bool`` (imported there from
    ``trl.kernels.chunked_logprob``) is read as a module global at every call of the fused head's forward
    (``add_fused_lm_head``'s), where it decides only whether ``hidden_states[mask]`` (labelled positions) or every
    position is projected; the kernel module keeps its own ``_use_triton`` for choosing Triton."""
    import trl.trainer.utils as trl_utils

    upstream = trl_utils._use_triton
    if hasattr(upstream, "upstream"):  # applied already
        return

    def compact_on_cpu(device) -> bool:
        return device.type == "cpu" or upstream(device)

    compact_on_cpu.upstream = upstream  # TRL's own choice
    trl_utils._use_triton = compact_on_cpu
