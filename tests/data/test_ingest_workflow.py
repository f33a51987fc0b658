"""Ingest as a user runs it: their own preset through `snakemake --configfile` (schema untouched),
a long-form survey export, and a bad value reported as one error line that is not buried under
the rule's parameters."""

from __future__ import annotations

import copy

import pandas as pd
import yaml

from reappraisal.config import load_config
from reappraisal.data.ingest_io import ingest
from reappraisal.settings import DataSettings

from tests.data.test_survey_exports import DEMO, LONG_MAPPING, assert_same_tables, build_long_export
from tests.workflow_utils import run_snakemake


def test_users_preset_through_configfile_then_one_visible_error_line(clean_copy, tmp_path):
    demo_cfg = load_config()["data"]
    export = tmp_path / "our_lab_export"
    build_long_export(export, demo_cfg)
    raw = yaml.safe_load((clean_copy / "config.yaml").read_text())
    preset = copy.deepcopy(raw["presets"]["demo"])
    preset["data"] = {"source": "bundled", "bundled_dir": str(export), "ingest": LONG_MAPPING}
    user_config = tmp_path / "our_lab.yaml"
    user_config.write_text(yaml.safe_dump({"preset": "our_lab", "presets": {"our_lab": preset}}))

    run_snakemake(clean_copy, "--configfile", str(user_config), "--cores", "1", "data/interim/ratings.parquet")
    got = {n: pd.read_parquet(clean_copy / "data" / "interim" / f"{n}.parquet") for n in ("vignettes", "reappraisals", "ratings")}
    assert_same_tables(got, ingest(DEMO, DataSettings.from_config(demo_cfg)))
    assert (clean_copy / "results" / "data" / "ingest.json").is_file()

    # One rating out of scale in the user's export: the run stops on one line naming file, line, column.
    path = export / "ratings_long.csv"
    lines = path.read_bytes().decode("utf-8").split("\r\n")
    lines[6] = lines[6].rsplit(";", 1)[0] + ";9"  # line 7: a rating (line 6 is an attention-check item)
    path.write_bytes("\r\n".join(lines).encode("utf-8"))
    proc = run_snakemake(clean_copy, "--configfile", str(user_config), "--cores", "1", "data/interim/ratings.parquet", check=False)
    assert proc.returncode != 0
    output = proc.stdout + proc.stderr
    errors = [line for line in output.splitlines() if line.startswith("error: ")]
    assert errors == ["error: ratings_long.csv, line 7, column 'answer': rating 9 for 'effectiveness' is outside the declared scale [1, 7] "
                      "(config key 'data.ingest.ratings[0].scale')"], output[-3000:]
    # The rule's parameters travel in a file: Snakemake's echo of the failed command is one short line.
    assert '"dimension_labels"' not in output and "--params @.snakemake/params/" in output
    assert all(len(line) < 400 for line in output.splitlines()), max(output.splitlines(), key=len)[:400]
    assert not (clean_copy / "data" / "interim" / "ratings.parquet").exists()
