"""Sampled generation draws from the tempered (nucleus-filtered) softmax, reproducibly per seed."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from reappraisal.batched_generation import sampling_processors

LOGITS = torch.tensor([[2.0, 1.0, 0.0, -1.0, -3.0]], dtype=torch.float32)


def _draws(n: int, temperature: float, top_p: float, seed: int) -> np.ndarray:
    processors = sampling_processors(temperature, top_p, torch.Generator().manual_seed(seed))
    scores = processors(torch.zeros((n, 1), dtype=torch.long), LOGITS.expand(n, -1).clone())
    assert torch.isfinite(scores).sum(dim=-1).eq(1).all()  # one finite score per row: greedy search takes it
    return scores.argmax(dim=-1).numpy()


def _expected(temperature: float, top_p: float) -> np.ndarray:
    p = torch.softmax(LOGITS[0] / temperature, dim=-1).double().numpy()
    order = np.argsort(-p)
    keep = np.zeros_like(p, dtype=bool)
    cumulative = 0.0
    for i in order:  # the smallest set of most likely tokens whose mass reaches top_p
        keep[i] = True
        cumulative += p[i]
        if cumulative >= top_p:
            break
    p = np.where(keep, p, 0.0)
    return p / p.sum()


@pytest.mark.parametrize("temperature,top_p", [(1.0, 1.0), (0.7, 1.0), (1.3, 0.8)])
def test_the_draws_follow_the_tempered_filtered_softmax(temperature, top_p):
    n = 40_000
    drawn = _draws(n, temperature, top_p, seed=3)
    expected = _expected(temperature, top_p)
    freq = np.bincount(drawn, minlength=len(expected)) / n
    sd = np.sqrt(expected * (1 - expected) / n)
    assert np.all(np.abs(freq - expected) <= 4.5 * sd + 1e-12), (freq, expected)
    assert np.all(freq[expected == 0] == 0)  # a filtered token is never drawn


def test_a_seed_gives_the_same_draws_and_another_seed_others():
    assert np.array_equal(_draws(500, 0.7, 1.0, seed=11), _draws(500, 0.7, 1.0, seed=11))
    assert not np.array_equal(_draws(500, 0.7, 1.0, seed=11), _draws(500, 0.7, 1.0, seed=12))
