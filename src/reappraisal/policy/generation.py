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
through TRL's own path unchanged.
"""

from __future__ import annotations

from typing import Any

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

    class ProjectDecoded(trainer_cls):
        def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations,
                                  has_tool_images=False):
            if images is not None or multimodal_fields or not decoder_applies(self.args, is_vlm=self._is_vlm):
                return super()._generate_single_turn(prompt_ids, images, multimodal_fields, num_generations,
                                                     has_tool_images=has_tool_images)
            import torch
            from trl.models import unwrap_model_for_generation
            from trl.trainer.utils import pad

            from reappraisal.batched_generation import RowsOfBatch, decode_batch, sampling_processors

            device = self.accelerator.device
            prompts = [torch.tensor(ids) for ids in prompt_ids]
            input_ids = pad(prompts, padding_value=self._tokenizer.pad_token_id, padding_side="left").to(device)
            mask = pad([torch.ones_like(t) for t in prompts], padding_value=0, padding_side="left").to(device)
            generator = torch.Generator().manual_seed(
                completion_seed(self.args.seed, self.state.global_step, self.accelerator.process_index))
            rows_of_batch = RowsOfBatch(len(prompts))
            processors = sampling_processors(self.temperature, self.top_p, generator, rows_of_batch)
            with (
                unwrap_model_for_generation(
                    self.model_wrapped, self.accelerator, gather_deepspeed3_params=self.args.ds3_gather_for_generation,
                    gradient_checkpointing_kwargs=self.args.gradient_checkpointing_kwargs,
                ) as unwrapped_model,
                torch.no_grad(),
                self._dist.summon_full_params(self.model_wrapped, recurse=False),
            ):
                completion_ids = decode_batch(unwrapped_model, input_ids, mask,
                                              max_new_tokens=self.max_completion_length, stop=self.eos_token_ids,
                                              processors=processors, rows_of_batch=rows_of_batch)
            return completion_ids, None

    ProjectDecoded.__name__ = ProjectDecoded.__qualname__ = f"ProjectDecoded{trainer_cls.__name__}"
    return ProjectDecoded
