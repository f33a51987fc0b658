"""Pairwise accuracy of a reward model against human preferences.

A *pair* is two answers to one scenario of which humans prefer one. The
reward model is correct (1) if it scores the preferred answer higher, 0 if
lower, and 0.5 on an exact tie. Accuracy = mean over pairs.

Pairs of the same scenario share its difficulty, so the honest interval is a
cluster t interval on the per-scenario accuracies (G − 1 df). The iid Wilson
interval over pairs is reported beside it, labelled as ignoring clustering.
A split of pairs within scenarios says nothing about new scenarios: only
held-out scenarios do.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .intervals import Interval, cluster_t_interval, wilson_interval

SCORED_PAIR_COLUMNS = ["vignette_id", "score_preferred", "score_other"]


def pair_correctness(score_preferred, score_other) -> np.ndarray:
    """1 where the preferred answer scores higher, 0 where lower, 0.5 on ties."""
    preferred = np.asarray(score_preferred, dtype=float)
    other = np.asarray(score_other, dtype=float)
    if np.isnan(preferred).any() or np.isnan(other).any():
        raise ValueError("pair_correctness: reward scores must not be NaN")
    return np.where(preferred > other, 1.0, np.where(preferred < other, 0.0, 0.5))


def pairwise_accuracy(pairs: pd.DataFrame, confidence: float = 0.95) -> dict:
    """Pairwise accuracy with a scenario-clustered interval.

    ``pairs``: DataFrame with columns vignette_id, score_preferred (reward of
    the answer humans prefer), score_other (reward of the other answer).

    Returns a dict: accuracy (mean over pairs), n_pairs, n_ties, n_scenarios,
    per_scenario (list of {scenario, n_pairs, accuracy}), ``ci_cluster_t``
    (headline: on the per-scenario accuracies; its estimate is their
    unweighted mean) and ``ci_iid_wilson`` (ignores clustering), both as
    labelled :class:`Interval` dicts. Raises ``ValueError`` on an empty
    table, NaN scores or fewer than 2 scenarios.
    """
    if not isinstance(pairs, pd.DataFrame):
        raise TypeError("pairs must be a pandas DataFrame")
    missing = [c for c in SCORED_PAIR_COLUMNS if c not in pairs.columns]
    if missing:
        raise ValueError(f"pairs is missing column(s) {missing}; expected {SCORED_PAIR_COLUMNS}")
    if pairs.empty:
        raise ValueError("pairs is empty")
    if pairs["vignette_id"].isna().any():
        raise ValueError("pairs has missing vignette_id")
    correct = pair_correctness(pairs["score_preferred"], pairs["score_other"])
    frame = pd.DataFrame({"scenario": pairs["vignette_id"].to_numpy(), "correct": correct})
    by_scenario = frame.groupby("scenario", sort=True)["correct"].agg(["size", "mean"])
    if len(by_scenario) < 2:
        raise ValueError(
            f"pairwise_accuracy needs pairs from at least 2 scenarios for a clustered interval, "
            f"got {len(by_scenario)}"
        )
    n = len(correct)
    accuracy = float(correct.mean())
    scenario_means = by_scenario["mean"].to_numpy(dtype=float)
    t_low, t_high = cluster_t_interval(scenario_means, confidence)
    w_low, w_high = wilson_interval(correct.sum(), n, confidence)
    return {
        "accuracy": accuracy,
        "n_pairs": int(n),
        "n_ties": int((correct == 0.5).sum()),
        "n_scenarios": int(len(by_scenario)),
        "per_scenario": [
            {"scenario": str(s), "n_pairs": int(row["size"]), "accuracy": float(row["mean"])}
            for s, row in by_scenario.iterrows()
        ],
        "ci_cluster_t": Interval.labelled(
            "cluster_t", scenario_means.mean(), t_low, t_high, confidence
        ).as_dict(),
        "ci_iid_wilson": Interval.labelled(
            "iid_wilson", accuracy, w_low, w_high, confidence
        ).as_dict(),
    }
