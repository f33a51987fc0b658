"""TRL's fused LM head scores only the labelled positions on CPU too (core layer).

TRL's trainers (SFT and GRPO) compute each token's log-probability with a
fused LM head (``trl.trainer.utils.add_fused_lm_head``): the vocabulary's
logits are projected and folded tile by tile, forward and backward. Where
Triton runs (CUDA, XPU) it projects only the positions that carry a label;
elsewhere it projects every position and masks the unlabelled ones
afterwards, so that a compiled kernel on an accelerator without Triton
meets one tile shape per batch. On CPU the kernel runs eagerly, nothing is
recompiled, and the unlabelled positions are most of a batch: the GRM's
SFT labels only the reasoning and verdict after a judge prompt several
times as long, and GRPO labels only the completion after its prompt. Every
one of those positions was projected onto the whole vocabulary, forward and
backward, and then thrown away.

:func:`score_labelled_positions_only` makes the head take its compact path
on CPU as well. The log-probabilities and entropies it returns are the same
bytes; the gradients are the same sums without the masked positions' zero
terms, so they can differ in the last bits. ``run_training`` applies it
before every trainer trains.
"""

from __future__ import annotations

from ..compat.trl import compact_fused_head_on_cpu


def score_labelled_positions_only() -> None:
    """Make TRL's fused LM head project only labelled positions on CPU (idempotent; CUDA and XPU as TRL does).

    The replacement of TRL's private choice is :func:`reappraisal.compat.trl.compact_fused_head_on_cpu`."""
    compact_fused_head_on_cpu()
