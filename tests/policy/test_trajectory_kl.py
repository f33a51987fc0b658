"""The sampled KL of the trajectory stage: teacher-forced sequence log-probabilities, and the checkpoints it
visits."""

import json

import numpy as np
import torch

from reappraisal.evaluation.generation import load_generator
from reappraisal.evaluation.trajectory_io import checkpoints, sequence_logprobs


def test_sequence_logprobs_are_the_sum_of_each_tokens_log_probability(warm_policy):
    model, _ = load_generator(str(warm_policy))
    rng = np.random.default_rng(0)
    vocab = model.config.vocab_size
    prompts = [list(rng.integers(0, vocab, size=rng.integers(5, 30))) for _ in range(12)]
    completions = [list(rng.integers(0, vocab, size=rng.integers(1, 20))) for _ in range(12)]
    got = sequence_logprobs(model, prompts, completions, batch_size=5)
    for p, c, value in zip(prompts, completions, got):
        with torch.no_grad():
            logp = torch.log_softmax(model(input_ids=torch.tensor([p + c])).logits.double(), -1)[0]
        want = sum(float(logp[len(p) - 1 + k, c[k]]) for k in range(len(c)))
        assert abs(value - want) < 1e-4
    # the same model on both sides, batched alike: a KL of exactly zero per answer
    assert np.array_equal(got, sequence_logprobs(model, prompts, completions, batch_size=5))


def test_checkpoints_are_the_start_the_kept_steps_and_the_end(tmp_path):
    steps = tmp_path / "steps"
    for s in (10, 40, 20, 99):
        (steps / f"step-{s:05d}").mkdir(parents=True)
    (steps / "STEPS.json").write_text(json.dumps({"steps": [10, 20, 40]}))
    (steps / ".step-00050.tmp").mkdir()  # an unfinished snapshot is not one
    got = checkpoints(tmp_path / "start", steps, tmp_path / "final", 80)
    assert [s for s, _ in got] == [0, 10, 20, 40, 80]
    assert got[0][1] == tmp_path / "start" and got[-1][1] == tmp_path / "final"
