"""evaluate_reward_models: figures per seed and for the ensemble; edge cases; the CLI's bad-input path."""

import json

import numpy as np
import pytest

from reappraisal.cli import main
from reappraisal.errors import PipelineInputError
from reappraisal.reward.dataset import examples_for_split, pairs_for_split
from reappraisal.reward.evaluate_io import evaluate_reward_models, evaluate_scores

from .toy import DATA, DIMS, make_pairs


def _eval(dirs, targets, vignettes, pairs, **kw):
    return evaluate_reward_models(dirs, targets=targets, vignettes=vignettes, pairs=pairs, dimensions=DIMS,
                                  primary_dimension="effectiveness", max_length=128, n_best_of=3, draws=50, **kw)


def test_figures_per_seed_and_ensemble(trained_seeds, toy_tables):
    dirs, summaries = trained_seeds
    targets, vignettes, pairs = toy_tables
    m = _eval(dirs, targets, vignettes, pairs)
    assert list(m["per_seed"]) == ["seed0", "seed1"]
    for s, summary in zip(m["per_seed"].values(), summaries):
        # the evaluation re-scores the saved seed: same number as its model card
        assert s["pairwise"]["accuracy"] == pytest.approx(summary["validation"]["pairwise"]["accuracy"])
    assert m["mean_of_seeds_pairwise_accuracy"] == pytest.approx(np.mean([s["pairwise"]["accuracy"] for s in m["per_seed"].values()]))
    ens = m["ensemble"]
    assert 0 <= ens["pairwise"]["accuracy"] <= 1 and ens["pairwise"]["n_pairs"] == m["n_pairs"]
    assert ens["pairwise"]["ci_cluster_t"]["low"] <= ens["pairwise"]["accuracy"] <= ens["pairwise"]["ci_cluster_t"]["high"]
    assert ens["best_of_n"]["n_scenarios"] == 3
    assert m["seed_disagreement"]["n_seeds"] == 2
    assert "new scenarios" in m["held_out"]


def test_a_scenario_with_a_single_val_reappraisal_is_listed_not_lost(trained_seeds, toy_tables):
    dirs, _ = trained_seeds
    targets, vignettes, _ = toy_tables
    t = targets.copy()
    val_t3 = t.index[(t["vignette_id"] == "t3") & (t["split"] == "val")]
    t.loc[val_t3[1:], "split"] = "train"
    pairs = make_pairs(t)
    assert not ((pairs["vignette_id"] == "t3") & (pairs["split"] == "val")).any()
    m = _eval(dirs, t, vignettes, pairs)
    assert m["scenarios_with_one_val_reappraisal"] == ["t3"]
    assert m["ensemble"]["best_of_n"]["scenarios_skipped_too_few_candidates"] == {"t3": 1}
    assert m["ensemble"]["pairwise"]["n_scenarios"] == 2


def test_no_val_pairs_is_a_clear_error(toy_tables):
    targets, vignettes, pairs = toy_tables
    val = examples_for_split(targets, vignettes, "val", DIMS)
    with pytest.raises(PipelineInputError, match="no validation pairs"):
        evaluate_scores(np.zeros((2, len(val))), seed_names=["a", "b"], val=val, val_pairs=pairs_for_split(pairs, "none"),
                        primary_dimension="effectiveness", penalty="std", lam=0.5, n_best_of=3, draws=5, seed=0)


def _params(**rm):
    return json.dumps({"data": DATA,
                       "reward": {"seeds": [0, 1, 2], "max_length": 128, **rm}, "seed": 1, "preset": "demo"})


def test_cli_missing_model_dir_exits_2(tmp_path, toy_files, capsys):
    rc = main(["evaluate-reward-models", "--models", str(tmp_path / "seed0"), "--targets", str(toy_files["targets"]),
               "--vignettes", str(toy_files["vignettes"]), "--pairs", str(toy_files["pairs"]),
               "--out", str(tmp_path / "m.json"), "--params", _params()])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.startswith("error:") and "does not exist" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "m.json").exists()


def test_cli_empty_train_split_and_unknown_seed_exit_2(tmp_path, toy_tables, toy_files, tiny_base, capsys):
    targets, _, _ = toy_tables
    empty = tmp_path / "targets.parquet"
    targets[targets["split"] != "train"].to_parquet(empty)
    common = ["--base-model", str(tiny_base), "--vignettes", str(toy_files["vignettes"]),
              "--pairs", str(toy_files["pairs"]), "--out", str(tmp_path / "seed0"), "--params", _params()]
    rc = main(["train-reward-model", "--targets", str(empty), "--seed", "0", *common])
    assert rc == 2 and "'train' split has no reappraisal" in capsys.readouterr().err
    rc = main(["train-reward-model", "--targets", str(toy_files["targets"]), "--seed", "7", *common])
    assert rc == 2 and "not among reward.seeds" in capsys.readouterr().err
    assert not (tmp_path / "seed0").exists()
