"""Exports whose problem an error once named wrongly: compressed files reported as "a NUL byte ... declare the
file's encoding", a survey's answer labels pointed at missing_values (which would blank every rating), and
question-text rows beyond the declared skip_rows_after_header pointed at the count already declared."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import zipfile

import pandas as pd
import pytest

from tests.data.ingest_fixtures import DATA_CFG, GOOD, cfg_with, run_ingest, write_raw

RATINGS_SRC = "ingest.ratings.0"


def _one_error_line(tmp_path, capsys, files, cfg) -> str:
    code, err, out = run_ingest(tmp_path, write_raw(tmp_path, files), cfg, capsys)
    assert code == 2
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err[:3000]
    assert not out.exists() or not any(out.iterdir())
    return lines[0]


def _ratings(tmp_path, capsys, files, cfg) -> pd.DataFrame:
    tmp_path.mkdir(parents=True, exist_ok=True)
    code, err, out = run_ingest(tmp_path, write_raw(tmp_path, files), cfg, capsys)
    assert code == 0, err
    return pd.read_parquet(out / "ratings.parquet").sort_values(["rater_id", "reappraisal_id", "dimension"],
                                                                ignore_index=True)


@pytest.mark.parametrize("name,compress", [("ratings.csv.gz", gzip.compress), ("ratings.csv", gzip.compress),
                                           ("ratings.csv.bz2", bz2.compress)])
def test_a_compressed_export_is_read_like_the_plain_one(tmp_path, capsys, name, compress):
    plain = _ratings(tmp_path / "plain", capsys, {}, DATA_CFG)
    files = {name: compress(GOOD["ratings.csv"].encode())}
    if name != "ratings.csv":
        files["ratings.csv"] = b"not, this, file\n"
    packed = _ratings(tmp_path / "packed", capsys, files, cfg_with(f"{RATINGS_SRC}.files", name))
    pd.testing.assert_frame_equal(packed.drop(columns=["_file"], errors="ignore"),
                                  plain.drop(columns=["_file"], errors="ignore"))


def test_a_compressed_json_export_is_read(tmp_path, capsys):
    records = [{"rater": r, "rid": i, "eff": e, "emp": m} for r, i, e, m in
               (line.split(",") for line in GOOD["ratings.csv"].splitlines()[1:])]
    cfg = cfg_with(f"{RATINGS_SRC}.format", "json", cfg_with(f"{RATINGS_SRC}.files", "ratings.json.gz"))
    ratings = _ratings(tmp_path, capsys, {"ratings.json.gz": gzip.compress(json.dumps(records).encode())}, cfg)
    assert len(ratings) == 8


def test_a_zip_archive_is_refused_by_name_not_as_an_encoding(tmp_path, capsys):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("ratings.csv", GOOD["ratings.csv"])
    line = _one_error_line(tmp_path, capsys, {"ratings.csv": buf.getvalue()}, DATA_CFG)
    assert "ratings.csv" in line and "zip archive" in line and "unzip" in line
    assert "encoding" not in line and "NUL" not in line


def test_a_cut_gzip_file_is_named_as_such(tmp_path, capsys):
    cut = gzip.compress(GOOD["ratings.csv"].encode() * 50)[:60]
    line = _one_error_line(tmp_path, capsys, {"ratings.csv": cut}, DATA_CFG)
    assert "ratings.csv" in line and "gzip" in line and "encoding" not in line


def test_answer_labels_get_the_export_setting_not_missing_values(tmp_path, capsys):
    ratings = ("rater,rid,eff,emp\np1,r1,5 - Somewhat agree,4 - Neither agree nor disagree\n"
               "p1,r2,3 - Somewhat disagree,2 - Disagree\np2,r1,6 - Agree,6 - Agree\np2,r3,2 - Disagree,3 - Somewhat disagree\n")
    line = _one_error_line(tmp_path, capsys, {"ratings.csv": ratings}, DATA_CFG)
    assert "ratings.csv, line 2, column 'eff'" in line and "'5 - Somewhat agree'" in line
    assert "answer labels" in line and "numeric values" in line
    assert "missing_values" not in line


def test_extra_question_rows_beyond_the_declared_skip_get_the_total_count(tmp_path, capsys):
    ratings = ('rater,rid,eff,emp\nRater,Item,How effective?,How empathic?\n'
               '{"ImportId":"r"},{"ImportId":"i"},{"ImportId":"QID1"},{"ImportId":"QID2"}\n'
               'p1,r1,5,4\np1,r2,3,2\n')
    line = _one_error_line(tmp_path, capsys, {"ratings.csv": ratings},
                           cfg_with(f"{RATINGS_SRC}.skip_rows_after_header", 1))
    assert "skip_rows_after_header: 2" in line
    assert "skip_rows_after_header: 1" not in line
