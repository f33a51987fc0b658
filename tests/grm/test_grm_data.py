"""Pairs in both orders, judge traces (templated and teacher), references, and bad input."""

from __future__ import annotations

import pandas as pd
import pytest

from reappraisal.errors import DataValidationError, PipelineInputError
from reappraisal.grm.pairs import both_orders, select_pairs
from reappraisal.grm.scorer import median_references
from reappraisal.grm.traces import split_trace, teacher_traces, templated_rationale
from reappraisal.grm.train_io import check_train_only, sft_rows

from .conftest import DATA, DIMENSIONS, grm_settings


def test_both_orders_swaps_slots_and_the_correct_letter(tables):
    pairs = select_pairs(tables["pairs"], split="train", delta=1.0)
    items = both_orders(pairs)
    assert len(items) == 2 * len(pairs)
    ab, ba = items.iloc[0], items.iloc[1]
    assert (ab["order"], ba["order"]) == ("AB", "BA") and ab["pair_id"] == ba["pair_id"]
    assert ab["first"] == ba["second"] and ab["second"] == ba["first"]
    assert {ab["correct"], ba["correct"]} == {"A", "B"}
    assert ab["correct"] == pairs.iloc[0]["preferred"]
    assert (items["margin"] >= 1.0).all()


def test_delta_that_leaves_no_pairs_is_a_clear_error(tables):
    with pytest.raises(PipelineInputError, match=r"grm\.delta.*leaves no clearly separated 'train' pairs"):
        select_pairs(tables["pairs"], split="train", delta=50.0)
    with pytest.raises(PipelineInputError, match="leaves no clearly separated"):
        sft_rows(tables["pairs"], tables["targets"], grm=grm_settings(delta=50.0), data=DATA, seed=0)


def test_pairs_missing_columns_is_a_clear_error(tables):
    with pytest.raises(DataValidationError, match="missing column"):
        select_pairs(tables["pairs"].drop(columns=["preferred"]), split="train", delta=1.0)


def test_templated_rationale_names_the_human_ratings():
    text = templated_rationale(
        {"empathy": 0.9, "novelty": 0.0, "specificity": float("nan")},
        {"empathy": 0.1, "novelty": 0.05, "specificity": 1.0},
        dimensions=DIMENSIONS, primary="effectiveness", correct="B",
    )
    assert text == "Effectiveness B; empathy A; novelty even."


def test_templated_traces_cover_both_orders_of_separated_train_pairs(tables):
    rows, info = sft_rows(tables["pairs"], tables["targets"], grm=grm_settings(sft={"max_pairs": None}),
                          data=DATA, seed=0)
    separated = select_pairs(tables["pairs"], split="train", delta=1.0)
    assert info["source"] == "templated" and len(rows) == 2 * len(separated)
    assert rows["reasoning"].str.startswith("Effectiveness ").all()
    first_letter = rows["reasoning"].str.slice(14, 15)
    assert (first_letter == rows["correct"]).all()
    # Train-split reappraisals only.
    split = dict(zip(tables["targets"]["reappraisal_id"], tables["targets"]["split"]))
    assert {split[i] for i in pd.concat([rows["first_id"], rows["second_id"]])} == {"train"}


def test_teacher_traces_keep_correct_ones_and_count_the_rest(tables):
    train = tables["pairs"][tables["pairs"]["split"] == "train"]
    items = both_orders(train)
    first, second = items.iloc[0], items.iloc[1]
    traces = pd.DataFrame({
        "pair_id": [first["pair_id"], second["pair_id"]],
        "order": [first["order"], second["order"]],
        "trace": [f"<think>Good reasoning.</think>\nANSWER: {first['correct']}",
                  f"Wrong one.\nANSWER: {'A' if second['correct'] == 'B' else 'B'}"],
    })
    kept, dropped = teacher_traces(items, traces, where="traces.csv")
    assert len(kept) == 1 and dropped == 1
    assert kept.iloc[0]["reasoning"] == "Good reasoning."
    assert split_trace("x\nANSWER: (B).") == ("x", "B")


def test_traces_file_with_wrong_columns_is_a_clear_error(tables):
    bad = pd.DataFrame({"id": ["p"], "text": ["ANSWER: A"]})
    with pytest.raises(DataValidationError, match=r"traces\.csv: missing column\(s\) \['pair_id', 'order', 'trace'\]"):
        sft_rows(tables["pairs"], tables["targets"], grm=grm_settings(), data=DATA, seed=0, traces=bad,
                 traces_where="traces.csv")


def test_traces_naming_a_heldout_pair_are_refused(tables):
    val = tables["pairs"][tables["pairs"]["split"] == "val"].iloc[0]
    traces = pd.DataFrame({"pair_id": [val["pair_id"]], "order": ["AB"], "trace": ["ANSWER: A"]})
    items = both_orders(tables["pairs"][tables["pairs"]["split"] == "train"])
    with pytest.raises(PipelineInputError, match="traces may only cover train-split pairs"):
        teacher_traces(items, traces, where="traces.csv")
    bad_order = traces.assign(order="XY")
    with pytest.raises(DataValidationError, match="'order' must be 'AB' or 'BA'"):
        teacher_traces(items, bad_order, where="traces.csv")


def test_training_pairs_must_be_train_split_reappraisals(tables):
    pairs = tables["pairs"][tables["pairs"]["split"] == "train"].copy()
    targets = tables["targets"].copy()
    targets.loc[targets["reappraisal_id"] == pairs["id_a"].iloc[0], "split"] = "val"
    with pytest.raises(PipelineInputError, match="the GRM trains on train only"):
        check_train_only(pairs, targets)


def test_median_reference_is_the_middle_train_human(tables):
    targets, vignettes = tables["targets"], tables["vignettes"]
    refs = median_references(targets, vignettes, "effectiveness")
    assert set(refs) == {"v1", "v2", "v3"}
    pool = targets[(targets["vignette_id"] == "v1") & (targets["split"] == "train")]
    ordered = pool.sort_values(["z_effectiveness", "reappraisal_id"])
    assert refs["v1"] == ordered["text"].iloc[(len(ordered) - 1) // 2]
    # Val-split, non-human and unrated reappraisals never become references.
    extra = pd.DataFrame([{**targets.iloc[0].to_dict(), "reappraisal_id": "g1", "vignette_id": "v9",
                           "author_type": "gpt4"}])
    assert "v9" not in median_references(pd.concat([targets, extra]), vignettes, "effectiveness")
    with pytest.raises(DataValidationError, match="missing column"):
        median_references(targets.drop(columns=["z_effectiveness"]), vignettes, "effectiveness")
    with pytest.raises(PipelineInputError, match="no rated human train-split reappraisal"):
        median_references(targets.assign(split="val"), vignettes, "effectiveness")
