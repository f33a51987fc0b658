"""The epoch-ordered sampler draws TRL's RepeatSampler's passes, and pass e on its own after set_epoch(e)."""

from trl.trainer.utils import RepeatSampler

from reappraisal.policy.epoch_sampler import EpochRepeatSampler

KW = dict(mini_repeat_count=3, batch_size=2, repeat_count=2, seed=11)


def test_consecutive_passes_are_trls():
    data = list(range(7))
    trl, ours = RepeatSampler(data, **KW), EpochRepeatSampler(data, **KW)
    assert [list(trl) for _ in range(4)] == [list(ours) for _ in range(4)]


def test_a_fresh_sampler_set_to_epoch_e_draws_pass_e():
    data = list(range(7))
    trl = RepeatSampler(data, **KW)
    passes = [list(trl) for _ in range(4)]
    resumed = EpochRepeatSampler(data, **KW)
    resumed.set_epoch(3)
    assert list(resumed) == passes[3]
    assert passes[3] != passes[0]  # without set_epoch a new sampler would draw pass 0 again
