"""Input tables read one way: a missing or broken table is one error line naming the file, nothing written."""

from __future__ import annotations

import json

import pytest

from reappraisal.cli import main
from reappraisal.config import load_config

CONFIG = load_config()


def _params(tmp_path, *sections):
    path = tmp_path / "params.json"
    path.write_text(json.dumps({"seed": 1, "preset": "demo", **{s: CONFIG[s] for s in sections}}))
    return f"@{path}"


#: command -> (options naming input tables, other options, config sections)
COMMANDS = {
    "normalize-ratings": (["--ratings"], {"--out": "z.parquet", "--summary": "s.json"}, ["data", "normalize"]),
    "split-reappraisals": (["--ratings-z", "--reappraisals", "--vignettes"],
                           {"--targets": "t.parquet", "--pairs": "p.parquet", "--summary": "s.json"}, ["data", "split"]),
    "check-leakage": (["--targets", "--vignettes"], {"--out": "leak.json"}, ["leakage"]),
    "check-ood": (["--targets", "--vignettes"], {"--out": "ood.json"}, ["evaluation"]),
}


@pytest.mark.parametrize("broken", ["missing", "not_parquet"])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_broken_input_table_is_one_line_naming_it(tmp_path, capsys, command, broken):
    tables, others, sections = COMMANDS[command]
    bad = tmp_path / "in.parquet"
    if broken == "not_parquet":
        bad.write_text("reappraisal_id,text\nr1,hello\n")
    argv = [command]
    for option in tables:
        argv += [option, str(bad)]
    out = tmp_path / "out"
    out.mkdir()
    for option, name in others.items():
        argv += [option, str(out / name)]
    argv += ["--params", _params(tmp_path, *sections)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    assert str(bad) in err
    assert ("file not found" if broken == "missing" else "cannot be read as parquet") in err
    assert list(out.iterdir()) == []
