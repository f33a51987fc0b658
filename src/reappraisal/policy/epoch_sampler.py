"""GRPO's prompt order as a function of the epoch, so a resumed training draws the uninterrupted one's.

TRL's ``RepeatSampler`` shuffles with one ``torch.Generator`` seeded once: each
pass over the prompts draws the next permutation from it. A training resumed
from a checkpoint builds a new sampler, whose first pass draws epoch 0's
permutation again where the uninterrupted run drew epoch ``e``'s, so from
the first step after the checkpoint the prompts, and everything after them,
differ. :func:`epoch_ordered` trains on ``EpochRepeatSampler`` instead: the same
sampler (same permutations, batches and repeats, in the same order) whose pass
``e`` replays the generator to its ``e``-th permutation. The Trainer names the
epoch at the start of every pass (its epoch loop calls the dataloader's
``set_epoch``, which accelerate forwards to the sampler), the restored epoch on a
resume too.

The sampler (a copy of ``RepeatSampler``'s pass) and the override of TRL's private
``_get_train_sampler`` are seams of :mod:`reappraisal.compat.trl`; a sampler other
than TRL's ``RepeatSampler`` stops the training (``SeamBroken``) instead of
training in an order a resume would not repeat.
"""

from __future__ import annotations

from ..compat.trl import epoch_repeat_sampler, with_train_sampler


def epoch_ordered(trainer_cls: type) -> type:
    """``trainer_cls`` (TRL's ``GRPOTrainer``) drawing its prompts through ``EpochRepeatSampler`` (module doc)."""
    return with_train_sampler(trainer_cls, epoch_repeat_sampler, name="EpochOrdered")
