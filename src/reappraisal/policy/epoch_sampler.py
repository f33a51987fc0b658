"""GRPO's prompt order as a function of the epoch, so a resumed training draws the uninterrupted one's.

TRL's ``RepeatSampler`` shuffles with one ``torch.Generator`` seeded once: each
pass over the prompts draws the next permutation from it. A training resumed
from a checkpoint builds a new sampler, whose first pass draws epoch 0's
permutation again where the uninterrupted run drew epoch ``e``'s, so from
the first step after the checkpoint the prompts, and everything after them,
differ. :class:`EpochRepeatSampler` is the same sampler (same permutations,
batches and repeats, in the same order) whose pass ``e`` replays the
generator to its ``e``-th permutation. The Trainer names the epoch at the start
of every pass (its epoch loop calls the dataloader's ``set_epoch``, which
accelerate forwards to the sampler), the restored epoch on a resume too.
"""

from __future__ import annotations

from typing import Any

import torch
from trl.trainer.utils import RepeatSampler


def permutation(num_samples: int, seed: int | None, epoch: int) -> list[int]:
    """The permutation ``RepeatSampler`` draws on its ``epoch``-th pass (0-based) from a generator seeded ``seed``."""
    generator = torch.Generator()
    if seed is not None:
        generator.manual_seed(seed)
    for _ in range(epoch):
        torch.randperm(num_samples, generator=generator)
    return torch.randperm(num_samples, generator=generator).tolist()


class EpochRepeatSampler(RepeatSampler):
    """``RepeatSampler`` whose pass over the data is chosen by :meth:`set_epoch` (default: the next pass)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def __iter__(self):
        if self.shuffle:
            indexes = permutation(self.num_samples, self.seed, self.epoch)
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



def epoch_ordered(trainer_cls: type) -> type:
    """``trainer_cls`` (TRL's ``GRPOTrainer``) drawing its prompts through :class:`EpochRepeatSampler`."""

    class EpochOrdered(trainer_cls):
        def _get_train_sampler(self, *args: Any, **kwargs: Any):
            sampler = super()._get_train_sampler(*args, **kwargs)
            if type(sampler) is not RepeatSampler:
                return sampler
            return EpochRepeatSampler(sampler.data_source, sampler.mini_repeat_count, batch_size=sampler.batch_size,
                                      repeat_count=sampler.repeat_count, shuffle=sampler.shuffle, seed=sampler.seed)

    EpochOrdered.__name__ = EpochOrdered.__qualname__ = f"EpochOrdered{trainer_cls.__name__}"
    return EpochOrdered
