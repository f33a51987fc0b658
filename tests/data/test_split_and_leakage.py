"""Split invariants on the demo pipeline's outputs, and the leakage check failing the run."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from reappraisal.data.leakage import find_overlaps, ngrams

from tests.workflow_utils import run_snakemake


@pytest.fixture(scope="module")
def targets(data_pipeline):
    return pd.read_parquet(data_pipeline / "data/processed/targets.parquet")


@pytest.fixture(scope="module")
def pairs(data_pipeline):
    return pd.read_parquet(data_pipeline / "data/processed/pairs.parquet")


def test_no_reappraisal_in_two_splits(targets):
    assert targets["reappraisal_id"].is_unique
    assert set(targets["split"]) <= {"train", "val", "heldout", "excluded"}


def test_no_gpt_or_opponent_text_in_train_or_val(targets):
    trainval = targets[targets["split"].isin(["train", "val"])]
    assert set(trainval["author_type"]) == {"human"}
    heldout = targets[targets["author_type"] != "human"]
    assert (heldout["split"] == "heldout").all()
    assert {"gpt4", "deepseek-r1", "qwen2.5-72b"} <= set(heldout["author_type"])
    # and no held-out text reappears verbatim on the training side
    assert not set(heldout["text"]) & set(trainval["text"])


def test_every_training_scenario_in_train_and_val(targets, data_pipeline):
    vign = pd.read_parquet(data_pipeline / "data/interim/vignettes.parquet")
    train_pool = set(vign.loc[vign["pool"] == "train", "vignette_id"])
    for split in ("train", "val"):
        assert set(targets.loc[targets["split"] == split, "vignette_id"]) == train_pool
    val_share = (targets["split"] == "val").sum() / targets["split"].isin(["train", "val"]).sum()
    assert 0.15 <= val_share <= 0.25


def test_pairs_stay_within_scenario_and_split(targets, pairs):
    lookup = targets.set_index("reappraisal_id")
    for side in ("a", "b"):
        assert (lookup.loc[pairs[f"id_{side}"], "vignette_id"].to_numpy() == pairs["vignette_id"].to_numpy()).all()
        assert (lookup.loc[pairs[f"id_{side}"], "split"].to_numpy() == pairs["split"].to_numpy()).all()
    assert (pairs["margin"] > 0).all()
    winner_z = pairs["z_a"].where(pairs["preferred"] == "A", pairs["z_b"])
    loser_z = pairs["z_b"].where(pairs["preferred"] == "A", pairs["z_a"])
    assert (winner_z > loser_z).all()
    # A/B order is randomised: the preferred side is not always the same slot
    assert 0.35 < (pairs["preferred"] == "A").mean() < 0.65


def test_ngram_overlap_unit():
    assert ngrams("One two three four", 3) == {("one", "two", "three"), ("two", "three", "four")}
    hits = find_overlaps({"t1": "a b c d e f g h i", "t2": "nothing shared here at all"}, {"h1": "x a b c d e f g h y"}, n=8)
    assert [(h["train_id"], h["heldout_id"], h["shared"]) for h in hits] == [("t1", "h1", 1)]


def test_planted_leak_fails_the_run_naming_it(data_pipeline, tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(data_pipeline, repo, symlinks=True, ignore=shutil.ignore_patterns(".snakemake"))
    # Copy a held-out GPT-4 answer into one human training reappraisal of the bundled data.
    gpt = pd.read_csv(repo / "data/demo/gpt4_reappraisals.csv")
    study1 = pd.read_csv(repo / "data/demo/study1_reappraisals.csv")
    leaked_id = study1.loc[0, "reappraisal_id"]
    study1.loc[0, "response"] = study1.loc[0, "response"] + " " + gpt.loc[0, "text"]
    study1.to_csv(repo / "data/demo/study1_reappraisals.csv", index=False)
    proc = run_snakemake(repo, "--cores", "1", "results/data/leakage.json", check=False)
    assert proc.returncode != 0
    combined = proc.stdout + proc.stderr
    assert "leak" in combined and gpt.loc[0, "reappraisal_id"] in combined
    assert not (repo / "results/data/leakage.json").exists()
    failed = json.loads((repo / "results/data/leakage_failed.json").read_text())
    names = {(h["train_id"], h["heldout_id"]) for h in failed["answer_leaks"]}
    # the leaked text may land in train or val; either way the pair is named
    assert (leaked_id, gpt.loc[0, "reappraisal_id"]) in names


def test_demo_split_warns_about_nothing(data_pipeline):
    summary = json.loads((data_pipeline / "results/data/split.json").read_text())
    assert summary["warnings"] == []


def test_split_warns_about_scenarios_left_without_val_pairs_or_heldout_answers(tmp_path, capsys):
    """v1 is fine; v2 has two usable human reappraisals (one lands in val: no val pair) and no
    held-out answer; the OOD scenario o1 has an opponent answer; o2 has none."""
    from reappraisal.data.split_io import cli_main

    vignettes = pd.DataFrame({"vignette_id": ["v1", "v2", "o1", "o2"], "text": ["a", "b", "c", "d"], "emotion": "", "pool": ["train", "train", "ood", "ood"]})
    reapp = pd.DataFrame(
        [(f"h1_{i}", "v1", f"text v1 {i}", "human", "1") for i in range(10)]
        + [("h2_0", "v2", "text v2 0", "human", "1"), ("h2_1", "v2", "text v2 1", "human", "1")]
        + [("g1", "v1", "gpt text", "gpt4", "1"), ("q1", "o1", "qwen text", "qwen2.5-72b", "")],
        columns=["reappraisal_id", "vignette_id", "text", "author_type", "study"],
    )
    ratings = pd.DataFrame(
        [("1", f"p{k}", rid, "effectiveness", 4.0, float((i * 7 + k) % 5) - 2.0) for i, rid in enumerate(reapp["reappraisal_id"]) for k in range(3)],
        columns=["study", "rater_id", "reappraisal_id", "dimension", "rating", "z"],
    )
    paths = {n: tmp_path / f"{n}.parquet" for n in ("vignettes", "reappraisals", "ratings_z")}
    vignettes.to_parquet(paths["vignettes"]), reapp.to_parquet(paths["reappraisals"]), ratings.to_parquet(paths["ratings_z"])
    params = {"seed": 1, "data": {"dimensions": ["effectiveness"], "primary_dimension": "effectiveness"},
              "split": {"val_fraction": 0.2, "heldout_author_types": ["gpt4"], "max_pairs_per_scenario": 300, "min_ratings_per_reappraisal": 3}}
    summary_path = tmp_path / "checks" / "split.json"
    argv = ["--ratings-z", paths["ratings_z"], "--reappraisals", paths["reappraisals"], "--vignettes", paths["vignettes"],
            "--targets", tmp_path / "t.parquet", "--pairs", tmp_path / "p.parquet", "--summary", summary_path, "--params", json.dumps(params)]
    assert cli_main([str(a) for a in argv]) == 0
    warnings = json.loads(summary_path.read_text())["warnings"]
    assert [(w["scenario"], w["check"]) for w in warnings] == [("o2", "no_heldout_answers"), ("v2", "no_val_pairs"), ("v2", "no_heldout_answers")]
    assert all(w["message"] for w in warnings)
    err = capsys.readouterr().err
    assert err.count("warning: scenario") == 3 and "'v2' (no_val_pairs)" in err
