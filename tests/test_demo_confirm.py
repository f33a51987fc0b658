"""The demo's seeds, best-of-N system, selection and pre-registered confirmation, as the main command builds them.

On the `demo_run` build: the two seeds of the v1 arm are different checkpoints with their own rows and a
pooled row; the best-of-N system kept the ensemble's argmax of its N real samples; the confirmation pool
was split off before anything was scored and generated only after the pre-registration, for the selected
system alone; rerunning the confirm command on the registered files reproduces the confirmation, and an
edited pre-registration is refused.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest
import yaml

from reappraisal.file_hashes import file_digests
from tests.workflow_utils import PYTHON, env_with_venv


def _table(repo: Path, name: str) -> pd.DataFrame:
    return pd.read_csv(repo / f"results/summary/tables/{name}.csv")


def test_the_bradley_terry_model_recovers_the_planted_quality(demo_run):
    """Held-out within-scenario pairs (human preference from the demo's planted quality): above chance, with
    the lower end of the scenario-clustered interval above 0.5."""
    pairwise = json.loads((demo_run / "results/reward/metrics.json").read_text())["bradley_terry"]["pairwise"]
    assert pairwise["accuracy"] > 0.6 and pairwise["ci_cluster_t"]["low"] > 0.5


def test_the_v1_arm_trains_once_per_seed_on_the_bradley_terry_model(demo_run):
    seeds = {s: demo_run / f"results/policy/bradley_terry-seed{s}" for s in (0, 1)}
    health = {s: json.loads((d / "health.json").read_text()) for s, d in seeds.items()}
    assert [health[s]["policy_seed"] for s in (0, 1)] == [0, 1]
    assert health[0]["training_seed"] != health[1]["training_seed"]
    assert all(h["reward"] == "bradley_terry" and h["weights"]["w_grm"] == 0.0 for h in health.values())
    weights = {s: file_digests(d / "model" / "model.safetensors")[0] for s, d in seeds.items()}
    assert weights[0] != weights[1]  # different seeds, different checkpoints
    card = (seeds[1] / "README.md").read_text()
    assert "Bradley–Terry reward model alone" in card and "policy seed 1" in card
    table = _table(demo_run, "seeds").set_index("seed")
    assert table.loc["pooled", "contests"] == table.loc[["0", "1"], "contests"].sum()
    assert table.loc["pooled", "level"] == "arm" and set(table.loc[["0", "1"], "level"]) == {"seed"}


def test_the_best_of_n_system_keeps_the_ensembles_argmax_of_its_samples(demo_run):
    paths = sorted((demo_run / "results/evaluation").glob("run*/best_of_n/committee-bon4-ensemble.parquet"))
    assert len(paths) == 3
    for path in paths:
        candidates = pd.read_parquet(path)
        generations = pd.read_parquet(path.parent.parent / "generations" / path.name)
        assert candidates["passed"].mean() > 0.5  # the warm-started policy answers: real scores to choose from
        for _, group in candidates.groupby(["vignette_id", "sample"]):
            assert len(group) == 4 and group["kept"].sum() == 1
            ok = group[group["passed"]]
            expected = ok["score"].idxmax() if len(ok) else group.index[0]
            assert group.loc[expected, "kept"]
        kept = candidates[candidates["kept"]].sort_values(["vignette_id", "sample"])["answer"].tolist()
        assert kept == generations.sort_values(["vignette_id", "sample"])["answer"].tolist()
    row = _table(demo_run, "best_of_n").set_index("pool").loc["train"]
    assert row["generations_per_answer"] == 4 and row["generated_tokens_per_answer"] > row["kept_tokens_per_answer"]


def test_the_confirmation_pool_is_generated_only_after_the_preregistration(demo_run):
    prereg_path = demo_run / "results/confirm/preregistration.yaml"
    prereg = yaml.safe_load(prereg_path.read_text())
    confirm_ids = set(prereg["confirmation_pool"]["scenarios"])
    assert len(confirm_ids) == 7
    # no evaluation run generated or judged a confirmation scenario
    for run in (1, 2, 3):
        for path in (demo_run / f"results/evaluation/run{run}/generations").glob("*.parquet"):
            assert not confirm_ids & set(pd.read_parquet(path)["vignette_id"]), path
        contests = pd.read_parquet(demo_run / f"results/evaluation/run{run}/contests.parquet")
        assert not confirm_ids & set(contests["vignette_id"])
    generations = pd.read_parquet(demo_run / "results/confirm/generations.parquet")
    assert set(generations["vignette_id"]) == confirm_ids and set(generations["arm"]) == {prereg["selected_system"]}
    assert set(generations["preregistration_sha256"]) == {file_digests(prereg_path)[0]}
    assert prereg_path.stat().st_mtime <= (demo_run / "results/confirm/generations.parquet").stat().st_mtime
    # the registration names the checkpoint, metric, interval, bar and test, and the selection it came from
    assert prereg["checkpoint_sha256"] and all(len(h) == 64 for h in prereg["checkpoint_sha256"].values())
    assert prereg["interval"]["method"] == "ci_korn_graubard" and prereg["bar"] == 0.5
    selection = _table(demo_run, "selection")
    assert selection.loc[selection["selected"], "system"].tolist() == [prereg["selected_system"]]
    assert selection["win_rate"].max() == pytest.approx(prereg["selection"]["selected_estimate"])


def _confirm(repo: Path, out: Path) -> subprocess.CompletedProcess:
    from reappraisal.config import load_config
    from reappraisal.evaluation import systems
    from reappraisal.settings import Settings

    config = load_config(repo / "config.yaml")
    settings = Settings.from_params(config)
    checkpoints = {}
    for name in systems.evaluated_arms(settings):
        bon = systems.best_of_n_systems(settings).get(name)
        entry = {"policy": systems.system_model(settings, name)}
        if bon is not None:
            entry["rm"] = [f"results/reward/seed{s}" for s in config["reward"]["seeds"]]
        checkpoints[name] = entry
    params = json.dumps({k: config[k] for k in ("evaluation", "policy", "summary", "seed", "preset")})
    return subprocess.run(
        [PYTHON, "-m", "reappraisal", "confirm", "--preregistration", "results/confirm/preregistration.yaml",
         "--generations", "results/confirm/generations.parquet", "--checkpoints", json.dumps(checkpoints),
         "--targets", "data/processed/targets.parquet", "--vignettes", "data/interim/vignettes.parquet",
         "--calibration", "results/evaluation/judge_calibration.json", "--cache-dir", str(out / "cache"),
         "--out", str(out / "confirmation.json"), "--judgments", str(out / "judgments.parquet"),
         "--contests", str(out / "contests.parquet"), "--params", params],
        cwd=repo, capture_output=True, text=True, env=env_with_venv(), timeout=600)


def test_confirm_reproduces_on_the_registered_files_and_refuses_an_edited_registration(demo_run, tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(demo_run, repo, symlinks=True)
    proc = _confirm(repo, tmp_path / "again")
    assert proc.returncode == 0, proc.stderr[-2000:]
    again = json.loads((tmp_path / "again/confirmation.json").read_text())
    built = json.loads((repo / "results/confirm/confirmation.json").read_text())
    for key in ("system", "win_rate", "ci_low", "ci_high", "verdict", "contests", "selection_estimate"):
        assert again[key] == built[key]
    prereg = repo / "results/confirm/preregistration.yaml"
    prereg.write_text(prereg.read_text().replace("bar: 0.5", "bar: 0.3"))
    proc = _confirm(repo, tmp_path / "edited")
    assert proc.returncode != 0 and "changed after the confirmation answers were generated" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not (tmp_path / "edited/confirmation.json").exists()


def test_a_registration_edited_after_its_confirmation_is_refused_on_the_spent_pool(demo_run, tmp_path):
    """Edit the bar once the result is known, ask Snakemake for the confirmation again: the answers are generated
    anew under the edited registration, and confirm refuses in one line naming the earlier attempt."""
    repo = tmp_path / "repo"
    shutil.copytree(demo_run, repo, symlinks=True)
    built = json.loads((repo / "results/confirm/confirmation.json").read_text())
    assert [a["preregistration_sha256"] for a in built["attempts"]] == [built["preregistration_sha256"]]
    assert built["attempts"][0]["verdict"] == built["verdict"] and built["attempts"][0]["pool"] == built["pool"]
    ledger = repo / "results/confirm/attempts.jsonl"
    before = ledger.read_text()
    prereg = repo / "results/confirm/preregistration.yaml"
    prereg.write_text(prereg.read_text().replace("bar: 0.5", "bar: 0.1"))
    proc = subprocess.run([PYTHON, "-m", "snakemake", "--cores", "1", "results/confirm/confirmation.json"], cwd=repo,
                          capture_output=True, text=True, env=env_with_venv(), timeout=900)
    assert proc.returncode != 0
    errors = [line for line in (proc.stdout + proc.stderr).splitlines() if line.startswith("error:")]
    assert errors and "this confirmation pool was spent by the attempt of" in errors[0]
    assert "evaluation.confirmation_pool.scenarios" in errors[0]
    assert ledger.read_text() == before  # the refused attempt added nothing
    table = pd.read_csv(repo / "results/summary/tables/confirmation.csv")
    assert table["attempts"].tolist() == [1]  # the report's confirmation table counts the ledger's attempts
