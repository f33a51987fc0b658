"""The bad-input catalogue of the ingest stage: every case fails with one line naming the file and
line (or column), or the config key, and leaves none of the stage's outputs behind.

The cases marked "once silently wrong" gave wrong tables without a word before: a header
with two columns of one name (the first was used), a rating source without a study (raters
of all studies pooled under study ''), a text field over the csv module's 128 KiB limit
(reported as malformed with no line), a training scenario without human reappraisals
(failed two stages later naming an interim parquet), a semicolon-delimited file.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from tests.data.ingest_fixtures import DATA_CFG, GOOD, cfg_with, run_ingest, write_raw

RATINGS_SRC = "ingest.ratings.0"

LONG_CFG = cfg_with(
    f"{RATINGS_SRC}",
    {
        "files": "ratings.csv",
        "layout": "long",
        "study": "1",
        "scale": [1, 7],
        "columns": {"rater_id": "rater", "reappraisal_id": "rid", "dimension": "item", "rating": "value"},
        "dimension_labels": {"Effectiveness": "effectiveness", "Empathy": "empathy"},
    },
)
LONG_RATINGS = "rater,rid,item,value\np1,r1,Effectiveness,5\np1,r1,Empathy,4\np1,r2,Warmth,3\n"

MATRIX_CFG = cfg_with(
    f"{RATINGS_SRC}",
    {
        "files": "ratings.csv",
        "layout": "matrix",
        "study": "1",
        "scale": [1, 7],
        "columns": {"rater_id": "ResponseId"},
        "items": {"pattern": r"(?P<reappraisal_id>r\d+)_(?P<dimension>eff|emp)"},
        "dimension_labels": {"eff": "effectiveness", "emp": "empathy"},
    },
)
MATRIX_RATINGS = "ResponseId,Finished,r1_eff,r1_emp,r2_eff\nR_1,1,5,4,\nR_2,1,,3,6\n"

DISTINCT_CFG = cfg_with(
    "ingest.vignettes",
    [{"files": "reapp.csv", "distinct": True, "pool": "train", "columns": {"vignette_id": "scen", "text": "scen_text"}}],
)
DISTINCT_CFG = cfg_with("ingest.reappraisals.0.columns", {"reappraisal_id": "rid", "vignette_id": "scen", "text": "answer"}, DISTINCT_CFG)
REAPP_WITH_SCENARIOS = (
    "rid,scen,scen_text,answer\nr1,v1,Your friend ignored you.,Maybe.\nr2,v1,Your friend ignored you.,Ask.\n"
    "r3,v2,Your boss yelled.,Stress.\nr4,v2,Your boss yelled at you loudly.,HR.\n"
)

BAD_INPUTS = [
    # (id, file overrides, config, fragments the one error line must contain)
    # -- reading files
    ("malformed_csv_unclosed_quote", {"reapp.csv": 'rid,scen,answer\nr1,v1,"unterminated\nr2,v1,ok\n'}, DATA_CFG, ["reapp.csv, line 2", "malformed"]),
    ("invalid_utf8", {"reapp.csv": b"rid,scen,answer\nr1,v1,Maybe.\nr2,v1,caf\xe9 \xff\nr3,v2,x\n"}, DATA_CFG, ["reapp.csv, line 3", "UTF-8", "data.ingest.reappraisals[0].encoding"]),
    ("empty_file", {"vignettes.csv": ""}, DATA_CFG, ["vignettes.csv", "empty"]),
    ("unknown_encoding", {}, cfg_with(f"{RATINGS_SRC}.encoding", "utf-9"), ["data.ingest.ratings[0].encoding", "utf-9"]),
    # once silently wrong: a semicolon-delimited file was "Expected 1 fields"
    ("semicolon_delimited_undeclared", {"ratings.csv": "rater;rid;eff;emp\np1;r1;5;4\n"}, DATA_CFG, ["ratings.csv, line 1", "delimiter: ';'", "data.ingest.ratings[0].delimiter"]),
    ("row_with_too_few_fields", {"ratings.csv": "rater,rid,eff,emp\np1,r1,5,4\np1,r2,3\n"}, DATA_CFG, ["ratings.csv, line 3", "3 field(s)", "has 4"]),
    # once silently wrong: the second of two same-named columns became 'eff.1' and the first was used
    ("duplicate_header_column", {"ratings.csv": "rater,rid,eff,emp,eff\np1,r1,1,4,5\n"}, DATA_CFG, ["ratings.csv, line 1", "'eff' appears 2 times", "positions 3 and 5"]),
    # once silently wrong: over 128 KiB was "malformed CSV" with no line
    ("field_over_declared_limit", {"reapp.csv": "rid,scen,answer\nr1,v1,a\nr2,v1," + "x" * 2000 + "\nr3,v2,b\nr4,v2,c\n"},
     cfg_with("ingest.reappraisals.0.max_field_chars", 1000), ["reapp.csv, line 3", "column 'answer'", "limit of 1000", "max_field_chars"]),
    ("corrupt_parquet", {"ratings.parquet": b"PAR1 not really"}, cfg_with(f"{RATINGS_SRC}.files", "ratings.parquet", cfg_with(f"{RATINGS_SRC}.format", "parquet")), ["ratings.parquet", "Parquet"]),
    ("skip_rows_beyond_file", {}, cfg_with(f"{RATINGS_SRC}.skip_rows_after_header", 9), ["ratings.csv", "skip_rows_after_header"]),
    # -- the mapping
    ("missing_column", {"ratings.csv": "rater,rid,eff\np1,r1,5\n"}, DATA_CFG, ["ratings.csv", "'emp'", "missing column", "data.ingest.ratings[0].dimensions.empathy"]),
    ("mapping_to_missing_file", {}, cfg_with(f"{RATINGS_SRC}.files", "nothere_*.csv"), ["data.ingest.ratings[0].files", "matches no file"]),
    ("mapping_unknown_dimension", {}, cfg_with(f"{RATINGS_SRC}.dimensions", {"warmth": "eff"}), ["data.ingest.ratings[0].dimensions", "warmth"]),
    ("mapping_escapes_raw_dir", {}, cfg_with("ingest.vignettes.0.files", "../vignettes.csv"), ["data.ingest.vignettes[0].files"]),
    # once silently wrong: raters of all studies were pooled under study '' and z-scored together
    ("rating_source_without_study", {}, cfg_with(f"{RATINGS_SRC}.study", None), ["config key 'data.ingest.ratings[0]'", "declare its study"]),
    ("empty_study_in_study_column", {"ratings.csv": "study,rater,rid,eff,emp\n1,p1,r1,5,4\n ,p2,r1,6,6\n"},
     cfg_with(f"{RATINGS_SRC}.columns.study", "study", cfg_with(f"{RATINGS_SRC}.study", None)), ["ratings.csv, line 3", "study is empty", "'study'"]),
    ("filter_on_missing_column", {}, cfg_with(f"{RATINGS_SRC}.filters", [{"column": "Finished", "equals": 1}]), ["ratings.csv", "'Finished'", "data.ingest.ratings[0].filters[0].column"]),
    ("filter_keeps_no_row", {"ratings.csv": "rater,rid,eff,emp,Finished\np1,r1,5,4,True\np2,r1,6,6,True\n"},
     cfg_with(f"{RATINGS_SRC}.filters", [{"column": "Finished", "equals": 1}]), ["data.ingest.ratings[0].filters[0]", "keeps no row", "'True'"]),
    ("hash_id_from_blank_cell", {"reapp.csv": "rid,scen,answer\nr1,v1,Maybe.\nr2,v1,\nr3,v2,Stress.\nr4,v2,HR.\n"},
     cfg_with("ingest.reappraisals.0.columns.reappraisal_id", {"hash": ["answer"]}), ["reapp.csv, line 3", "blank cell", "'answer'"]),
    ("distinct_scenario_with_two_texts", {"reapp.csv": REAPP_WITH_SCENARIOS}, DISTINCT_CFG, ["reapp.csv, line 5", "'v2'", "reapp.csv, line 4"]),
    ("long_unknown_dimension_label", {"ratings.csv": LONG_RATINGS}, LONG_CFG, ["ratings.csv, line 4", "'Warmth'", "data.ingest.ratings[0].dimension_labels"]),
    ("long_layout_without_rating_column", {"ratings.csv": LONG_RATINGS}, cfg_with(f"{RATINGS_SRC}.columns.rating", None, LONG_CFG), ["data.ingest.ratings[0].columns", "'rating'"]),
    ("matrix_pattern_matches_nothing", {"ratings.csv": MATRIX_RATINGS}, cfg_with(f"{RATINGS_SRC}.items.pattern", r"(?P<reappraisal_id>Q\d+)_(?P<dimension>eff)", MATRIX_CFG), ["data.ingest.ratings[0].items.pattern", "matches no column"]),
    ("matrix_pattern_without_id_group", {"ratings.csv": MATRIX_RATINGS}, cfg_with(f"{RATINGS_SRC}.items.pattern", r"(r\d+)_(?P<dimension>eff|emp)", MATRIX_CFG), ["data.ingest.ratings[0].items.pattern", "reappraisal_id"]),
    ("matrix_two_columns_one_item", {"ratings.csv": "ResponseId,r1_eff,r1_EFF\nR_1,5,4\n"},
     cfg_with(f"{RATINGS_SRC}.dimension_labels", {"eff": "effectiveness", "EFF": "effectiveness"}, cfg_with(f"{RATINGS_SRC}.items.pattern", r"(?P<reappraisal_id>r\d+)_(?P<dimension>eff|EFF)", MATRIX_CFG)),
     ["ratings.csv, line 1", "'r1_eff' and 'r1_EFF'", "effectiveness"]),
    # -- the values
    ("rating_not_a_number", {"ratings.csv": "rater,rid,eff,emp\np1,r1,NA,4\n"}, DATA_CFG, ["ratings.csv, line 2, column 'eff'", "'NA'", "missing_values"]),
    ("rating_out_of_scale", {"ratings.csv": "rater,rid,eff,emp\np1,r1,5,4\np1,r2,9,2\n"}, DATA_CFG, ["ratings.csv, line 3, column 'eff'", "outside the declared scale", "data.ingest.ratings[0].scale"]),
    ("matrix_rating_out_of_scale", {"ratings.csv": "ResponseId,Finished,r1_eff,r1_emp,r2_eff\nR_1,1,5,4,\nR_2,1,,8,6\n"}, MATRIX_CFG, ["ratings.csv, line 3, column 'r1_emp'", "outside"]),
    ("duplicate_rating", {"ratings.csv": "rater,rid,eff,emp\np1,r1,5,4\np1,r1,3,2\n"}, DATA_CFG, ["ratings.csv, line 3", "duplicate"]),
    ("unknown_scenario", {"reapp.csv": "rid,scen,answer\nr1,v1,Maybe.\nr2,v9,You could.\nr3,v2,Stress.\nr4,v2,HR.\n"}, DATA_CFG, ["reapp.csv, line 3", "'v9'"]),
    ("unknown_reappraisal", {"ratings.csv": "rater,rid,eff,emp\np1,r1,5,4\np1,r7,3,2\n"}, DATA_CFG, ["ratings.csv, line 3", "'r7'"]),
    ("empty_text", {"reapp.csv": "rid,scen,answer\nr1,v1,Maybe.\nr2,v1,   \nr3,v2,Stress.\nr4,v2,HR.\n"}, DATA_CFG, ["reapp.csv, line 3", "empty"]),
    ("duplicate_reappraisal_id", {"reapp.csv": "rid,scen,answer\nr1,v1,Maybe.\nr1,v1,Again.\nr3,v2,x\nr4,v2,y\n"}, DATA_CFG, ["reapp.csv, line 3", "duplicate"]),
    ("bad_pool", {"vignettes.csv": "vignette_id,text,emotion,pool\nv1,a,sadness,train\nv2,b,anger,testing\n"}, DATA_CFG, ["vignettes.csv, line 3", "pool"]),
    # once silently wrong: passed ingest and failed at the split, naming an interim parquet
    ("training_scenario_without_human_reappraisal", {"vignettes.csv": GOOD["vignettes.csv"] + "v3,Your neighbour is loud.,anger,train\n"}, DATA_CFG, ["vignettes.csv, line 4", "'v3'", "0 human reappraisal"]),
]


def test_catalogue_has_more_than_twenty_cases():
    assert len(BAD_INPUTS) > 20 and len({c[0] for c in BAD_INPUTS}) == len(BAD_INPUTS)


@pytest.mark.parametrize("case_id,files,cfg,fragments", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_fails_with_one_clear_line_and_no_output(tmp_path, capsys, case_id, files, cfg, fragments):
    raw = write_raw(tmp_path, files)
    code, err, out = run_ingest(tmp_path, raw, cfg, capsys)
    assert code == 2
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line, got: {err!r}"
    assert lines[0].startswith("error: ")
    for fragment in fragments:
        assert fragment in lines[0], f"{fragment!r} not in {lines[0]!r}"
    leftovers = [p for d in (out, tmp_path / "checks") if d.exists() for p in d.iterdir()]
    assert leftovers == [], f"partial output left behind: {leftovers}"


def test_blank_and_coded_rating_cells_are_counted_not_silently_dropped(tmp_path, capsys):
    # 2 blank cells and 2 cells holding declared missing codes: 4 of the 10 cells are not ratings.
    ratings = "rater,rid,eff,emp\np1,r1,5,\np1,r2,-99,2\np2,r1,6,6\np2,r3,,NA\np2,r4,1,2\n"
    cfg = cfg_with(f"{RATINGS_SRC}.missing_values", ["NA", -99])
    code, err, out = run_ingest(tmp_path, write_raw(tmp_path, {"ratings.csv": ratings}), cfg, capsys)
    assert code == 0, err
    table = pd.read_parquet(out / "ratings.parquet")
    assert len(table) == 6
    checks = json.loads((tmp_path / "checks" / "ingest.json").read_text())
    assert checks["blank_rating_cells"] == 4
    assert checks["missing_code_cells"] == 2
    (source,) = [s for s in checks["sources"] if s["key"] == "data.ingest.ratings[0]"]
    assert source == {**source, "file": "ratings.csv", "rows_read": 5, "ratings": 6, "blank_rating_cells": 4}
    # a declared code that is not a blank elsewhere is never read as a rating
    assert not ((table["reappraisal_id"] == "r2") & (table["dimension"] == "effectiveness")).any()
