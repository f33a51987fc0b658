"""GRPO scoring each prompt once for the completions sampled from it (thin wiring).

A GRPO step scores its completions with the policy (the loss, with its gradient) and the reference model (the
KL), each time over every row: the prompt, left-padded, then one completion. A step's rows are a few prompts
with several completions each (the demo's 8: 2 prompts, 4 completions), and a prompt is most of a row.
:func:`with_shared_prompts` makes TRL's ``GRPOTrainer`` read each distinct prompt once and every completion
after it (:func:`reappraisal.training.shared_prefix.completion_logps`, through the seam
:func:`reappraisal.compat.trl.with_completion_logps`): the same log-probabilities, entropies and gradient up to
the order of sums; elsewhere (GPUs, several processes, activation checkpointing, bf16) TRL's own path.
"""

from __future__ import annotations

from reappraisal.compat.trl import with_completion_logps
from reappraisal.training.shared_prefix import completion_logps


def with_shared_prompts(trainer_cls: type) -> type:
    """``trainer_cls`` (TRL's ``GRPOTrainer``) scoring each distinct prompt of a batch once (module doc)."""
    return with_completion_logps(trainer_cls, completion_logps, name="SharedPrompts")
