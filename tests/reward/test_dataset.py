import numpy as np
import pytest

from reappraisal.errors import DataValidationError, PipelineInputError
from reappraisal.reward.dataset import examples_for_split
from reappraisal.input_tables import read_table

from .conftest import DIMS


def test_train_split_joins_scenarios_and_keeps_nan_targets(toy_tables):
    targets, vignettes, _ = toy_tables
    t = targets.copy()
    first = t.index[t["split"] == "train"][0]
    t.loc[first, "z_novelty"] = np.nan  # one unrated dimension: kept, masked in the loss
    ex = examples_for_split(t, vignettes, "train", DIMS)
    assert len(ex) == (targets["split"] == "train").sum()
    assert np.isnan(ex.targets).sum() == 1
    assert ex.scenarios[0] == vignettes.set_index("vignette_id").loc[ex.vignette_ids[0], "text"]
    assert ex.author_types == {"human": len(ex)}


def test_fully_unrated_rows_are_dropped_and_counted(toy_tables):
    targets, vignettes, _ = toy_tables
    t = targets.copy()
    first = t.index[t["split"] == "train"][0]
    t.loc[first, [f"z_{d}" for d in DIMS]] = np.nan
    ex = examples_for_split(t, vignettes, "train", DIMS)
    assert ex.n_dropped_unrated == 1 and t.loc[first, "reappraisal_id"] not in ex.reappraisal_ids


def test_empty_train_split_is_a_clear_error(toy_tables):
    targets, vignettes, _ = toy_tables
    t = targets[targets["split"] != "train"]
    with pytest.raises(PipelineInputError, match="'train' split has no reappraisal"):
        examples_for_split(t, vignettes, "train", DIMS, where="targets.parquet")


def test_unknown_scenario_and_missing_target_column(toy_tables):
    targets, vignettes, _ = toy_tables
    with pytest.raises(DataValidationError, match="unknown scenario"):
        examples_for_split(targets, vignettes[vignettes["vignette_id"] != "t1"], "train", DIMS)
    with pytest.raises(DataValidationError, match="z_empathy"):
        examples_for_split(targets.drop(columns=["z_empathy"]), vignettes, "train", DIMS)


def test_single_reappraisal_scenario_is_a_valid_training_example(toy_tables):
    targets, vignettes, _ = toy_tables
    t = targets.copy()
    keep = t[(t["vignette_id"] == "t3") & (t["split"] == "train")].index[0]
    t = t[(t["vignette_id"] != "t3") | (t.index == keep)]
    ex = examples_for_split(t, vignettes, "train", DIMS)
    assert ex.vignette_ids.count("t3") == 1


def test_fingerprint_tracks_the_data(toy_tables):
    targets, vignettes, _ = toy_tables
    a = examples_for_split(targets, vignettes, "train", DIMS)
    t = targets.copy()
    t.loc[t["split"] == "train", "z_effectiveness"] += 0.1
    assert a.fingerprint() == examples_for_split(targets, vignettes, "train", DIMS).fingerprint()
    assert a.fingerprint() != examples_for_split(t, vignettes, "train", DIMS).fingerprint()


def test_read_table_errors(tmp_path, toy_files):
    with pytest.raises(PipelineInputError, match="not found"):
        read_table(tmp_path / "nope.parquet", ["a"])
    with pytest.raises(DataValidationError, match="missing column"):
        read_table(toy_files["vignettes"], ["vignette_id", "nope"])
