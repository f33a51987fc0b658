"""Ingestion: the declared mapping drives it, and every bad input fails with one clear line
naming the file, row or key, leaving no partial output."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from reappraisal.cli import main
from reappraisal.config import load_config

GOOD = {
    "vignettes.csv": "vignette_id,text,emotion,pool\nv1,Your friend ignored you at lunch.,sadness,train\nv2,Your boss yelled at you.,anger,train\n",
    "reapp.csv": "rid,scen,answer\nr1,v1,Maybe your friend was distracted.\nr2,v1,You could ask them later.\nr3,v2,Your boss may be stressed.\n",
    "ratings.csv": "rater,rid,eff,emp\np1,r1,5,4\np1,r2,3,2\np2,r1,6,6\np2,r3,2,3\n",
}

DATA_CFG = {
    "source": "bundled",
    "dimensions": ["effectiveness", "empathy"],
    "primary_dimension": "effectiveness",
    "ingest": {
        "vignettes": [{"files": "vignettes.csv", "columns": {"vignette_id": "vignette_id", "text": "text", "emotion": "emotion", "pool": "pool"}}],
        "reappraisals": [
            {"files": "reapp.csv", "study": "1", "author_type": "human", "columns": {"reappraisal_id": "rid", "vignette_id": "scen", "text": "answer"}}
        ],
        "ratings": [
            {
                "files": "ratings.csv",
                "study": "1",
                "scale": [1, 7],
                "columns": {"rater_id": "rater", "reappraisal_id": "rid"},
                "dimensions": {"effectiveness": "eff", "empathy": "emp"},
            }
        ],
    },
}


def write_raw(tmp_path: Path, overrides: dict[str, bytes | str] | None = None) -> Path:
    raw = tmp_path / "raw"
    raw.mkdir()
    for name, content in {**GOOD, **(overrides or {})}.items():
        data = content if isinstance(content, bytes) else content.encode()
        (raw / name).write_bytes(data)
    return raw


def run_ingest(tmp_path: Path, raw: Path, cfg: dict, capsys) -> tuple[int, str, Path]:
    out = tmp_path / "out"
    code = main(["ingest", "--raw-dir", str(raw), "--out-dir", str(out), "--params", json.dumps({"data": cfg})])
    return code, capsys.readouterr().err, out


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


def _cfg_with(path: str, value) -> dict:
    cfg = json.loads(json.dumps(DATA_CFG))
    node = cfg
    keys = path.split(".")
    for k in keys[:-1]:
        node = node[int(k)] if k.isdigit() else node[k]
    node[keys[-1]] = value
    return cfg


BAD_INPUTS = [
    # (id, file overrides, config, expected fragments of the one-line error)
    ("malformed_csv", {"reapp.csv": 'rid,scen,answer\nr1,v1,"unterminated\nr2,v1,ok\n'}, DATA_CFG, ["reapp.csv", "malformed"]),
    ("missing_column", {"ratings.csv": "rater,rid,eff\np1,r1,5\n"}, DATA_CFG, ["ratings.csv", "'emp'", "missing column"]),
    ("wrong_type", {"ratings.csv": "rater,rid,eff,emp\np1,r1,five,4\n"}, DATA_CFG, ["ratings.csv, line 2", "'five'"]),
    ("rating_out_of_scale", {"ratings.csv": "rater,rid,eff,emp\np1,r1,5,4\np1,r2,9,2\n"}, DATA_CFG, ["ratings.csv, line 3", "outside the declared scale"]),
    ("duplicate_rating", {"ratings.csv": "rater,rid,eff,emp\np1,r1,5,4\np1,r1,3,2\n"}, DATA_CFG, ["ratings.csv, line 3", "duplicate"]),
    ("unknown_scenario", {"reapp.csv": "rid,scen,answer\nr1,v1,Maybe.\nr2,v9,You could.\nr3,v2,Stress.\n"}, DATA_CFG, ["reapp.csv, line 3", "'v9'"]),
    ("unknown_reappraisal", {"ratings.csv": "rater,rid,eff,emp\np1,r1,5,4\np1,r7,3,2\n"}, DATA_CFG, ["ratings.csv, line 3", "'r7'"]),
    ("empty_text", {"reapp.csv": "rid,scen,answer\nr1,v1,Maybe.\nr2,v1,   \nr3,v2,Stress.\n"}, DATA_CFG, ["reapp.csv, line 3", "empty"]),
    ("invalid_utf8", {"reapp.csv": b"rid,scen,answer\nr1,v1,Maybe.\nr2,v1,caf\xe9 \xff\nr3,v2,x\n"}, DATA_CFG, ["reapp.csv, line 3", "UTF-8"]),
    ("empty_file", {"vignettes.csv": ""}, DATA_CFG, ["vignettes.csv", "empty"]),
    ("duplicate_reappraisal_id", {"reapp.csv": "rid,scen,answer\nr1,v1,Maybe.\nr1,v1,Again.\nr3,v2,x\n"}, DATA_CFG, ["reapp.csv, line 3", "duplicate"]),
    ("bad_pool", {"vignettes.csv": "vignette_id,text,emotion,pool\nv1,a,sadness,train\nv2,b,anger,testing\n"}, DATA_CFG, ["vignettes.csv, line 3", "pool"]),
    ("mapping_to_missing_file", {}, _cfg_with("ingest.ratings.0.files", "nothere_*.csv"), ["data.ingest.ratings[0].files", "matches no file"]),
    ("mapping_unknown_dimension", {}, _cfg_with("ingest.ratings.0.dimensions", {"warmth": "eff"}), ["data.ingest.ratings[0].dimensions", "warmth"]),
    ("mapping_escapes_raw_dir", {}, _cfg_with("ingest.vignettes.0.files", "../vignettes.csv"), ["data.ingest.vignettes[0].files"]),
]


@pytest.mark.parametrize("case_id,files,cfg,fragments", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_fails_with_one_clear_line_and_no_output(tmp_path, capsys, case_id, files, cfg, fragments):
    raw = write_raw(tmp_path, files)
    code, err, out = run_ingest(tmp_path, raw, cfg, capsys)
    assert code != 0
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line, got: {err!r}"
    assert lines[0].startswith("error: ")
    for fragment in fragments:
        assert fragment in lines[0], f"{fragment!r} not in {lines[0]!r}"
    leftovers = list(out.glob("*")) if out.exists() else []
    assert leftovers == [], f"partial output left behind: {leftovers}"


def test_config_key_of_wrong_type_is_named():
    from reappraisal.errors import ConfigError

    with pytest.raises(ConfigError, match=r"config key 'split.val_fraction'.*not of type 'number'"):
        load_config(overrides={"split": {"val_fraction": "a fifth"}})


def test_unknown_preset_is_named():
    from reappraisal.errors import ConfigError

    with pytest.raises(ConfigError, match=r"config key 'preset': unknown preset 'papr'"):
        load_config(overrides={"preset": "papr"})
