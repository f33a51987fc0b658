"""Validation figures of one trained seed, computed from its saved directory.

Scores the validation split's reappraisals with the saved model loaded back
through :class:`~.ensemble.EnsembleScorer` (exactly as every consumer loads
it) and reports, per rating dimension, the masked MSE and Pearson r of the
head output against the mean z target, plus the seed score's (mean of head
outputs) Spearman ρ with the primary dimension and its pairwise accuracy on
the validation split's within-scenario pairs (ties 0.5, scenario-cluster CI).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .dataset import Examples
from .ensemble import EnsembleScorer
from .metrics import accuracy_on_pairs, spearman_with_humans


def validation_figures(model_dir: str | Path, *, val: Examples, val_pairs, primary_dimension: str, max_length: int, batch_size: int) -> dict:
    scorer = EnsembleScorer.from_dirs([model_dir], max_length=max_length, batch_size=batch_size)
    heads = scorer.head_outputs(val.scenarios, val.reappraisals)[0]  # (n, n_dims)
    per_dim = {}
    for j, dim in enumerate(val.dimensions):
        y = val.targets[:, j]
        m = ~np.isnan(y)
        if m.sum() == 0:
            per_dim[dim] = {"n": 0, "mse": None, "pearson": None}
            continue
        pred = heads[m, j]
        r = float(np.corrcoef(pred, y[m])[0, 1]) if m.sum() > 2 and np.ptp(pred) > 0 else None
        per_dim[dim] = {"n": int(m.sum()), "mse": float(np.mean((pred - y[m]) ** 2)), "pearson": r}
    seed_score = heads.mean(axis=1)
    primary = val.targets[:, val.dimensions.index(primary_dimension)]
    out = {
        "split": "val",
        "per_dimension": per_dim,
        "spearman_primary": spearman_with_humans(seed_score, primary, val.vignette_ids),
        "pairwise": None,
    }
    scores = dict(zip(val.reappraisal_ids, seed_score))
    usable = val_pairs[val_pairs["id_a"].isin(scores) & val_pairs["id_b"].isin(scores)]
    if len(usable) < len(val_pairs):
        out["n_pairs_without_score"] = int(len(val_pairs) - len(usable))
    try:
        out["pairwise"] = accuracy_on_pairs(usable, scores)
    except ValueError as exc:  # no pairs, or pairs from a single scenario
        out["pairwise_unavailable"] = str(exc)
    return out
