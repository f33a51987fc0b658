"""Split invariants on the demo pipeline's outputs, identical texts kept on one side of the split,
and the leakage check failing the run."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest

from reappraisal.cli import main as cli
from reappraisal.data.leakage import find_overlaps, ngrams, normalized_text
from reappraisal.data.leakage_io import run_checks
from reappraisal.data.split import assign_splits, build_pairs, identical_texts_summary, text_rank

from tests.workflow_utils import run_snakemake

#: The data section of the commands' ``--params`` (the ingestion is not theirs: no sources).
DATA = {"source": "bundled", "dimensions": ["effectiveness"], "primary_dimension": "effectiveness",
        "ingest": {"vignettes": [], "reappraisals": [], "ratings": []}}


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
    params = {"seed": 1, "data": DATA,
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


# ---------------------------------------------------------------------------------------------
# Identical texts under other ids: one side of the split, never a pair, never both sides
# ---------------------------------------------------------------------------------------------

SPLIT_ARGS = {"primary_dimension": "effectiveness", "val_fraction": 0.2, "heldout_author_types": ["gpt4"], "min_ratings": 3}


def targets_frame(rows: list[tuple[str, str, str]], author_types: dict[str, str] | None = None) -> pd.DataFrame:
    """Targets of (reappraisal_id, vignette_id, text) rows, each rated 3 times with a distinct mean z."""
    df = pd.DataFrame(rows, columns=["reappraisal_id", "vignette_id", "text"])
    df["author_type"] = [(author_types or {}).get(rid, "human") for rid in df["reappraisal_id"]]
    df["study"] = "1"
    df["z_effectiveness"] = np.linspace(-1.5, 1.5, len(df))[np.random.default_rng(0).permutation(len(df))]
    df["n_effectiveness"] = 3
    df["n_ratings"] = 3
    return df


def with_copies() -> pd.DataFrame:
    """Three scenarios of 10 reappraisals; a generic answer under 4 ids in every scenario (case and spacing
    differ), a text repeated inside v1, and a copy of a v2 text under a v3 id."""
    rows = [(f"{v}_{k}", v, f"Answer {k} written for scenario {v}.") for v in ("v1", "v2", "v3") for k in range(10)]
    rows += [("v1_g", "v1", "Just ignore it."), ("v2_g", "v2", "just  IGNORE it."), ("v3_g", "v3", " Just ignore it. "), ("v3_h", "v3", "Just ignore it.")]
    rows += [("v1_dup", "v1", "Answer 3 written for scenario v1."), ("v3_copy", "v3", "Answer 5 written for scenario v2.")]
    rows += [("g1", "v1", "A reference answer.")]
    return targets_frame(rows, {"g1": "gpt4"})


def sides_of_each_text(targets: pd.DataFrame) -> pd.Series:
    trained = targets[targets["split"].isin(["train", "val"])]
    return trained.groupby(trained["text"].map(normalized_text))["split"].nunique()


@pytest.mark.parametrize("seed", range(12))
def test_identical_texts_land_on_one_side_whatever_their_ids(seed):
    targets = assign_splits(with_copies(), ["v1", "v2", "v3"], seed=seed, **SPLIT_ARGS)
    assert (sides_of_each_text(targets) == 1).all()  # no text on both sides
    for vid in ("v1", "v2", "v3"):
        assert {"train", "val"} <= set(targets.loc[targets["vignette_id"] == vid, "split"])
    pairs = build_pairs(targets, primary_dimension="effectiveness", max_pairs_per_scenario=300, seed=seed)
    assert not (pairs["text_a"].map(normalized_text) == pairs["text_b"].map(normalized_text)).any()
    summary = identical_texts_summary(targets, "effectiveness")
    # groups: the generic answer (4 ids), v1's repeated text (2), v2's text copied into v3 (2)
    assert summary["groups"] == 3 and summary["reappraisals"] == 8 and summary["across_scenarios"] == 2
    # the one pair of identical texts within a scenario (v1_3, v1_dup) and the generic answer's two in v3
    assert sum(summary["pairs_dropped"].values()) == 2
    report = run_checks(targets, pd.DataFrame({"vignette_id": ["v1", "v2", "v3"], "text": "s", "pool": "train"}), 8, 0)
    assert report["val_train_copies"] == [] and report["answer_copies"] == [] and report["ok"]


def test_without_identical_texts_each_scenarios_val_is_its_lowest_ranked_texts():
    """Every text distinct: a scenario's val is its n_val texts first in the keyed-hash order of their content
    (no row order involved), and different seeds draw different val sets."""
    rows = [(f"{v}_{k:02d}", v, f"Distinct answer {k} for {v}.") for v in ("v1", "v2", "v3") for k in range(int(v[1]) * 7)]
    targets = targets_frame(rows)
    vals = set()
    for seed in range(5):
        got = assign_splits(targets, ["v1", "v2", "v3"], seed=seed, **SPLIT_ARGS)["split"]
        want = pd.Series("excluded", index=targets.index)
        for vid in ("v1", "v2", "v3"):
            ids = targets.index[targets["vignette_id"] == vid].to_numpy()
            ranked = sorted(ids, key=lambda i: text_rank(seed, vid, normalized_text(targets.loc[i, "text"])))
            n_val = min(max(1, int(round(0.2 * len(ids)))), len(ids) - 1)
            want[ranked[:n_val]], want[ranked[n_val:]] = "val", "train"
        pd.testing.assert_series_equal(got, want, check_names=False)
        vals.add(tuple(got.index[got == "val"]))
    assert len(vals) == 5


def test_a_scenario_whose_texts_all_sit_on_one_side_already_is_refused():
    rows = [(f"v1_{k}", "v1", f"Text {k}.") for k in range(10)] + [("v2_a", "v2", "Text 0."), ("v2_b", "v2", "TEXT 1.")]
    outcomes = []
    for seed in range(20):
        try:
            targets = assign_splits(targets_frame(rows), ["v1", "v2"], seed=seed, **SPLIT_ARGS)
        except ValueError as exc:
            assert "'v2'" in str(exc) and "earlier scenario" in str(exc)
            outcomes.append("refused")
        else:
            assert (sides_of_each_text(targets) == 1).all()
            outcomes.append("split")
    assert {"refused", "split"} == set(outcomes)


def test_split_stage_reports_what_was_merged_and_leakage_compares_val_with_train(tmp_path, capsys):
    """The stage's summary counts the groups of identical texts and the pairs dropped; a validation text that
    is a copy of a training text (targets not made by this split) fails the leakage check on one line."""
    targets = with_copies()
    vignettes = pd.DataFrame({"vignette_id": ["v1", "v2", "v3"], "text": ["a", "b", "c"], "emotion": "", "pool": "train"})
    ratings = pd.DataFrame(
        [("1", f"p{k}", rid, "effectiveness", 4.0, z + 0.1 * k) for rid, z in zip(targets["reappraisal_id"], targets["z_effectiveness"]) for k in (-1, 0, 1)],
        columns=["study", "rater_id", "reappraisal_id", "dimension", "rating", "z"],
    )
    paths = {n: tmp_path / f"{n}.parquet" for n in ("vignettes", "reappraisals", "ratings_z")}
    vignettes.to_parquet(paths["vignettes"])
    targets[["reappraisal_id", "vignette_id", "text", "author_type", "study"]].to_parquet(paths["reappraisals"])
    ratings.to_parquet(paths["ratings_z"])
    params = {"seed": 3, "data": DATA,
              "split": {"val_fraction": 0.2, "heldout_author_types": ["gpt4"], "max_pairs_per_scenario": 300, "min_ratings_per_reappraisal": 3}}
    out = {n: tmp_path / f"{n}.parquet" for n in ("targets", "pairs")}
    argv = ["split-reappraisals", "--ratings-z", paths["ratings_z"], "--reappraisals", paths["reappraisals"], "--vignettes", paths["vignettes"],
            "--targets", out["targets"], "--pairs", out["pairs"], "--summary", tmp_path / "split.json", "--params", json.dumps(params)]
    assert cli([str(a) for a in argv]) == 0
    assert "identical texts: 3 group(s) of 8 reappraisals kept on one side, 2 pair(s) of identical texts dropped" in capsys.readouterr().out
    summary = json.loads((tmp_path / "split.json").read_text())["identical_texts"]
    assert (summary["groups"], summary["reappraisals"], summary["across_scenarios"], sum(summary["pairs_dropped"].values())) == (3, 8, 2, 2)
    split = pd.read_parquet(out["targets"])
    assert (sides_of_each_text(split) == 1).all()

    # Hand-edited targets: one validation text becomes a copy of a training text.
    val_row = split.index[split["split"] == "val"][0]
    train_row = split.index[(split["split"] == "train") & (split["vignette_id"] != split.loc[val_row, "vignette_id"])][0]
    split.loc[val_row, "text"] = "  " + split.loc[train_row, "text"].upper()
    split.to_parquet(out["targets"])
    report_path = tmp_path / "leakage.json"
    argv = ["check-leakage", "--targets", out["targets"], "--vignettes", paths["vignettes"], "--out", report_path, "--params", json.dumps({"leakage": {"ngram": 8, "max_shared_ngrams": 0}})]
    assert cli([str(a) for a in argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert f"validation {split.loc[val_row, 'reappraisal_id']} = training {split.loc[train_row, 'reappraisal_id']} (identical text" in err[0]
    failed = json.loads((tmp_path / "leakage_failed.json").read_text())
    assert [(h["val_id"], h["train_id"]) for h in failed["val_train_copies"]] == [(split.loc[val_row, "reappraisal_id"], split.loc[train_row, "reappraisal_id"])]
    assert not report_path.exists()


def test_a_short_heldout_answer_copied_into_training_is_a_leak():
    """Below the n-gram length the n-gram check sees nothing; the identity check does."""
    targets = assign_splits(with_copies(), ["v1", "v2", "v3"], seed=1, **SPLIT_ARGS)
    trained = targets.index[targets["split"] == "train"][0]
    targets.loc[targets["reappraisal_id"] == "g1", "text"] = targets.loc[trained, "text"]
    report = run_checks(targets, pd.DataFrame({"vignette_id": ["v1"], "text": "s", "pool": "train"}), 8, 0)
    assert report["answer_leaks"] == [] and not report["ok"]
    assert [(h["train_id"], h["heldout_id"]) for h in report["answer_copies"]] == [(targets.loc[trained, "reappraisal_id"], "g1")]


def test_demo_split_keeps_identical_texts_on_one_side(targets, data_pipeline):
    """The demo repeats generic answers across scenarios (18 texts under 46 ids): none straddles the split."""
    assert (sides_of_each_text(targets) == 1).all()
    summary = json.loads((data_pipeline / "results/data/split.json").read_text())["identical_texts"]
    assert summary == {**summary, "groups": 18, "reappraisals": 46, "across_scenarios": 18, "pairs_dropped": {"train": 0, "val": 0}}
    leakage = json.loads((data_pipeline / "results/data/leakage.json").read_text())
    assert leakage["val_train_copies"] == [] and leakage["ok"]


def test_a_scenario_left_without_texts_by_too_few_ratings_says_so_and_names_the_setting():
    rows = [(f"v1_{k}", "v1", f"Text {k}.") for k in range(10)] + [(f"v2_{k}", "v2", f"Other {k}.") for k in range(3)]
    targets = targets_frame(rows)
    targets.loc[targets["vignette_id"] == "v2", "n_effectiveness"] = 1  # rated once each, below the minimum
    from reappraisal.data.split import TooFewTexts

    with pytest.raises(TooFewTexts) as info:
        assign_splits(targets, ["v1", "v2"], seed=0, **{**SPLIT_ARGS, "min_ratings": 2})
    message = str(info.value)
    assert "'v2' has 0 usable" in message and "3 of its 3 human reappraisal(s) have fewer than 2" in message
    assert info.value.key == "split.min_ratings_per_reappraisal"
