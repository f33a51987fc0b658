"""A world is a seed: world 0 is the shipped demo's data, another world a fresh draw, each in a folder of its own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from reappraisal.calibration.world import PROJECT_LINKS, world_seed
from reappraisal.calibration.world_io import build_command, prepare_world
from reappraisal.config import load_config
from reappraisal.errors import ConfigError
from reappraisal.settings import Settings

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def params():
    cfg = load_config(REPO / "config.yaml")
    return {"seed": cfg["seed"], "preset": cfg["preset"], "data": cfg["data"], "calibration": cfg["calibration"]}


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_world_0_is_the_shipped_demo_and_world_1_a_fresh_draw_of_the_same_generator(tmp_path, params):
    shipped = _files(REPO / "data" / "demo")
    assert prepare_world(0, tmp_path / "0", Settings.from_params(params), REPO) == params["seed"]
    assert _files(tmp_path / "0" / "data" / "demo") == shipped  # byte for byte
    assert prepare_world(1, tmp_path / "1", Settings.from_params(params), REPO) == world_seed(params["seed"], 1)
    other = _files(tmp_path / "1" / "data" / "demo")
    assert other.keys() == shipped.keys()
    assert other["vignettes.csv"] == shipped["vignettes.csv"]  # the same scenarios, references and opponents
    assert other["gpt4_reappraisals.csv"] == shipped["gpt4_reappraisals.csv"]
    assert other["study1_reappraisals.csv"] != shipped["study1_reappraisals.csv"]  # fresh humans, raters, ratings
    assert other["study1_ratings.csv"] != shipped["study1_ratings.csv"]
    settings = yaml.safe_load((tmp_path / "1" / "world.yaml").read_text())
    assert settings["seed"] == params["seed"] + 1
    for name in PROJECT_LINKS:
        assert (tmp_path / "1" / name).resolve() == (REPO / name).resolve()
    # preparing again (a resumed calibration) rewrites nothing that is already right
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "1" / "data").rglob("*") if p.is_file()}
    prepare_world(1, tmp_path / "1", Settings.from_params(params), REPO)
    assert before == {p: p.stat().st_mtime_ns for p in (tmp_path / "1" / "data").rglob("*") if p.is_file()}
    command = build_command(tmp_path / "1", cores=2, profile=None)
    assert command[command.index("--") + 1:] == ["--configfile", "config.yaml", "world.yaml"]


def test_a_world_needs_the_demo_s_bundled_data(tmp_path, params):
    paper = dict(params, preset="paper", data=dict(params["data"], source="osf"))
    with pytest.raises(ConfigError, match="calibration"):
        prepare_world(1, tmp_path / "1", Settings.from_params(paper), REPO)
    assert not (tmp_path / "1").exists()


def test_the_world_settings_merge_over_the_preset_in_a_snakemake_dry_run(tmp_path, params):
    """Snakemake reads world.yaml over config.yaml in the world's folder: its seed reaches the jobs' settings."""
    folder = tmp_path / "3"
    prepare_world(3, folder, Settings.from_params(dict(params, calibration=dict(params["calibration"], world_config={
        "policy": {"max_steps": 7}}))), REPO)
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile", "config.yaml",
                           "world.yaml", "-p", "results/summary/claims.json"],
                          cwd=folder, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    params_files = list((folder / ".snakemake" / "params").glob("*.json"))
    texts = [p.read_text() for p in params_files]
    assert any(f'"seed": {params["seed"] + 3}' in t for t in texts)
    assert any('"max_steps": 7' in t for t in texts)


def test_world_0_would_rebuild_nothing_of_the_demo_build(tmp_path, params, demo_run):
    """World 0 of a calibration without overrides is the demo: in a world folder holding the demo build's
    outputs (and Snakemake's record of them), its data, settings and project links leave nothing to rebuild: the
    same data, the same parameters of every job (the seed among them), the same commands and code. Any
    difference (another seed, another setting or a byte of data) would rerun the jobs it reaches."""
    import shutil

    folder = tmp_path / "0"
    skip = {*PROJECT_LINKS, ".git", ".dvc", "dvc.lock", "logs", "dvclive"}
    shutil.copytree(demo_run, folder, symlinks=True, ignore=lambda d, names: skip & set(names) if d == str(demo_run)
                    else set())
    plain = Settings.from_params(dict(params, calibration=dict(params["calibration"], world_config={})))
    assert prepare_world(0, folder, plain, demo_run) == params["seed"]
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile", "config.yaml",
                           "world.yaml", "results/summary/claims.json"], cwd=folder, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Nothing to be done" in proc.stdout + proc.stderr, (proc.stdout + proc.stderr)[-3000:]
    # and world 1 would rebuild from its data on
    prepare_world(1, tmp_path / "1", plain, demo_run)
    shutil.rmtree(folder / "data" / "demo")
    shutil.copytree(tmp_path / "1" / "data" / "demo", folder / "data" / "demo")
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--configfile", "config.yaml",
                           "world.yaml", "results/summary/claims.json"], cwd=folder, capture_output=True, text=True)
    assert proc.returncode == 0 and "fetch_data" in proc.stdout + proc.stderr


def test_an_arm_turned_off_is_as_if_it_were_not_declared():
    """`enabled: false` (how a world's settings, merged over the preset, leave an arm out) removes the arm before
    any stage reads the config; the key leaves the arms that stay, so their settings are the same bytes."""
    plain = load_config(REPO / "config.yaml")
    off = load_config(REPO / "config.yaml", overrides={"presets": {"demo": {"policy": {"arms": {
        "grm_only": {"enabled": False}, "beta0": {"enabled": True}}}}}})
    assert set(plain["policy"]["arms"]) - set(off["policy"]["arms"]) == {"grm_only"}
    assert off["policy"]["arms"] == {k: v for k, v in plain["policy"]["arms"].items() if k != "grm_only"}
    with pytest.raises(ConfigError, match="policy.arms.beta0.enabled"):
        load_config(REPO / "config.yaml", overrides={"presets": {"demo": {"policy": {"arms": {
            "beta0": {"enabled": "no"}}}}}})
    every = {name: {"enabled": False} for name in plain["policy"]["arms"]}
    with pytest.raises(ConfigError, match="every arm is turned off"):
        load_config(REPO / "config.yaml", overrides={"presets": {"demo": {"policy": {"arms": every}}}})
