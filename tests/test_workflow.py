"""The workflow as a user runs it: Snakemake end to end on the data half, DVC replay,
dvc.yaml in sync with the Snakefile, lint, and the paper preset's wiring (dry run)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from reappraisal.import_closure import module_path
from tests.workflow_utils import (
    IMPORT_PROBE_ENV,
    REPO,
    env_with_venv,
    imported_package_modules,
    make_clean_copy,
    run_snakemake,
)

DATA_STAGES = ("fetch_data", "ingest", "normalize_ratings", "split_reappraisals", "check_leakage")


def dvc(repo, *args, check=True):
    proc = subprocess.run([sys.executable, "-m", "dvc", *args], cwd=repo, capture_output=True, text=True, env=env_with_venv())
    if check and proc.returncode != 0:
        raise AssertionError(f"dvc {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def git(repo, *args):
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def test_dvc_yaml_matches_snakefile():
    from reappraisal.workflow_dvc import check

    assert check(REPO) == []


def test_no_stage_depends_on_an_empty_file():
    """DVC prints a warning per stage for every empty file among its deps (97 lines on a clean demo run)."""
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    empty = {d for s in stages.values() for d in s["deps"] if (REPO / d).is_file() and (REPO / d).stat().st_size == 0}
    assert empty == set()


def test_a_stage_code_is_what_its_jobs_import_not_what_the_workflow_loads():
    """common.smk imports arms, systems, the judge spec and the panel to shape the DAG; a comment in one
    of them must not mark every stage (a judge fix would retrain every model on the paper preset)."""
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]

    def depending_on(module: str) -> set[str]:
        return {name for name, s in stages.items() if f"src/reappraisal/{module}" in s["deps"]}

    assert depending_on("report/charts.py") == {"report"}
    assert depending_on("evaluation/panel.py") == {"calibrate_judge", "judge", "confirm"}
    trainers = {"fetch_data", "prepare_base_models", "train_reward_model", "train_bradley_terry", "train_grm"}
    assert {"train_policy", "warm_start_policy"} <= depending_on("policy/committee.py")
    assert not depending_on("policy/committee.py") & trainers


def test_every_rule_is_a_dvc_stage_with_config_params():
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    for name, stage in stages.items():
        assert stage["cmd"].startswith("snakemake --cores all --allowed-rules"), name
        keys = stage["params"][0]["config.yaml"]
        assert "preset" in keys and "seed" in keys
        assert stage["outs"], name


def test_every_training_reads_the_reporter_and_dvc_lists_its_dvclive_folder():
    """Each trainer stage tracks ``training`` (report_to) and each training job's DVCLive folder is a top-level
    metric and plot of dvc.yaml: every reward seed, the Bradley-Terry model, both GRM stages, the warm start,
    every policy arm, the demo judge."""
    doc = yaml.safe_load((REPO / "dvc.yaml").read_text())
    trainers = {"train_reward_model", "train_bradley_terry", "train_grm", "warm_start_policy", "train_policy",
                "train_demo_judge"}
    assert {name for name, s in doc["stages"].items() if "training" in s["params"][0]["config.yaml"]} == trainers
    arms = {Path(o).parent.name for o in doc["stages"]["train_policy"]["outs"] if o.endswith("training_log.csv")}
    seeds = {Path(o).name for o in doc["stages"]["train_reward_model"]["outs"]}
    folders = {m.removesuffix("/metrics.json") for m in doc["metrics"]}
    assert folders == ({f"dvclive/train_policy/{a}" for a in arms} | {f"dvclive/train_reward_model/{s}" for s in seeds}
                       | {"dvclive/train_bradley_terry", "dvclive/train_grm/sft", "dvclive/train_grm/grpo",
                          "dvclive/warm_start_policy", "dvclive/train_demo_judge"})
    assert [p for p in doc["plots"] if next(iter(p)).startswith("dvclive/")] == [
        {f"{f}/plots/metrics": {"x": "step"}} for f in sorted(folders)]
    assert "/dvclive/" in (REPO / ".gitignore").read_text().splitlines()  # no stage's output, never committed


def test_data_half_end_to_end_then_dvc_repro_is_consistent(data_pipeline, tmp_path):
    # 1. Snakemake from a clean checkout built the data half (fixture); check its products.
    for rel in ("data/raw/MANIFEST.json", "data/processed/targets.parquet", "data/processed/pairs.parquet", "results/data/leakage.json"):
        assert (data_pipeline / rel).exists(), rel
    # 2. In a clean checkout (a DVC repository as shipped), `dvc repro` builds the same stages through Snakemake.
    repo = make_clean_copy(tmp_path / "repo")
    git(repo, "init", "-q")
    git(repo, "-c", "user.email=ci@example.org", "-c", "user.name=ci", "add", "-A")
    git(repo, "-c", "user.email=ci@example.org", "-c", "user.name=ci", "commit", "-qm", "init")
    dvc(repo, "repro", "check_leakage")
    status = dvc(repo, "status", "check_leakage")
    assert "up to date" in status.stdout.lower(), status.stdout
    # Same bytes of content as the plain Snakemake run: the pipeline is deterministic.
    for rel in ("data/processed/targets.parquet", "data/processed/pairs.parquet", "data/processed/ratings_z.parquet"):
        pd.testing.assert_frame_equal(pd.read_parquet(repo / rel), pd.read_parquet(data_pipeline / rel))
    # 3. A second repro does nothing and Snakemake agrees that nothing is outdated.
    again = dvc(repo, "repro", "check_leakage")
    assert "didn't change" in again.stdout or "up to date" in again.stdout.lower(), again.stdout
    dry = run_snakemake(repo, "-n", "results/data/leakage.json")
    assert "Nothing to be done" in dry.stdout + dry.stderr


def test_snakemake_lint_is_clean():
    proc = run_snakemake(REPO, "--lint", check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _dry_run_jobs(out: str) -> tuple[dict[str, int], dict[str, list[dict[str, str]]]]:
    """Snakemake's dry run: the job count per rule (its "Job stats" table) and each job's resources."""
    counts: dict[str, int] = {}
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "Job stats:")
    for line in lines[start + 3:]:
        if not line.strip() or line.startswith("total"):
            break
        rule, count = line.split()
        counts[rule] = int(count)
    resources: dict[str, list[dict[str, str]]] = {}
    rule = None
    for line in lines:
        if line.startswith("rule ") and line.endswith(":"):
            rule = line[5:-1]
        elif line.strip().startswith("resources:") and rule:
            items = [item.split("=", 1) for item in line.split("resources:", 1)[1].split(", ")]
            resources.setdefault(rule, []).append({k.strip(): v.strip() for k, v in items})
            rule = None
    return counts, resources


def test_paper_preset_dry_run_is_the_dag_a_cluster_user_gets(clean_copy):
    from reappraisal.config import load_config
    from reappraisal.evaluation.systems import best_of_n_systems, evaluated_instances
    from reappraisal.policy.arms import parse_arms
    from reappraisal.settings import PolicySettings, Settings

    cfg = (clean_copy / "config.yaml").read_text().replace("preset: demo", "preset: paper", 1)
    (clean_copy / "config.yaml").write_text(cfg)
    proc = run_snakemake(clean_copy, "results/report.html", "-n", "--profile", "workflow/profiles/slurm")
    counts, resources = _dry_run_jobs(proc.stdout + proc.stderr)
    paper = load_config(clean_copy / "config.yaml")
    ev = paper["evaluation"]
    trained = sum(len(a.seeds) for a in parse_arms(PolicySettings.from_config(paper["policy"])).values() if not a.external)
    models = sum(1 for o in ev["opponents"].values() if o["source"] == "model")
    expected = {
        "train_reward_model": len(paper["reward"]["seeds"]),  # the ensemble: one job per seed
        "train_policy": trained,  # one GRPO job per arm and seed
        "generate_answers": len(evaluated_instances(Settings.from_params(paper))) + models,  # one per generated system, every run
        "generate_best_of_n": len(best_of_n_systems(Settings.from_params(paper))),  # one per declared system and seed of its arm
        "judge": len(ev["runs"]),  # one per run, both orders, every judge
        "warm_start_policy": int(paper["policy"]["warm_start"]["enabled"]),
        "train_grm": 1, "confirm": 1, "report": 1,  # one GRM, one confirmation, one report
    }
    assert {rule: counts.get(rule, 0) for rule in expected} == expected, counts
    assert not {"draw_truth", "compute_truth", "train_demo_judge"} & set(counts)  # the demo's truth stays home
    assert set(resources) == set(counts) and all(len(resources[r]) == n for r, n in counts.items())
    profile = yaml.safe_load((clean_copy / "workflow/profiles/slurm/config.yaml").read_text())
    for rule, jobs in resources.items():
        wanted = {**profile["default-resources"], **profile["set-resources"].get(rule, {})}
        for job in jobs:  # every job asks the scheduler for what the profile gives its rule
            assert {k: job.get(k) for k in wanted} == {k: str(v) for k, v in wanted.items()}, (rule, job)
    assert resources["train_policy"][0]["gpu"] == "4" and resources["train_grm"][0]["slurm_partition"] == "gpu"


@pytest.mark.parametrize(
    "override,fragment",
    [("preset: demo", "preset: nonsense"), ("\nsplit: {}\n", "\nsplit: {val_fraction: lots}\n")],
)
def test_bad_config_stops_snakemake_with_the_key_named(clean_copy, override, fragment):
    path = clean_copy / "config.yaml"
    assert override in path.read_text()
    path.write_text(path.read_text().replace(override, fragment, 1))
    proc = run_snakemake(clean_copy, "-n", "results/report.html", check=False)
    assert proc.returncode != 0
    key = "preset" if "preset" in fragment else "split.val_fraction"
    assert f"config key '{key}'" in proc.stdout + proc.stderr


@pytest.mark.parametrize("part", ["judge", "gold"])
def test_paper_preset_refuses_the_demo_generators_raters_in_one_line(clean_copy, part):
    """The panel judge and the gold scorer read the demo generator's rating model: demo preset only."""
    import yaml

    own = {"preset": "paper", "presets": {"paper": {}}}
    if part == "judge":
        own["presets"]["paper"]["evaluation"] = {"judges": ["demo-panel"], "headline_judge": "demo-panel",
                                                 "calibration": {"candidates": ["demo-panel"]}}
    else:
        own["presets"]["paper"]["policy"] = {"gold_scorer": "demo_gold"}
    (clean_copy / "ours.yaml").write_text(yaml.safe_dump(own))
    proc = run_snakemake(clean_copy, "results/report.html", "-n", "--configfile", "ours.yaml", check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    lines = [line for line in out.splitlines() if "demo preset only" in line]
    assert len(lines) == 1 and ("demo-panel" in lines[0] if part == "judge" else "policy.gold_scorer" in lines[0]), out


@pytest.fixture(scope="module")
def committed_data_half(tmp_path_factory):
    """A git + DVC copy where Snakemake built the data half (jobs printing the modules they
    loaded into their logs) and `dvc commit -f` recorded it. Yields (repo, sha256 of targets before commit)."""
    repo = make_clean_copy(tmp_path_factory.mktemp("dvc_commit") / "repo")
    git(repo, "init", "-q")
    git(repo, "-c", "user.email=ci@example.org", "-c", "user.name=ci", "add", "-A")
    git(repo, "-c", "user.email=ci@example.org", "-c", "user.name=ci", "commit", "-qm", "init")
    run_snakemake(repo, "--cores", "2", "results/data/leakage.json", env=IMPORT_PROBE_ENV)
    before = hashlib.sha256((repo / "data/processed/targets.parquet").read_bytes()).hexdigest()
    dvc(repo, "commit", "-f", "check_leakage", "--with-deps")
    return repo, before


def test_snakemake_run_then_dvc_commit_records_without_recomputing(committed_data_half):
    repo, before = committed_data_half
    target = repo / "data/processed/targets.parquet"
    status = dvc(repo, "status", "check_leakage")
    assert "up to date" in status.stdout.lower(), status.stdout
    assert (repo / "dvc.lock").exists()
    assert hashlib.sha256(target.read_bytes()).hexdigest() == before  # recorded, not recomputed
    # DVC relinks outputs from its cache (new mtimes): `snakemake --touch` realigns them.
    run_snakemake(repo, "--touch", "--cores", "1", "results/data/leakage.json")
    dry = run_snakemake(repo, "-n", "results/data/leakage.json")
    assert "Nothing to be done" in dry.stdout + dry.stderr


def test_editing_any_module_a_stage_loaded_makes_dvc_status_report_that_stage(committed_data_half):
    """What each job really loaded (sys.modules at exit, printed into its log) against the stage's deps as DVC
    itself reads them (every module, the static deps may not miss one a stage ran), then a one-line edit of
    each stage's own modules and of the most shared one against `dvc status` (DVC reports what it tracks)."""
    from dvc.repo import Repo

    repo, _ = committed_data_half
    loaded = {stage: imported_package_modules((repo / "logs" / f"{stage}.log").read_text()) for stage in DATA_STAGES}
    assert "reappraisal.data.leakage_io" in loaded["check_leakage"]  # the probe saw the command's module
    assert "reappraisal.data.table_schemas" in loaded["ingest"]
    with Repo(str(repo)) as dvc_repo:
        deps = {st.name: {Path(d.fs_path).resolve() for d in st.deps} for st in dvc_repo.index.stages
                if st.name in DATA_STAGES}
    for stage, modules in loaded.items():
        for module in modules:
            path = module_path(repo / "src", module).resolve()
            assert any(path == d or d in path.parents for d in deps[stage]), f"{stage} misses {module} ({path})"
    # the edits DVC must see: each stage's least shared module, and the module most stages loaded
    users = {m: {st for st in DATA_STAGES if m in loaded[st]} for m in set().union(*loaded.values())}
    probes = {min(sorted(loaded[st]), key=lambda m: len(users[m])) for st in DATA_STAGES}
    probes.add(max(sorted(users), key=lambda m: len(users[m])))
    for module in sorted(probes):
        path = module_path(repo / "src", module)
        original = path.read_bytes()
        path.write_bytes(original + b"\n# an edit\n")
        try:
            status = json.loads(dvc(repo, "status", "--json", *DATA_STAGES).stdout or "{}")
        finally:
            path.write_bytes(original)
        reported = {stage for stage in status if stage in DATA_STAGES}
        assert users[module] <= reported, f"editing {module} is missed by {sorted(users[module] - reported)}"
    status = json.loads(dvc(repo, "status", "--json", *DATA_STAGES).stdout or "{}")
    assert not status, status  # every edit undone: back to clean
