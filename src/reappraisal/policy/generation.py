"""GRPO's completions through the project's decoder (:mod:`reappraisal.batched_generation`).

TRL's ``GRPOTrainer`` samples a step's completions with ``model.generate(do_sample=True)``: every row is fed
padding until the longest is done, and every token is drawn with ``torch.multinomial``. On the demo's tiny
policy a committee arm's 80 steps took 35.3-35.9 s of training this way against 36.8-37.0 s with ``generate``
(``benchmarks/README.md``). :func:`with_project_decoder` makes a trainer class whose plain
transformers path decodes with :func:`~reappraisal.batched_generation.decode_batch` instead: the same
distribution (temperature, then the nucleus filter, then one inverse-CDF draw per token), a finished row
leaving the batch, each distinct prompt read once for its ``num_generations`` rows.

Its random numbers come from a generator of its own, seeded from the training seed, the global step and the
process (:func:`completion_seed`), not from torch's global state: a resumed run draws the completions an
unbroken run draws at the same step.

Only the settings this decoder reproduces take it: no vLLM, no continuous batching, no multimodal inputs,
``top_k`` 0, no ``min_p``, ``repetition_penalty`` 1, no extra ``generation_kwargs``. Any other setting goes
through TRL's own path unchanged. Where TRL is entered (its private ``_generate_single_turn``, the padding and the
generation context of its transformers path) is :mod:`reappraisal.compat.trl`.
"""

from __future__ import annotations

from typing import Any

from ..compat.trl import grpo_generation_model, grpo_left_padded_prompts, with_completion_sampler

#: Mixes the step and the process into the seed of a step's draws (a large odd constant: distinct steps and
#: processes never share a seed for any realistic run).
_STEP_STRIDE = 1_000_003
_PROCESS_STRIDE = 7_919


def completion_seed(seed: int, global_step: int, process_index: int) -> int:
    """The seed of one process's completions at ``global_step`` of a run trained with ``seed``."""
    return (int(seed) * _STEP_STRIDE + int(global_step)) * _PROCESS_STRIDE + int(process_index)


def decoder_applies(args: Any, *, is_vlm: bool) -> bool:
    """Whether the project's decoder reproduces these GRPO settings' sampling (module doc)."""
    return (not getattr(args, "use_vllm", False) and not getattr(args, "use_transformers_continuous_batching", False)
            and not is_vlm and int(args.top_k or 0) == 0 and args.min_p is None
            and float(args.repetition_penalty) == 1.0 and not args.generation_kwargs)


def with_project_decoder(trainer_cls: type) -> type:
    """``trainer_cls`` (TRL's ``GRPOTrainer`` or a subclass) sampling completions with the project's decoder
    where :func:`decoder_applies` (module doc)."""
    return with_completion_sampler(trainer_cls, sample_completions, decoder_applies, name="ProjectDecoded")


def sample_completions(trainer, prompt_ids: list[list[int]]) -> list[list[int]]:
    """Each prompt's completion (new token ids, up to and including its first stop token), drawn with the project's
    decoder at ``trainer``'s sampling settings from the step's own generator (:func:`completion_seed`)."""
    import torch

    from reappraisal.batched_generation import RowsOfBatch, decode_batch, sampling_processors

    input_ids, mask = grpo_left_padded_prompts(trainer, prompt_ids)
    generator = torch.Generator().manual_seed(
        completion_seed(trainer.args.seed, trainer.state.global_step, trainer.accelerator.process_index))
    rows_of_batch = RowsOfBatch(len(prompt_ids))
    processors = sampling_processors(trainer.temperature, trainer.top_p, generator, rows_of_batch)
    with grpo_generation_model(trainer) as unwrapped_model:
        return decode_batch(unwrapped_model, input_ids, mask, max_new_tokens=trainer.max_completion_length,
                            stop=trainer.eos_token_ids, processors=processors, rows_of_batch=rows_of_batch)
