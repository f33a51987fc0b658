"""A small valid raw export and its mapping, and running the ingest stage the way its rule does."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from reappraisal.cli import main

GOOD = {
    "vignettes.csv": "vignette_id,text,emotion,pool\nv1,Your friend ignored you at lunch.,sadness,train\nv2,Your boss yelled at you.,anger,train\n",
    "reapp.csv": "rid,scen,answer\nr1,v1,Maybe your friend was distracted.\nr2,v1,You could ask them later.\nr3,v2,Your boss may be stressed.\nr4,v2,You can talk to HR.\n",
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
    """Run `reappraisal ingest` (tables into tmp/out, checks into tmp/checks/ingest.json); return code, stderr, out dir."""
    out = tmp_path / "out"
    checks = tmp_path / "checks" / "ingest.json"
    code = main(
        ["ingest", "--raw-dir", str(raw), "--out-dir", str(out), "--checks", str(checks), "--params", json.dumps({"data": cfg})]
    )
    return code, capsys.readouterr().err, out


def cfg_with(path: str, value, cfg: dict = DATA_CFG) -> dict:
    """A copy of ``cfg`` with the dotted ``path`` (list indices as numbers) set to ``value`` (None deletes it)."""
    cfg = copy.deepcopy(cfg)
    node = cfg
    keys = path.split(".")
    for k in keys[:-1]:
        node = node[int(k)] if k.isdigit() else node[k]
    last = int(keys[-1]) if keys[-1].isdigit() else keys[-1]
    if value is None:
        del node[last]
    else:
        node[last] = value
    return cfg
