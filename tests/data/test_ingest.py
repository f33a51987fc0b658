"""Ingestion driven by the declared mapping: what each declaration reads (the bad inputs are in
test_ingest_catalogue.py, real survey layouts in test_survey_exports.py)."""

from __future__ import annotations

import copy
import json

import pandas as pd
import pytest

from reappraisal.config import load_config, resolve_preset, validate_config
from reappraisal.data.ids import hashed_id
from reappraisal.errors import ConfigError

from tests.data.ingest_fixtures import DATA_CFG, GOOD, cfg_with, run_ingest, write_raw


def test_good_input_produces_canonical_long_tables(tmp_path, capsys):
    code, err, out = run_ingest(tmp_path, write_raw(tmp_path), DATA_CFG, capsys)
    assert code == 0, err
    ratings = pd.read_parquet(out / "ratings.parquet")
    assert list(ratings.columns) == ["study", "rater_id", "reappraisal_id", "dimension", "rating"]
    assert len(ratings) == 8  # 4 wide rows x 2 dimensions melted to long
    assert set(ratings["dimension"]) == {"effectiveness", "empathy"}
    assert ratings.query("rater_id == 'p2' and reappraisal_id == 'r3' and dimension == 'empathy'")["rating"].item() == 3.0
    reapp = pd.read_parquet(out / "reappraisals.parquet")
    assert set(reapp["author_type"]) == {"human"} and set(reapp["study"]) == {"1"}
    checks = json.loads((tmp_path / "checks" / "ingest.json").read_text())
    assert checks["rows"] == {"vignettes": 2, "reappraisals": 4, "ratings": 8}
    assert checks["blank_rating_cells"] == 0 and checks["rows_dropped_by_filters"] == 0


def test_text_field_over_128_kib_is_read_whole(tmp_path, capsys):
    # The csv module's default field limit is 128 KiB; such a field was once "malformed CSV" with no line.
    long_text = "Maybe they were busy. " * 10_000  # 220,000 characters
    reapp = GOOD["reapp.csv"].replace("Your boss may be stressed.", f'"{long_text}"')
    code, err, out = run_ingest(tmp_path, write_raw(tmp_path, {"reapp.csv": reapp}), DATA_CFG, capsys)
    assert code == 0, err
    texts = pd.read_parquet(out / "reappraisals.parquet").set_index("reappraisal_id")["text"]
    assert texts["r3"] == long_text and len(texts["r3"]) > 128 * 1024


def test_declared_delimiter_and_encoding(tmp_path, capsys):
    vignettes = "vignette_id;text;emotion;pool\r\nv1;Dein Freund hat dich ignoriert, café;Trauer;train\r\nv2;Dein Chef schrie;Wut;train\r\n"
    cfg = cfg_with("ingest.vignettes.0.delimiter", ";", cfg_with("ingest.vignettes.0.encoding", "cp1252"))
    code, err, out = run_ingest(tmp_path, write_raw(tmp_path, {"vignettes.csv": vignettes.encode("cp1252")}), cfg, capsys)
    assert code == 0, err
    vig = pd.read_parquet(out / "vignettes.parquet").set_index("vignette_id")
    assert vig.loc["v1", "text"] == "Dein Freund hat dich ignoriert, café"
    assert vig.loc["v2", "emotion"] == "Wut"


def test_quoted_multiline_field_keeps_later_line_numbers(tmp_path, capsys):
    reapp = 'rid,scen,answer\nr1,v1,"First line.\nSecond line."\nr2,v1,ok\nr3,v2,x\nr4,v2,\n'
    code, err, _ = run_ingest(tmp_path, write_raw(tmp_path, {"reapp.csv": reapp}), DATA_CFG, capsys)
    assert code == 2
    assert "reapp.csv, line 6" in err  # r4 starts on physical line 6, the 5th record


def test_text_from_several_columns_and_constant_emotion(tmp_path, capsys):
    reapp = "rid,scen,part1,part2\nr1,v1,Maybe your friend,was distracted.\nr2,v1,You could ask,\nr3,v2,Your boss,may be stressed.\nr4,v2,Talk,to HR.\n"
    vignettes = "vignette_id,text\nv1,Your friend ignored you at lunch.\nv2,Your boss yelled at you.\n"
    cfg = cfg_with("ingest.reappraisals.0.columns.text", {"join": ["part1", "part2"]})
    cfg = cfg_with("ingest.vignettes.0", {"files": "vignettes.csv", "emotion": "sadness", "columns": {"vignette_id": "vignette_id", "text": "text"}}, cfg)
    code, err, out = run_ingest(tmp_path, write_raw(tmp_path, {"reapp.csv": reapp, "vignettes.csv": vignettes}), cfg, capsys)
    assert code == 0, err
    texts = pd.read_parquet(out / "reappraisals.parquet").set_index("reappraisal_id")["text"]
    assert texts["r1"] == "Maybe your friend was distracted." and texts["r2"] == "You could ask"
    assert set(pd.read_parquet(out / "vignettes.parquet")["emotion"]) == {"sadness"}


def test_ids_derived_from_text_are_stable_and_link_ratings(tmp_path, capsys):
    """A file without reappraisal ids: rating rows repeat the text, both sides hash it to one id."""
    reapp = "scen,answer\nv1,Maybe your friend was distracted.\nv1,You could ask them later.\nv2,Your boss may be stressed.\nv2,Talk to HR.\n"
    ratings = "rater,answer,eff,emp\np1,Maybe your friend was distracted.,5,4\np2, Your boss may be stressed. ,2,3\n"
    cfg = cfg_with("ingest.reappraisals.0.columns.reappraisal_id", {"hash": ["answer"], "prefix": "r_"})
    cfg = cfg_with("ingest.ratings.0.columns.reappraisal_id", {"hash": ["answer"], "prefix": "r_"}, cfg)
    cfg = cfg_with("ingest.ratings.0.columns.rater_id", {"row_number": True, "prefix": "line"}, cfg)
    tables = []
    for run, order in enumerate([[0, 1, 2, 3], [3, 2, 1, 0]]):
        lines = reapp.splitlines()
        shuffled = "\n".join([lines[0], *(lines[1 + i] for i in order)]) + "\n"
        d = tmp_path / f"run{run}"
        d.mkdir()
        code, err, out = run_ingest(d, write_raw(d, {"reapp.csv": shuffled, "ratings.csv": ratings}), cfg, capsys)
        assert code == 0, err
        tables.append({n: pd.read_parquet(out / f"{n}.parquet") for n in ("reappraisals", "ratings")})
    key = lambda df: df.sort_values("reappraisal_id").reset_index(drop=True)
    pd.testing.assert_frame_equal(key(tables[0]["reappraisals"]), key(tables[1]["reappraisals"]))
    ids = tables[0]["reappraisals"].set_index("text")["reappraisal_id"]
    assert ids["Maybe your friend was distracted."] == hashed_id(["Maybe your friend was distracted."], "r_")
    rated = tables[0]["ratings"]
    assert set(rated["reappraisal_id"]) == {ids["Maybe your friend was distracted."], ids["Your boss may be stressed."]}
    assert sorted(set(rated["rater_id"])) == ["line2", "line3"]


def test_scenarios_derived_as_distinct_values_of_reappraisal_rows(tmp_path, capsys):
    reapp = (
        "rid,scen,scen_text,answer\nr1,v1,Your friend ignored you.,Maybe.\nr2,v1,Your friend ignored you.,Ask.\n"
        "r3,v2,Your boss yelled.,Stress.\nr4,v2,Your boss yelled.,HR.\n"
    )
    cfg = cfg_with("ingest.vignettes.0", {"files": "reapp.csv", "distinct": True, "columns": {"vignette_id": "scen", "text": "scen_text"}})
    code, err, out = run_ingest(tmp_path, write_raw(tmp_path, {"reapp.csv": reapp}), cfg, capsys)
    assert code == 0, err
    vig = pd.read_parquet(out / "vignettes.parquet")
    assert vig.to_dict("records") == [
        {"vignette_id": "v1", "text": "Your friend ignored you.", "emotion": "", "pool": "train"},
        {"vignette_id": "v2", "text": "Your boss yelled.", "emotion": "", "pool": "train"},
    ]


def test_config_key_of_wrong_type_is_named():
    with pytest.raises(ConfigError, match=r"config key 'split.val_fraction'.*not of type 'number'"):
        load_config(overrides={"split": {"val_fraction": "a fifth"}})


def test_unknown_preset_is_named():
    with pytest.raises(ConfigError, match=r"config key 'preset': unknown preset 'papr'"):
        load_config(overrides={"preset": "papr"})


def test_users_own_preset_validates_without_editing_the_schema():
    import yaml

    from reappraisal.config import REPO_ROOT

    raw = yaml.safe_load((REPO_ROOT / "config.yaml").read_text())
    mine = copy.deepcopy(raw["presets"]["demo"])
    mine["data"]["bundled_dir"] = "/data/our_lab_export"
    resolved = validate_config(resolve_preset({**raw, "preset": "our-lab", "presets": {**raw["presets"], "our-lab": mine}}))
    assert resolved["preset"] == "our-lab" and resolved["data"]["bundled_dir"] == "/data/our_lab_export"


def test_schema_refuses_a_malformed_mapping_naming_the_key():
    with pytest.raises(ConfigError, match=r"config key 'data.ingest.ratings\[0\].layout'"):
        load_config(overrides={"presets": {"demo": {"data": {"ingest": {"ratings": [{**_demo_rating_source(), "layout": "diagonal"}]}}}}})
    with pytest.raises(ConfigError, match=r"config key 'data.ingest.ratings\[0\].filters\[0\]'"):
        load_config(overrides={"presets": {"demo": {"data": {"ingest": {"ratings": [{**_demo_rating_source(), "filters": [{"column": "Finished"}]}]}}}}})


def _demo_rating_source() -> dict:
    return copy.deepcopy(load_config()["data"]["ingest"]["ratings"][0])
