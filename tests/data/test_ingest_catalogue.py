"""The bad-input catalogue of the ingest stage: every case fails with one line naming the file and
line (or column), or the config key, and leaves none of the stage's outputs behind.

The cases marked "once silently wrong" gave wrong tables without a word before: a header
with two columns of one name (the first was used), a rating source without a study (raters
of all studies pooled under study ''), a text field over the csv module's 128 KiB limit
(reported as malformed with no line), a training scenario without human reappraisals
(failed two stages later naming an interim parquet), a semicolon-delimited file, a ratings
file holding only its header (its study vanished), a rating's own scenario column that
contradicted its reappraisal's scenario (ignored), a YAML boolean filter that never matched
the file's TRUE/FALSE (nothing dropped), UTF-16 without a byte-order mark (reported as a
delimiter problem), a 200,000-character header (echoed in full).

``MESSY_BUT_VALID`` are messy exports that must give correct tables: ids with stray spaces
(once two raters z-scored apart), booleans spelled by the survey tool, JSON records with
nested fields.
"""

from __future__ import annotations

import codecs
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

RATINGS_WITH_SCENARIO_CFG = cfg_with(f"{RATINGS_SRC}.columns.vignette_id", "scen")
NOT_FALSE_CFG = cfg_with(f"{RATINGS_SRC}.filters", [{"column": "Finished", "not_equals": False}])
EQUALS_TRUE_CFG = cfg_with(f"{RATINGS_SRC}.filters", [{"column": "Finished", "equals": True}])
HUGE = "Q" * 200_000  # a survey tool's question text as a header name

JSON_REAPP_CFG = cfg_with(
    "ingest.reappraisals.0",
    {
        "files": "reapp.json",
        "format": "json",
        "study": "1",
        "author_type": "human",
        "columns": {"reappraisal_id": "response.id", "vignette_id": "scenario", "text": "response.text"},
    },
)
JSONL_REAPP_CFG = cfg_with("ingest.reappraisals.0.files", "reapp.jsonl", cfg_with("ingest.reappraisals.0.format", "jsonl", JSON_REAPP_CFG))


def json_reappraisals(texts: dict[str, tuple[str, str]]) -> str:
    """A pretty-printed JSON array of nested reappraisal records, each over 7 lines: records start on lines 2, 9, 16, ..."""
    records = [{"scenario": scen, "response": {"id": rid, "text": text}} for rid, (scen, text) in texts.items()]
    return json.dumps(records, indent=2) + "\n"


JSON_TEXTS = {"r1": ("v1", "Maybe."), "r2": ("v1", "Ask."), "r3": ("v2", "Stress."), "r4": ("v2", "HR.")}

#: Study 1 with text ids beside a study 4 whose reappraisal ids are decimals (``4.10`` among them).
STUDY4_CFG = cfg_with("ingest.ratings", DATA_CFG["ingest"]["ratings"] + [
    {"files": "ratings4.csv", "study": "4", "scale": [1, 7], "columns": {"rater_id": "rater", "reappraisal_id": "rid"},
     "dimensions": {"effectiveness": "eff", "empathy": "emp"}}],
    cfg_with("ingest.reappraisals", DATA_CFG["ingest"]["reappraisals"] + [
        {"files": "reapp4.csv", "study": "4", "author_type": "human", "columns": {"reappraisal_id": "rid", "vignette_id": "scen", "text": "answer"}}]))
STUDY4_REAPP = "rid,scen,answer\n4.1,v1,Maybe.\n4.10,v1,Later.\n4.2,v2,Stress.\n4.11,v2,HR.\n"
#: Rater ids written month-day (3-12, 4-2), and study 1's second ratings file.
SECOND_RATINGS_CFG = cfg_with("ingest.ratings.0.files", "ratings*.csv")


BAD_INPUTS = [
    # (id, file overrides, config, fragments the one error line must contain)
    # -- reading files
    ("malformed_csv_unclosed_quote", {"reapp.csv": 'rid,scen,answer\nr1,v1,"unterminated\nr2,v1,ok\n'}, DATA_CFG, ["reapp.csv, line 2", "malformed"]),
    ("invalid_utf8", {"reapp.csv": b"rid,scen,answer\nr1,v1,Maybe.\nr2,v1,caf\xe9 \xff\nr3,v2,x\n"}, DATA_CFG, ["reapp.csv, line 3", "UTF-8", "data.ingest.reappraisals[0].encoding"]),
    ("empty_file", {"vignettes.csv": ""}, DATA_CFG, ["vignettes.csv", "empty"]),
    ("unknown_encoding", {}, cfg_with(f"{RATINGS_SRC}.encoding", "utf-9"), ["data.ingest.ratings[0].encoding", "utf-9"]),
    # once pointing the wrong way (missing_values): a decimal comma, and a Qualtrics export's two extra header rows
    ("decimal_comma_undeclared", {"ratings.csv": 'rater,rid,eff,emp\np1,r1,"4,5",4\np1,r2,3,2\n'}, DATA_CFG,
     ["ratings.csv, line 2", "'4,5'", "decimal comma", "data.ingest.ratings[0].decimal"]),
    ("survey_header_rows_undeclared", {"ratings.csv": 'rater,rid,eff,emp\nRater,Item,How effective?,How empathic?\n'
                                                      '{"ImportId":"r"},{"ImportId":"i"},{"ImportId":"QID1"},{"ImportId":"QID2"}\n'
                                                      'p1,r1,5,4\np1,r2,3,2\n'}, DATA_CFG,
     ["ratings.csv, line 2", "first 2 record(s)", "data.ingest.ratings[0].skip_rows_after_header: 2"]),
    # once pointing the wrong way (format: jsonl): an array wrapped in an object, which records: unwraps
    ("json_array_wrapped_in_an_object", {"reapp.json": json.dumps({"survey": "s1", "responses": json.loads(json_reappraisals(JSON_TEXTS))}, indent=2)},
     JSON_REAPP_CFG, ["reapp.json, line 1", "wraps it in an object", "data.ingest.reappraisals[0].records: responses"]),
    # once silently wrong: a spreadsheet turned the ratings' 4.10 into 4.1, an existing reappraisal's id
    ("ids_turned_into_numbers", {"reapp.csv": "rid,scen,answer\n4.1,v1,Maybe.\n4.10,v1,Ask.\n4.2,v2,Stress.\n4.3,v2,HR.\n",
                                 "ratings.csv": "rater,rid,eff,emp\np1,4.1,5,4\np2,4.1,3,2\np2,4.2,6,6\np1,4.3,2,3\n"},
     DATA_CFG, ["ratings.csv, line 2", "trailing zeros ('4.10')", "4.10 became 4.1", "as text"]),
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
    # once silently wrong: a UTF-16 file without BOM decoded as UTF-8 was "the header has one column ... delimiter"
    ("utf16_without_bom_read_as_utf8", {"ratings.csv": GOOD["ratings.csv"].encode("utf-16-le")}, DATA_CFG,
     ["ratings.csv, line 1", "not valid UTF-8", "NUL byte", "utf-16-le", "data.ingest.ratings[0].encoding"]),
    ("utf16_declared_without_bom", {"ratings.csv": GOOD["ratings.csv"].encode("utf-16-be")}, cfg_with(f"{RATINGS_SRC}.encoding", "utf-16"),
     ["ratings.csv, line 1", "no byte-order mark", "utf-16-be", "data.ingest.ratings[0].encoding"]),
    ("utf8_declared_utf16_le", {}, cfg_with(f"{RATINGS_SRC}.encoding", "utf-16-le"), ["ratings.csv, line 1", "not valid utf-16-le text", "is it UTF-8?"]),
    ("utf16_bom_declared_utf8", {"ratings.csv": codecs.BOM_UTF16_LE + GOOD["ratings.csv"].encode("utf-16-le")}, DATA_CFG,
     ["ratings.csv, line 1", "UTF-16 byte-order mark", "encoding: utf-16"]),
    # once silently wrong: a header-only ratings file made its whole study vanish
    ("ratings_file_with_header_only", {"ratings.csv": "rater,rid,eff,emp\n"}, DATA_CFG, ["error: ratings.csv:", "a header but no data rows", "data.ingest.ratings[0].files"]),
    ("header_only_after_skipped_rows", {"ratings.csv": "rater,rid,eff,emp\nquestion text,,,\n"}, cfg_with(f"{RATINGS_SRC}.skip_rows_after_header", 1),
     ["error: ratings.csv:", "no data rows after the 1 row(s)", "skip_rows_after_header"]),
    ("ratings_file_with_blank_ratings_only", {"ratings.csv": "rater,rid,eff,emp\np1,r1,,\np2,r1,NA,\n"}, cfg_with(f"{RATINGS_SRC}.missing_values", ["NA"]),
     ["error: ratings.csv:", "no rating in 2 row(s)", "missing_values"]),
    ("json_empty_array", {"reapp.json": "[]\n"}, JSON_REAPP_CFG, ["error: reapp.json:", "no records"]),
    # once echoed in full: a 200,000-character header name
    ("huge_header_is_quoted_clipped", {"ratings.csv": f"rater,rid,eff,{HUGE}\np1,r1,5,4\n"}, DATA_CFG,
     ["ratings.csv", "missing column 'emp'", "(200000 characters)"]),
    ("huge_value_is_quoted_clipped", {"ratings.csv": f"rater,rid,eff,emp\np1,r1,5,{HUGE}\n"}, DATA_CFG,
     ["ratings.csv, line 2, column 'emp'", "must be a number", "(200000 characters)"]),
    # -- JSON sources
    ("json_not_an_array", {"reapp.json": '{"scenario": "v1"}\n'}, JSON_REAPP_CFG, ["reapp.json, line 1", "one array of records", "format: jsonl"]),
    ("json_malformed_record", {"reapp.json": json_reappraisals(JSON_TEXTS).replace('"Ask."', '"Ask.,')}, JSON_REAPP_CFG, ["reapp.json, line 13", "malformed JSON"]),
    ("jsonl_malformed_record", {"reapp.jsonl": '{"scenario": "v1", "response": {"id": "r1", "text": "Maybe."}}\n{"scenario": "v1",\n'}, JSONL_REAPP_CFG,
     ["reapp.jsonl, line 2", "malformed JSON Lines"]),
    ("jsonl_record_not_an_object", {"reapp.jsonl": '{"scenario": "v1", "response": {"id": "r1", "text": "Maybe."}}\n["v1", "r2"]\n'}, JSONL_REAPP_CFG,
     ["reapp.jsonl, line 2", "must be a JSON object"]),
    ("json_missing_field_path", {"reapp.json": json_reappraisals(JSON_TEXTS)}, cfg_with("ingest.reappraisals.0.columns.text", "response.txt", JSON_REAPP_CFG),
     ["reapp.json", "missing column 'response.txt'", "'response.text'", "data.ingest.reappraisals[0].columns.text"]),
    # the second record (lines 9-15) has a blank text: the line it starts on is named
    ("json_record_line_is_named", {"reapp.json": json_reappraisals({**JSON_TEXTS, "r2": ("v1", " ")})}, JSON_REAPP_CFG, ["reapp.json, line 9", "'text' is empty"]),
    ("json_with_delimiter", {"reapp.json": json_reappraisals(JSON_TEXTS)}, cfg_with("ingest.reappraisals.0.delimiter", ";", JSON_REAPP_CFG),
     ["data.ingest.reappraisals[0].delimiter", "no delimiter"]),
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
    # once silently wrong: `not_equals: false` never matched a file's FALSE, so no unfinished response was dropped;
    # a boolean on a column of other spellings is refused, not left to match nothing
    ("boolean_filter_on_yes_no_column", {"ratings.csv": "rater,rid,eff,emp,Finished\np1,r1,5,4,Yes\np2,r1,6,6,No\n"}, NOT_FALSE_CFG,
     ["data.ingest.ratings[0].filters[0].not_equals", "YAML boolean false", "'Yes'", "line 2", "quote the file's own text"]),
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
    # an unknown id names the file using it and the files that should define it
    ("unknown_scenario", {"reapp.csv": "rid,scen,answer\nr1,v1,Maybe.\nr2,v9,You could.\nr3,v2,Stress.\nr4,v2,HR.\n"}, DATA_CFG,
     ["reapp.csv, line 3", "'v9'", "unknown scenario id 'v9': defined by no vignettes source (vignettes.csv)"]),
    ("unknown_reappraisal", {"ratings.csv": "rater,rid,eff,emp\np1,r1,5,4\np1,r7,3,2\n"}, DATA_CFG,
     ["ratings.csv, line 3", "'r7'", "unknown reappraisal id 'r7': defined by no reappraisals source (reapp.csv)"]),
    # an unknown id derived by hashing names the cell it was derived from
    ("unknown_hashed_reappraisal_id", {"ratings.csv": "rater,answer,eff,emp\np1,Maybe.,5,4\np1,Mabye.,3,2\n",
                                       "reapp.csv": "rid,scen,answer\nr1,v1,Maybe.\nr2,v1,You could.\nr3,v2,Stress.\nr4,v2,HR.\n"},
     cfg_with(f"{RATINGS_SRC}.columns.reappraisal_id", {"hash": ["answer"]},
              cfg_with("ingest.reappraisals.0.columns.reappraisal_id", {"hash": ["answer"]})),
     ["ratings.csv, line 3", "derived by hashing column 'answer' = 'Mabye.'", "reapp.csv"]),
    # once silently wrong: ids a spreadsheet turned into dates ('4-10' shown as '10-Apr') linked to nothing or to another row
    ("reappraisal_ids_turned_into_dates", {"reapp.csv": "rid,scen,answer\n4-32,v1,Maybe.\n10-Apr,v1,You could.\n4-33,v2,Stress.\n4-34,v2,HR.\n",
                                           "ratings.csv": "rater,rid,eff,emp\np1,4-32,5,4\np1,10-Apr,3,2\n"}, DATA_CFG,
     ["reapp.csv, line 3", "reappraisal_id '10-Apr' is a date among ids that are not ('4-32'", "export", "as text"]),
    ("rating_ids_turned_into_dates", {"ratings.csv": "rater,rid,eff,emp\np1,r1,5,4\n2024-03-01,r2,3,2\n"}, DATA_CFG,
     ["ratings.csv, line 3", "rater_id '2024-03-01' is a date", "ratings file's rater_id column"]),
    ("unknown_reappraisal_near_a_known_one", {"ratings.csv": "rater,rid,eff,emp\np1,r1,5,4\np1,R2,3,2\n"}, DATA_CFG,
     ["ratings.csv, line 3", "'R2'", "reapp.csv", "did you mean 'r2'?"]),
    # once silently wrong: study 4's ratings file turned 4.10 into 4.1 while study 1 uses text ids (its ratings went
    # to another reappraisal); the check fired only when every study's ids were decimals
    ("numeric_ids_mangled_in_one_study_beside_text_ids", {"reapp4.csv": STUDY4_REAPP, "ratings4.csv": "rater,rid,eff,emp\nq1,4.2,5,4\nq1,4.1,3,2\nq2,4.11,6,6\n"},
     STUDY4_CFG, ["ratings4.csv, line 3", "trailing zeros ('4.10')", "4.10 became 4.1", "export the ratings' id column as text"]),
    # a spreadsheet's numbers of ids: leading zeros dropped, a month-day id made a serial date number
    ("unknown_reappraisal_without_its_leading_zeros", {"reapp.csv": "rid,scen,answer\n007,v1,Maybe.\nr2,v1,Ask.\nr3,v2,Stress.\nr4,v2,HR.\n",
                                                       "ratings.csv": "rater,rid,eff,emp\np1,r2,5,4\np1,7,3,2\n"}, DATA_CFG,
     ["ratings.csv, line 3", "unknown reappraisal id '7'", "did you mean '007'?"]),
    # once silently wrong: rater 3-12 on half its rows as 45363 (2024-03-12), read as two raters; when both 3-12 and 12-3
    # are raters, or no rater is that date, the number is not read as either
    ("rater_serial_date_of_two_ids", {"ratings.csv": "rater,rid,eff,emp\n3-12,r1,5,4\n12-3,r2,3,2\n45363,r3,2,3\n"}, DATA_CFG,
     ["ratings.csv, line 4", "rater_id '45363' is a spreadsheet's serial number of the date 2024-03-12", "could be '12-3' or '3-12'",
      "export the ratings file's rater_id column as text"]),
    ("rater_serial_date_of_no_id", {"ratings.csv": "rater,rid,eff,emp\n3-12,r1,5,4\n45400,r2,3,2\n"}, DATA_CFG,
     ["ratings.csv, line 3", "rater_id '45400'", "2024-04-18", "stands for none of them", "as text"]),
    ("reappraisal_id_serial_date_in_ratings", {"reapp.csv": "rid,scen,answer\n4-1,v1,Maybe.\n4-2,v1,Ask.\n4-3,v2,Stress.\n4-4,v2,HR.\n",
                                               "ratings.csv": "rater,rid,eff,emp\np1,4-2,5,4\np1,45383,3,2\n"}, DATA_CFG,
     ["ratings.csv, line 3", "reappraisal_id '45383'", "2024-04-01", "could be '4-1'", "as text"]),
    # once silently wrong: a rating file's own scenario column was ignored
    ("rating_scenario_contradicts_reappraisal", {"ratings.csv": "rater,rid,scen,eff,emp\np1,r1,v1,5,4\np1,r3,v1,3,2\n"}, RATINGS_WITH_SCENARIO_CFG,
     ["ratings.csv, line 3", "reappraisal 'r3' names scenario 'v1'", "belongs to scenario 'v2'", "reapp.csv, line 4"]),
    ("rating_scenario_blank", {"ratings.csv": "rater,rid,scen,eff,emp\np1,r1,v1,5,4\np1,r3, ,3,2\n"}, RATINGS_WITH_SCENARIO_CFG,
     ["ratings.csv, line 3", "vignette_id is empty", "'scen'"]),
    ("empty_text", {"reapp.csv": "rid,scen,answer\nr1,v1,Maybe.\nr2,v1,   \nr3,v2,Stress.\nr4,v2,HR.\n"}, DATA_CFG, ["reapp.csv, line 3", "empty"]),
    ("duplicate_reappraisal_id", {"reapp.csv": "rid,scen,answer\nr1,v1,Maybe.\nr1,v1,Again.\nr3,v2,x\nr4,v2,y\n"}, DATA_CFG, ["reapp.csv, line 3", "duplicate"]),
    ("bad_pool", {"vignettes.csv": "vignette_id,text,emotion,pool\nv1,a,sadness,train\nv2,b,anger,testing\n"}, DATA_CFG, ["vignettes.csv, line 3", "pool"]),
    # once silently wrong: passed ingest and failed at the split, naming an interim parquet
    ("training_scenario_with_one_text_twice", {"reapp.csv": "rid,scen,answer\nr1,v1,Maybe.\nr2,v1,You could.\nr3,v2,Stress.\nr4,v2,  stress.\n"}, DATA_CFG,
     ["vignettes.csv, line 3", "'v2' has 2 human reappraisal(s) with 1 distinct text(s)", "2 distinct texts are needed"]),
    ("training_scenario_without_human_reappraisal", {"vignettes.csv": GOOD["vignettes.csv"] + "v3,Your neighbour is loud.,anger,train\n"}, DATA_CFG, ["vignettes.csv, line 4", "'v3'", "0 human reappraisal"]),
]


def test_catalogue_has_more_than_twenty_cases():
    assert len(BAD_INPUTS) > 20 and len({c[0] for c in BAD_INPUTS}) == len(BAD_INPUTS)


#: Words an error line must not hold (the wrong diagnosis it once gave).
NOT_SAID = {"utf16_without_bom_read_as_utf8": ["delimiter"], "utf16_declared_without_bom": ["delimiter"]}
#: No error line is longer than this: a header or value is quoted clipped to 200 characters.
MAX_ERROR_LINE = 1500


@pytest.mark.parametrize("case_id,files,cfg,fragments", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_fails_with_one_clear_line_and_no_output(tmp_path, capsys, case_id, files, cfg, fragments):
    raw = write_raw(tmp_path, files)
    code, err, out = run_ingest(tmp_path, raw, cfg, capsys)
    assert code == 2
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line, got: {err[:3000]!r}"
    assert lines[0].startswith("error: ")
    assert len(lines[0]) < MAX_ERROR_LINE, lines[0][:3000]
    for fragment in fragments:
        assert fragment in lines[0], f"{fragment!r} not in {lines[0]!r}"
    for wrong in NOT_SAID.get(case_id, []):
        assert wrong not in lines[0], f"{wrong!r} in {lines[0]!r}"
    leftovers = [p for d in (out, tmp_path / "checks") if d.exists() for p in d.iterdir()]
    assert leftovers == [], f"partial output left behind: {leftovers}"


def _ratings(out) -> pd.DataFrame:
    return pd.read_parquet(out / "ratings.parquet")


def _check_one_rater_each(out, checks):
    ratings = _ratings(out)
    assert sorted(ratings["rater_id"].unique()) == ["p1", "p2"]
    assert sorted(ratings["reappraisal_id"].unique()) == ["r1", "r2", "r3"]
    # one z-scoring group per rater: "p1 " and "p1" are one rater
    from reappraisal.data.normalize import zscore_ratings

    assert zscore_ratings(ratings)[1]["n_raters"] == 2


def _check_unfinished_dropped(out, checks):
    assert sorted(_ratings(out).query("dimension == 'effectiveness'")["rating"]) == [5.0, 6.0]
    assert checks["rows_dropped_by_filters"] == 2


def _check_finished_kept(out, checks):
    assert sorted(_ratings(out).query("dimension == 'effectiveness'")["rating"]) == [2.0, 3.0]
    assert checks["rows_dropped_by_filters"] == 2


def _check_json_reappraisals(out, checks):
    reapp = pd.read_parquet(out / "reappraisals.parquet")
    assert dict(zip(reapp["reappraisal_id"], zip(reapp["vignette_id"], reapp["text"]))) == JSON_TEXTS
    assert len(_ratings(out)) == 8


def _check_decimal_comma(out, checks):
    assert sorted(_ratings(out).query("dimension == 'effectiveness'")["rating"]) == [2.5, 3.0, 4.5, 6.0]


def _check_ratings_complete(out, checks):
    assert len(_ratings(out)) == 8


#: (id, file overrides, config, check of the outputs and the checks file): messy exports read right.
MESSY_BUT_VALID = [
    # once silently wrong: "p1 " on half its rows became a second rater, z-scored apart
    ("id_with_surrounding_spaces", {"ratings.csv": "rater,rid,eff,emp\np1,r1,5,4\np1 ,r2,3,2\n p2,r1,6,6\np2\t, r3 ,2,3\n",
                                    "reapp.csv": "rid,scen,answer\nr1 ,v1,Maybe.\nr2,v1 ,Ask.\nr3,v2,Stress.\nr4,v2,HR.\n"},
     DATA_CFG, _check_one_rater_each),
    # once silently wrong: `not_equals: false` kept the FALSE rows ("0 rows dropped")
    ("boolean_filter_matches_FALSE", {"ratings.csv": "rater,rid,eff,emp,Finished\np1,r1,5,4,TRUE\np1,r2,3,2,FALSE\np2,r1,6,6,True\np2,r3,2,3,false\n"},
     NOT_FALSE_CFG, _check_unfinished_dropped),
    ("boolean_filter_matches_1_and_0", {"ratings.csv": "rater,rid,eff,emp,Finished\np1,r1,5,4,0\np1,r2,3,2,1\np2,r1,6,6,0\np2,r3,2,3,1\n"},
     EQUALS_TRUE_CFG, _check_finished_kept),
    # once silently wrong: `not_equals: 0` compared texts, dropping the "0" rows and keeping the "0.0" ones
    ("numeric_filter_matches_0_and_0.0", {"ratings.csv": "rater,rid,eff,emp,Progress\np1,r1,5,4,100\np1,r2,3,2,0\n"
                                                         "p2,r1,6,6,100.0\np2,r3,2,3,0.0\n"},
     cfg_with(f"{RATINGS_SRC}.filters", [{"column": "Progress", "not_equals": 0}]), _check_unfinished_dropped),
    ("json_array_wrapped_in_an_object_declared",
     {"reapp.json": json.dumps({"survey": "s1", "data": {"responses": json.loads(json_reappraisals(JSON_TEXTS))}}, indent=2)},
     cfg_with("ingest.reappraisals.0.records", "data.responses", JSON_REAPP_CFG), _check_json_reappraisals),
    ("decimal_comma_declared", {"ratings.csv": 'rater,rid,eff,emp\np1,r1,"4,5",4\np1,r2,3,2\np2,r1,6,6\np2,r3,"2,5",3\n'},
     cfg_with(f"{RATINGS_SRC}.decimal", ","), _check_decimal_comma),
    ("rating_scenario_agrees", {"ratings.csv": "rater,rid,scen,eff,emp\np1,r1,v1,5,4\np1,r2,v1,3,2\np2,r1, v1,6,6\np2,r3,v2,2,3\n"},
     RATINGS_WITH_SCENARIO_CFG, _check_ratings_complete),
    ("json_array_with_nested_fields", {"reapp.json": json_reappraisals(JSON_TEXTS)}, JSON_REAPP_CFG, _check_json_reappraisals),
    ("jsonl_with_nested_fields", {"reapp.jsonl": "".join(json.dumps({"scenario": s, "response": {"id": r, "text": t}}) + "\n" for r, (s, t) in JSON_TEXTS.items())},
     JSONL_REAPP_CFG, _check_json_reappraisals),
    ("utf16_le_declared", {"ratings.csv": GOOD["ratings.csv"].encode("utf-16-le")}, cfg_with(f"{RATINGS_SRC}.encoding", "utf-16-le"), _check_ratings_complete),
    ("utf16_with_bom_declared", {"ratings.csv": GOOD["ratings.csv"].encode("utf-16")}, cfg_with(f"{RATINGS_SRC}.encoding", "utf-16"), _check_ratings_complete),
]


@pytest.mark.parametrize("case_id,files,cfg,check", MESSY_BUT_VALID, ids=[c[0] for c in MESSY_BUT_VALID])
def test_messy_export_gives_correct_tables(tmp_path, capsys, case_id, files, cfg, check):
    code, err, out = run_ingest(tmp_path, write_raw(tmp_path, files), cfg, capsys)
    assert code == 0, err
    check(out, json.loads((tmp_path / "checks" / "ingest.json").read_text()))


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


@pytest.mark.parametrize("fold", [False, True])
def test_rater_ids_that_differ_only_by_case_are_listed_or_folded_when_declared(tmp_path, capsys, fold):
    """Once silently two raters (`s4_p001` / `S4_P001`), z-scored apart, with an ingest.json like a clean run's."""
    ratings = "rater,rid,eff,emp\np1,r1,5,4\nP1,r2,3,2\np2,r1,6,6\np2,r3,2,3\n"
    cfg = cfg_with("ingest.case_insensitive_ids", True) if fold else DATA_CFG
    code, err, out = run_ingest(tmp_path, write_raw(tmp_path, {"ratings.csv": ratings}), cfg, capsys)
    assert code == 0, err
    checks = json.loads((tmp_path / "checks" / "ingest.json").read_text())
    raters = sorted(_ratings(out)["rater_id"].unique())
    if fold:
        assert raters == ["p1", "p2"] and checks["warnings"] == [] and "warning:" not in err
    else:
        assert raters == ["P1", "p1", "p2"]  # not folded: some exports are case-sensitive
        assert len(checks["warnings"]) == 1 and "P1 / p1" in checks["warnings"][0]
        assert "data.ingest.case_insensitive_ids" in checks["warnings"][0]
        assert [line for line in err.splitlines() if line.startswith("warning:")] == [f"warning: {checks['warnings'][0]}"]


def test_rater_ids_turned_into_serial_dates_are_read_as_the_ids_they_stand_for(tmp_path, capsys):
    """Once silently two raters each: `3-12` on every second row as Excel's serial number 45363 (2024-03-12)."""
    ratings = "rater,rid,eff,emp\n3-12,r1,5,4\n45363,r2,3,2\n4-2,r1,6,6\n45384,r3,2,3\n"
    code, err, out = run_ingest(tmp_path, write_raw(tmp_path, {"ratings.csv": ratings}), DATA_CFG, capsys)
    assert code == 0, err
    assert sorted(_ratings(out)["rater_id"].unique()) == ["3-12", "4-2"]
    checks = json.loads((tmp_path / "checks" / "ingest.json").read_text())
    (note,) = checks["notes"]
    assert note.startswith("study 1: 2 rater id(s)") and "45363 -> 3-12" in note and "ratings.csv" in note
    assert f"note: {note}" in err.splitlines()


@pytest.mark.parametrize("fold", [False, True])
def test_rater_ids_that_differ_only_by_leading_zeros_across_files_are_named_or_folded_when_declared(tmp_path, capsys, fold):
    """Once silently two raters: one file of study 1 writes rater `007`, the other (a spreadsheet's) `7`."""
    files = {"ratings.csv": "rater,rid,eff,emp\n007,r1,5,4\np2,r1,6,6\n", "ratings_b.csv": "rater,rid,eff,emp\n7,r2,3,2\np2,r3,2,3\n"}
    cfg = cfg_with("ingest.leading_zero_insensitive_ids", True, SECOND_RATINGS_CFG) if fold else SECOND_RATINGS_CFG
    code, err, out = run_ingest(tmp_path, write_raw(tmp_path, files), cfg, capsys)
    assert code == 0, err
    checks = json.loads((tmp_path / "checks" / "ingest.json").read_text())
    raters = sorted(_ratings(out)["rater_id"].unique())
    if fold:
        assert raters == ["007", "p2"] and checks["warnings"] == [] and "warning:" not in err
    else:
        assert raters == ["007", "7", "p2"]
        (warning,) = checks["warnings"]
        assert "'007' (ratings.csv, line 2) / '7' (ratings_b.csv, line 2)" in warning
        assert "data.ingest.leading_zero_insensitive_ids: true" in warning
        assert f"warning: {warning}" in err.splitlines()


def test_spreadsheet_variants_of_ids_are_told_apart():
    from reappraisal.data.ids import serial_date_mangling, variant_of, zero_variants

    assert zero_variants(["007", "7", "8", "08", "r7", "R7"]) == [["007", "7"], ["08", "8"]]
    assert zero_variants(["007", "r007", "S4_P007"]) == []
    assert serial_date_mangling(["3-12", "45363", "4-2"]) == {"45363": ["3-12"]}
    assert serial_date_mangling(["03/12", "45363"]) == {"45363": ["03/12"]}
    assert serial_date_mangling(["3-12", "12-3", "45363"]) == {"45363": ["12-3", "3-12"]}
    assert serial_date_mangling(["45363", "45364"]) is None  # numbers throughout: ids that are numbers
    assert serial_date_mangling(["3-12", "123", "999999"]) is None  # no number a recent date could be
    assert serial_date_mangling(["s1_p001", "45363"]) is None  # no month-day id beside it
    assert variant_of("7", ["007", "r7"]) == "007" and variant_of("45363", ["3-12", "r1"]) == "3-12"
    assert variant_of("r9", ["r1", "r2"]) is None


def test_numeric_mangling_is_told_apart_from_decimal_ids_kept_as_text():
    from reappraisal.data.ids import numeric_mangling

    defined = ["4.1", "4.10", "4.2", "4.190", "4.19"]
    assert numeric_mangling(defined, ["4.1", "4.2", "4.19"]) == ["4.10", "4.190"]
    assert numeric_mangling(defined, ["4.1", "4.10", "4.2"]) is None  # the zero-padded form survived: text
    assert numeric_mangling(["r1", "r10"], ["r1"]) is None  # not decimals
    assert numeric_mangling(["4.1", "4.2"], ["4.1"]) is None  # nothing a number could have lost
    # one file's ids: another study's text ids beside them are left aside
    assert numeric_mangling([*defined, "s1_r1"], ["s1_r1", "4.1", "4.2"]) == ["4.10", "4.190"]
    assert numeric_mangling([*defined, "s1_r1"], ["s1_r1", "4.10", "4.2"]) is None


def test_date_mangling_is_told_apart_from_ids_that_are_dates_throughout():
    from reappraisal.data.ids import date_mangling, looks_like_a_date

    for date in ["10-Apr", "Apr-10", "2024-04-10", "2024-04-10 00:00:00", "4/10/2024", "10-apr-24"]:
        assert looks_like_a_date(date), date
    for not_a_date in ["4-10", "4-32", "r10", "S4_P001", "2024-04-10_p1", "4.10", "R_3kQ"]:
        assert not looks_like_a_date(not_a_date), not_a_date
    assert date_mangling(["4-32", "10-Apr", "4-33"]) == ("10-Apr", "4-32")
    assert date_mangling(["2024-01-02", "2024-01-03"]) is None  # dates throughout: ids that are dates, consistently
    assert date_mangling(["r1", "r2"]) is None
