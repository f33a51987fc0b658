"""Ensemble score from per-seed reward-model scores (pure numpy).

A seed's score for a (scenario, reappraisal) pair is the mean of its head
outputs (one output per rating dimension, in z units). The ensemble score
penalises disagreement between seeds:

* ``"std"`` (model cards, default): mean over seeds − λ·std over seeds;
* ``"variance"`` (Coste et al. 2023, uncertainty-weighted): mean − λ·variance.

The spread is the population form over the seeds at hand (``ddof=0``, as
``numpy.std``), so the number matches ``np.mean(s) - lam * np.std(s)`` in the
model card's reference snippet. With a single seed the penalty is 0.
"""

from __future__ import annotations

import numpy as np

PENALTIES = ("std", "variance")


def ensemble_score(per_seed: np.ndarray, penalty: str = "std", lam: float = 0.5) -> np.ndarray:
    """Ensemble score per pair from ``per_seed`` of shape (n_seeds, n).

    Returns an array of shape (n,). ``lam`` must be ≥ 0 (λ = 0 is the plain
    mean). Raises ``ValueError`` for an unknown penalty, a wrong shape, no
    seeds, or NaN scores.
    """
    scores = np.asarray(per_seed, dtype=float)
    if scores.ndim != 2:
        raise ValueError(f"per_seed must have shape (n_seeds, n), got {scores.shape}")
    if scores.shape[0] == 0:
        raise ValueError("per_seed has no seeds")
    if penalty not in PENALTIES:
        raise ValueError(f"unknown ensemble penalty {penalty!r}; known: {', '.join(PENALTIES)}")
    if not lam >= 0:
        raise ValueError(f"lam must be >= 0, got {lam}")
    if np.isnan(scores).any():
        raise ValueError("per_seed contains NaN scores")
    mean = scores.mean(axis=0)
    spread = scores.std(axis=0) if penalty == "std" else scores.var(axis=0)
    return mean - lam * spread


def describe_penalty(penalty: str, lam: float) -> str:
    """One line naming the ensemble formula, for reports and model cards."""
    if penalty not in PENALTIES:
        raise ValueError(f"unknown ensemble penalty {penalty!r}; known: {', '.join(PENALTIES)}")
    spread = "std" if penalty == "std" else "variance"
    return f"mean over seeds - {lam:g} * {spread} over seeds (population {spread}, ddof=0)"
