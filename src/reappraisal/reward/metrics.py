"""How well reward scores agree with human ratings (pure numpy / pandas / scipy).

Units: a *score* is a reward-model output for one reappraisal (a seed's mean
head output, or the ensemble score); *z* is the human mean z-rating of that
reappraisal on the primary dimension. Scenarios (vignettes) are the
clusters: every interval here is clustered by scenario.

* pairwise accuracy: over within-scenario pairs of human reappraisals, the
  share where the human-preferred one scores higher (ties 0.5); computed by
  :func:`reappraisal.stats.accuracy.pairwise_accuracy`;
* Spearman correlation of scores with human z (pooled and within scenario);
* best-of-N reranking: draw N human reappraisals of a scenario, keep the
  top-scored one, and ask whether it beats a random pick of the same N by
  human z (chance = 0.5 exactly);
* seed disagreement: how far seeds differ on the same reappraisals;
* two selectors' best-of-N compared on the same draws, paired by scenario.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from reappraisal.stats.accuracy import pairwise_accuracy
from reappraisal.stats.intervals import Interval, cluster_t_interval


def pair_table(pairs: pd.DataFrame, scores: Mapping[str, float]) -> pd.DataFrame:
    """Scores of the preferred and the other answer of each pair.

    ``pairs`` follows the data contract (vignette_id, id_a, id_b, preferred
    ``A``|``B``); ``scores`` maps reappraisal_id -> score. Returns columns
    vignette_id, pair_id (when present), score_preferred, score_other.
    Raises ``KeyError`` naming the first reappraisal without a score.
    """
    bad = sorted(set(pairs["preferred"]) - {"A", "B"})
    if bad:
        raise ValueError(f"pairs.preferred must be 'A' or 'B', found {bad}")
    ids = pd.concat([pairs["id_a"], pairs["id_b"]]).unique()
    missing = [i for i in ids if i not in scores]
    if missing:
        raise KeyError(f"no score for reappraisal {missing[0]!r} ({len(missing)} missing)")
    score_a = pairs["id_a"].map(scores).to_numpy(dtype=float)
    score_b = pairs["id_b"].map(scores).to_numpy(dtype=float)
    a_preferred = (pairs["preferred"] == "A").to_numpy()
    out = pd.DataFrame(
        {
            "vignette_id": pairs["vignette_id"].to_numpy(),
            "score_preferred": np.where(a_preferred, score_a, score_b),
            "score_other": np.where(a_preferred, score_b, score_a),
        }
    )
    if "pair_id" in pairs:
        out.insert(1, "pair_id", pairs["pair_id"].to_numpy())
    return out


def accuracy_on_pairs(pairs: pd.DataFrame, scores: Mapping[str, float], confidence: float = 0.95) -> dict:
    """Pairwise accuracy (ties 0.5) with a scenario-cluster t interval; see stats.accuracy."""
    return pairwise_accuracy(pair_table(pairs, scores), confidence)


def spearman_with_humans(scores, z, scenarios) -> dict:
    """Spearman ρ between scores and human z: pooled, and the mean of within-scenario ρ.

    Reappraisals with NaN z are dropped (counted in ``n_dropped_nan``). The
    pooled ρ mixes between-scenario differences; the within-scenario mean is
    the one that matters for ranking candidates of one prompt. Scenarios with
    fewer than 3 rated reappraisals, or constant scores or z, are left out of
    the within mean (counted in ``n_scenarios_skipped``).
    """
    scores = np.asarray(scores, dtype=float)
    z = np.asarray(z, dtype=float)
    labels = np.asarray(scenarios)
    if not (scores.shape == z.shape == labels.shape) or scores.ndim != 1:
        raise ValueError("scores, z and scenarios must be 1-d and of equal length")
    keep = ~np.isnan(z)
    scores, z, labels = scores[keep], z[keep], labels[keep]
    pooled = float(stats.spearmanr(scores, z).statistic) if len(z) >= 3 else float("nan")
    within = {}
    skipped = 0
    for s in np.unique(labels):
        m = labels == s
        if m.sum() < 3 or np.ptp(scores[m]) == 0 or np.ptp(z[m]) == 0:
            skipped += 1
            continue
        within[str(s)] = float(stats.spearmanr(scores[m], z[m]).statistic)
    return {
        "pooled": pooled,
        "within_scenario_mean": float(np.mean(list(within.values()))) if within else float("nan"),
        "within_scenario": within,
        "n": int(len(z)),
        "n_dropped_nan": int((~keep).sum()),
        "n_scenarios_skipped": skipped,
    }


def best_of_n(scores, z, scenarios, n: int, draws: int, seed: int, confidence: float = 0.95) -> dict:
    """Best-of-N reranking diagnostic judged by human z.

    For each scenario with at least ``n`` rated reappraisals, ``draws`` times:
    sample ``n`` of them without replacement, select the top-scored one (ties
    broken by the random sample order), and record

    * ``win_vs_random``: P(selected beats a uniformly random pick of the same
      n by human z), ties 0.5. A selector that ignores the scores gets exactly
      0.5 in expectation; the oracle (top human z) gets (n − 0.5)/n.
    * ``z_gain``: z(selected) − mean z of the n (the random pick's expectation);
    * ``oracle_gain``: max z of the n − their mean (the best achievable gain).

    Per-scenario means are pooled with equal scenario weights; the interval
    on ``win_vs_random`` is a cluster t over scenarios (needs ≥ 2). Scenarios
    with fewer than ``n`` rated reappraisals are skipped and listed.
    """
    if n < 2:
        raise ValueError(f"best_of_n needs n >= 2, got {n}")
    if draws < 1:
        raise ValueError(f"best_of_n needs draws >= 1, got {draws}")
    scores = np.asarray(scores, dtype=float)
    z = np.asarray(z, dtype=float)
    labels = np.asarray(scenarios)
    keep = ~np.isnan(z)
    scores, z, labels = scores[keep], z[keep], labels[keep]
    rng = np.random.default_rng(seed)
    per_scenario, skipped = [], {}
    for s in np.unique(labels):
        idx = np.flatnonzero(labels == s)
        if len(idx) < n:
            skipped[str(s)] = int(len(idx))
            continue
        # (draws, n) samples without replacement: the first n of a random permutation per row.
        sample = idx[np.argsort(rng.random((draws, len(idx))), axis=1)[:, :n]]
        sel = sample[np.arange(draws), np.argmax(scores[sample], axis=1)]
        z_sample, z_sel = z[sample], z[sel][:, None]
        win = ((z_sel > z_sample) + 0.5 * (z_sel == z_sample)).mean(axis=1)
        per_scenario.append(
            {
                "scenario": str(s),
                "n_candidates": int(len(idx)),
                "win_vs_random": float(win.mean()),
                "z_gain": float((z[sel] - z_sample.mean(axis=1)).mean()),
                "oracle_gain": float((z_sample.max(axis=1) - z_sample.mean(axis=1)).mean()),
            }
        )
    out: dict = {
        "n": int(n),
        "draws_per_scenario": int(draws),
        "chance_win_vs_random": 0.5,
        "oracle_win_vs_random": (n - 0.5) / n,
        "per_scenario": per_scenario,
        "scenarios_skipped_too_few_candidates": skipped,
        "n_scenarios": len(per_scenario),
    }
    if not per_scenario:
        out.update(win_vs_random=None, z_gain=None, oracle_gain=None, share_of_oracle_gain=None, ci_cluster_t=None)
        return out
    win_means = np.array([r["win_vs_random"] for r in per_scenario])
    z_gain = float(np.mean([r["z_gain"] for r in per_scenario]))
    oracle_gain = float(np.mean([r["oracle_gain"] for r in per_scenario]))
    out.update(
        win_vs_random=float(win_means.mean()),
        z_gain=z_gain,
        oracle_gain=oracle_gain,
        share_of_oracle_gain=z_gain / oracle_gain if oracle_gain > 0 else None,
    )
    if len(win_means) >= 2:
        low, high = cluster_t_interval(win_means, confidence)
        out["ci_cluster_t"] = Interval.labelled("cluster_t", win_means.mean(), low, high, confidence).as_dict()
    else:
        out["ci_cluster_t"] = None
    return out


def paired_best_of_n_difference(first: dict, second: dict, confidence: float = 0.95) -> dict:
    """``first`` minus ``second`` best-of-N win rate (results of :func:`best_of_n` with the same draws),
    per scenario both have, pooled with equal scenario weights, with a cluster t interval (needs >= 2 scenarios)."""
    a = {r["scenario"]: r["win_vs_random"] for r in first.get("per_scenario") or []}
    b = {r["scenario"]: r["win_vs_random"] for r in second.get("per_scenario") or []}
    common = sorted(set(a) & set(b))
    diff = np.array([a[s] - b[s] for s in common], dtype=float)
    out: dict = {"n_scenarios": len(common), "difference": float(diff.mean()) if len(diff) else None,
                 "per_scenario": {s: float(d) for s, d in zip(common, diff)}, "ci_cluster_t": None}
    if len(diff) >= 2:
        low, high = cluster_t_interval(diff, confidence, bounds=(-1.0, 1.0))  # a difference of rates
        out["ci_cluster_t"] = Interval.labelled("cluster_t", diff.mean(), low, high, confidence).as_dict()
    return out


def seed_disagreement(per_seed, pair_index_a: Sequence[int] | None = None, pair_index_b: Sequence[int] | None = None) -> dict:
    """How much seeds disagree on the same reappraisals.

    ``per_seed``: (n_seeds, n) scores. Reports the per-reappraisal std over
    seeds (population, as in the ensemble penalty; mean, median, max), the
    Pearson and Spearman correlation of every pair of seeds, and — when pair
    indices into the n reappraisals are given — the share of pairs on which
    the seeds do not all prefer the same answer.
    """
    per_seed = np.asarray(per_seed, dtype=float)
    if per_seed.ndim != 2 or per_seed.shape[1] == 0:
        raise ValueError(f"per_seed must have shape (n_seeds, n>0), got {per_seed.shape}")
    k = per_seed.shape[0]
    std = per_seed.std(axis=0)
    out: dict = {
        "n_seeds": int(k),
        "n": int(per_seed.shape[1]),
        "std_over_seeds": {"mean": float(std.mean()), "median": float(np.median(std)), "max": float(std.max())},
        "score_sd_per_seed": [float(s) for s in per_seed.std(axis=1)],
        "between_seed_correlation": [],
    }
    for i in range(k):
        for j in range(i + 1, k):
            out["between_seed_correlation"].append(
                {
                    "seeds": [i, j],
                    "pearson": float(np.corrcoef(per_seed[i], per_seed[j])[0, 1]),
                    "spearman": float(stats.spearmanr(per_seed[i], per_seed[j]).statistic),
                }
            )
    if pair_index_a is not None and pair_index_b is not None:
        a = np.asarray(pair_index_a, dtype=int)
        b = np.asarray(pair_index_b, dtype=int)
        sign = np.sign(per_seed[:, a] - per_seed[:, b])
        split = ~(np.all(sign == sign[0], axis=0))
        out["pairs_seeds_disagree"] = {"n_pairs": int(len(a)), "share": float(split.mean()) if len(a) else None}
    return out
