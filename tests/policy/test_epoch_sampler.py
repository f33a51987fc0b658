"""An epoch-ordered GRPO trainer's sampler draws TRL's passes, and pass e on its own after set_epoch(e) (a resume)."""

from types import SimpleNamespace

from trl import GRPOTrainer

from reappraisal.policy.epoch_sampler import epoch_ordered


def _sampler(trainer_cls):
    """The training sampler ``trainer_cls`` makes for 7 prompts (a trainer with only what the sampler reads)."""
    trainer = object.__new__(trainer_cls)
    vars(trainer).update(train_dataset=list(range(7)), num_generations=3, num_iterations=1, shuffle_dataset=True,
                         args=SimpleNamespace(generation_batch_size=6, steps_per_generation=2, seed=11))
    return trainer._get_train_sampler()


def test_consecutive_passes_are_trls_and_a_fresh_sampler_set_to_epoch_e_draws_pass_e():
    trl, ours = _sampler(GRPOTrainer), _sampler(epoch_ordered(GRPOTrainer))
    passes = [list(trl) for _ in range(4)]
    assert [list(ours) for _ in range(4)] == passes
    resumed = _sampler(epoch_ordered(GRPOTrainer))
    resumed.set_epoch(3)
    assert list(resumed) == passes[3]
    assert passes[3] != passes[0]  # without set_epoch a new sampler would draw pass 0 again
