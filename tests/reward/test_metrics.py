import numpy as np
import pandas as pd
import pytest

from reappraisal.reward.metrics import (
    accuracy_on_pairs,
    best_of_n,
    pair_table,
    seed_disagreement,
    spearman_with_humans,
)


def _pairs():
    return pd.DataFrame(
        {
            "pair_id": ["p1", "p2", "p3", "p4"],
            "vignette_id": ["a", "a", "b", "b"],
            "id_a": ["r1", "r2", "r4", "r5"],
            "id_b": ["r2", "r3", "r5", "r6"],
            "preferred": ["A", "B", "A", "A"],
        }
    )


def test_pair_table_orients_by_human_preference():
    t = pair_table(_pairs(), {"r1": 1, "r2": 0, "r3": 5, "r4": 2, "r5": 2, "r6": 9})
    assert t["score_preferred"].tolist() == [1, 5, 2, 2]
    assert t["score_other"].tolist() == [0, 0, 2, 9]


def test_accuracy_counts_ties_half_and_clusters_by_scenario():
    res = accuracy_on_pairs(_pairs(), {"r1": 1, "r2": 0, "r3": 5, "r4": 2, "r5": 2, "r6": 9})
    # correct, correct, tie, wrong
    assert res["accuracy"] == pytest.approx(2.5 / 4)
    assert res["n_ties"] == 1 and res["n_scenarios"] == 2
    assert res["ci_cluster_t"]["method"] == "cluster_t"


def test_missing_score_is_named():
    with pytest.raises(KeyError, match="r6"):
        pair_table(_pairs(), {"r1": 1, "r2": 0, "r3": 5, "r4": 2, "r5": 2})


def _pool(seed=0, per=12, scenarios=("a", "b", "c")):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=per * len(scenarios))
    labels = np.repeat(scenarios, per)
    return z, labels


def test_best_of_n_oracle_and_chance():
    z, labels = _pool()
    oracle = best_of_n(z, z, labels, n=4, draws=300, seed=0)
    assert oracle["win_vs_random"] == pytest.approx((4 - 0.5) / 4)
    assert oracle["share_of_oracle_gain"] == pytest.approx(1.0)
    # constant scores: the pick is the first of a random sample, i.e. a random pick
    blind = best_of_n(np.zeros(len(z)), z, labels, n=4, draws=3000, seed=1)
    assert abs(blind["win_vs_random"] - 0.5) < 0.02
    anti = best_of_n(-z, z, labels, n=4, draws=300, seed=0)
    assert anti["win_vs_random"] == pytest.approx(0.5 / 4)
    assert anti["ci_cluster_t"]["high"] < 0.5


def test_best_of_n_skips_scenarios_with_too_few_candidates():
    z = np.array([0.1, 0.5, 0.2, 0.9, -1.0])
    labels = np.array(["a", "a", "a", "a", "single"])
    res = best_of_n(z, z, labels, n=3, draws=10, seed=0)
    assert res["scenarios_skipped_too_few_candidates"] == {"single": 1}
    assert res["n_scenarios"] == 1 and res["ci_cluster_t"] is None
    none = best_of_n(z, z, labels, n=9, draws=10, seed=0)
    assert none["win_vs_random"] is None


def test_spearman_pooled_and_within():
    z, labels = _pool()
    res = spearman_with_humans(2 * z + 1, z, labels)
    assert res["pooled"] == pytest.approx(1.0) and res["within_scenario_mean"] == pytest.approx(1.0)
    z2 = z.copy()
    z2[0] = np.nan
    assert spearman_with_humans(z, z2, labels)["n_dropped_nan"] == 1


def test_seed_disagreement():
    same = np.tile(np.arange(5.0), (3, 1))
    res = seed_disagreement(same, [0, 1], [1, 2])
    assert res["std_over_seeds"]["max"] == 0
    assert res["pairs_seeds_disagree"]["share"] == 0
    assert all(c["pearson"] == pytest.approx(1) for c in res["between_seed_correlation"])
    flipped = np.stack([np.arange(5.0), -np.arange(5.0)])
    assert seed_disagreement(flipped, [0, 1], [1, 2])["pairs_seeds_disagree"]["share"] == 1
