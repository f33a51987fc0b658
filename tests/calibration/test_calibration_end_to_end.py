"""The calibration end to end: two tiny worlds drawn, built through the demo's rules and summarised, in a fresh copy.

The worlds are the demo preset's lighter world with every training cut to a few steps and the truth to its fewest
draws (settings below), so that two of them fit the suite; what is checked is the workflow, not the numbers.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml

from reappraisal.config import deep_merge
from tests.workflow_utils import PYTHON, env_with_venv, make_clean_copy

#: Merged over the preset's calibration world (`calibration.world_config`): the same stages, a few steps each.
TINY = {
    "reward": {"num_train_epochs": 0.05, "bradley_terry": {"num_train_epochs": 0.05}},
    "grm": {"sft": {"num_train_epochs": 0.05}, "grpo": {"max_steps": 1, "save_steps": 1}, "eval_max_pairs": 20},
    "policy": {"max_steps": 2, "save_steps": 2, "snapshot_steps": [1], "warm_start": {"max_steps": 5}},
    "evaluation": {"runs": [1, 2],
                   "truth": {"answers_per_scenario": 16, "oracle": {"draws_per_scenario": 64, "candidates": 2},
                             "trajectory": {"answers_per_scenario": 16, "grm_answers_per_scenario": 2}}},
}


def _mtimes(folder: Path) -> dict[Path, int]:
    """Every output's modification time: the worlds' tables and the calibration's own files."""
    return {p: p.stat().st_mtime_ns for p in [*folder.rglob("*.parquet"), *folder.glob("*.csv")]}


def _run(repo: Path) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, "-m", "reappraisal", "run", "results/calibration/summary.csv", "--cores", "2",
                           "--no-record"], cwd=repo, capture_output=True, text=True, env=env_with_venv(), timeout=900)


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_two_tiny_worlds_are_drawn_built_and_summarised_and_a_second_run_rebuilds_nothing(tmp_path):
    repo = make_clean_copy(tmp_path / "repo")
    config = yaml.safe_load((repo / "config.yaml").read_text())
    calibration = config["presets"]["demo"]["calibration"]
    calibration["worlds"] = 2
    calibration["world_config"] = deep_merge(calibration["world_config"], TINY)
    (repo / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))

    proc = _run(repo)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]
    out = repo / "results" / "calibration"
    worlds = {w: repo / "results" / "calibration" / "worlds" / str(w) for w in (0, 1)}

    # Each world is its own draw, built in its own folder with its own seed.
    record = json.loads((out / "worlds.json").read_text())
    assert record["worlds"] == [0, 1]
    assert record["seeds"] == {"0": config["seed"], "1": config["seed"] + 1}
    assert (worlds[0] / "data" / "demo" / "study1_ratings.csv").read_bytes() == \
        (repo / "data" / "demo" / "study1_ratings.csv").read_bytes()
    assert (worlds[1] / "data" / "demo" / "study1_ratings.csv").read_bytes() != \
        (repo / "data" / "demo" / "study1_ratings.csv").read_bytes()
    for folder in worlds.values():  # only the arms the lighter world keeps were trained
        assert sorted(p.name for p in (folder / "results" / "policy").iterdir() if (p / "model").exists()) == \
            ["bradley_terry", "committee", "rm_only"]

    # The worlds' jobs are forks of the calibration run's warm job server: no world started one of its own.
    assert not [folder for folder in worlds.values() if (folder / ".snakemake" / "job-server.log").exists()]
    assert "train-grm" in (repo / ".snakemake" / "job-server.log").read_text()

    # The summary counts every interval of both worlds' tables against its truth, once.
    truths = [pd.read_csv(folder / "results" / "summary" / "tables" / "truth.csv") for folder in worlds.values()]
    assert all(len(t) for t in truths)
    summary = pd.read_csv(out / "summary.csv")
    reported = summary[summary["method"] == "reported"]
    assert set(reported["worlds"]) == {2}
    assert (summary["covered"] <= summary["intervals"]).all()
    assert ((summary["coverage_low"] <= summary["coverage"]) & (summary["coverage"] <= summary["coverage_high"])).all()
    assert reported["intervals"].sum() == sum(len(t) for t in truths)
    assert summary["intervals"].sum() == record["intervals"]

    # Every claim with a verdict is set against its truth in each world; a claim whose arm the world leaves out
    # has no verdict there, so it is not counted.
    claims = pd.read_csv(out / "claims.csv")
    assert not claims.empty and (claims["worlds"] <= 2).all()
    assert (claims["holds_when_true"] + claims["holds_when_false"] <= claims["worlds"]).all()
    assert not {"rm_heavy_scores_lower", "grm_only_collapses"} & set(claims["claim"])
    assert "committee_beats_gpt4" in set(claims["claim"])
    overoptimization = pd.read_csv(out / "overoptimization.csv")
    assert sorted(overoptimization["arm"]) == ["committee", "rm_only"] and set(overoptimization["worlds"]) == {2}
    assert "\\newcommand{\\CalibrationWorlds}{2}" in (out / "numbers.tex").read_text()

    # Resumable: run again and nothing is rebuilt.
    before = _mtimes(out)
    again = _run(repo)
    assert again.returncode == 0, (again.stdout + again.stderr)[-3000:]
    assert "Nothing to be done" in again.stdout + again.stderr, (again.stdout + again.stderr)[-3000:]
    assert before and _mtimes(out) == before
