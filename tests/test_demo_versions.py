"""The demo as the README's main command builds it is versioned, traceable and recoverable.

After `reappraisal run results/report.html` (the `demo_run` fixture): DVC's lock matches every output
(`dvc status` clean), every claim's lineage carries the hash dvc.lock records, a claim traces to its raw
data, config values and code, a config edit marks exactly the claims downstream of it, a failed rerun
is undone by `reappraisal restore`, and a Snakemake killed mid-training is recovered by the same `run`.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path, PurePosixPath

import pandas as pd
import pytest
import yaml

from reappraisal.report.report_io import slug
from tests.workflow_utils import PYTHON, env_with_venv

SUMMARY = ("results/summary/claims.json", "results/summary/numbers.tex", "results/summary/provenance.json",
           "results/summary/tables/headline.csv", "results/summary/tables/index.json")


def cli(repo: Path, *args: str, timeout: int = 1500) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, "-m", "reappraisal", *args], cwd=repo, capture_output=True, text=True,
                          env=env_with_venv(), timeout=timeout)


def dvc(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, "-m", "dvc", *args], cwd=repo, capture_output=True, text=True, env=env_with_venv())


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def demo_copy(demo_run, tmp_path):
    """A copy of the built demo (timestamps, Snakemake's records and DVC's cache included) to change."""
    dest = tmp_path / "repo"
    shutil.copytree(demo_run, dest, symlinks=True)
    return dest


def test_after_the_main_command_dvc_status_is_clean(demo_run):
    status = dvc(demo_run, "status", "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout or "{}") == {}, status.stdout[:2000]


def test_every_claims_lineage_carries_the_hash_dvc_lock_records(demo_run):
    lock = yaml.safe_load((demo_run / "dvc.lock").read_text())["stages"]
    claims = json.loads((demo_run / "results/summary/claims.json").read_text())["claims"]
    checked = 0
    for claim in claims:
        for entry in claim["lineage"]:
            stage = lock[entry["dvc_stage"]]
            recorded = {o["path"]: o["md5"] for o in stage.get("outs", [])}
            recorded |= {d["path"]: d["md5"] for d in stage.get("deps", [])}
            path = PurePosixPath(entry["path"])
            holder = next(str(p) for p in (path, *path.parents) if str(p) in recorded)
            assert entry["dvc_hash"] == recorded[holder], (claim["id"], entry)
            checked += 1
    assert checked >= 2 * len(claims)


def test_a_retracted_claim_traces_to_raw_files_config_values_and_code(demo_run):
    claims = json.loads((demo_run / "results/summary/claims.json").read_text())["claims"]
    retracted = next(c["id"] for c in claims if c["verdict"] == "retracted")
    proc = cli(demo_run, "trace", retracted, "--json")
    assert proc.returncode == 0, proc.stderr
    found = json.loads(proc.stdout)[retracted]
    trace, lock = found["trace"], yaml.safe_load((demo_run / "dvc.lock").read_text())["stages"]
    assert found["changed"] == []
    assert trace["stages"][0] == "fetch_data" and trace["stages"][-1] == "summarize"
    bundle = {d["path"]: d["md5"] for d in lock["fetch_data"]["deps"]}["data/demo"]
    assert {"path": "data/demo", "hash": bundle, "stages": ["fetch_data"]} in trace["raw"]
    for f in trace["fetched_files"]:  # the bundle's checksums, as the fetch recorded them
        assert sha256(demo_run / "data/raw/files" / f["path"]) == f["sha256"]
    assert len(trace["fetched_files"]) >= 5
    keys = {c["key"] for c in trace["config"]}
    assert {"seed", "preset", "presets.demo.policy.learning_rate"} <= keys
    code = {c["path"]: c["hash"] for c in trace["code"]}
    summarize_deps = {d["path"]: d["md5"] for d in lock["summarize"]["deps"]}
    assert code["src/reappraisal/summary/summary_io.py"] == summarize_deps["src/reappraisal/summary/summary_io.py"]
    assert code["src/reappraisal/policy/train_io.py"] == hashlib.md5(
        (demo_run / "src/reappraisal/policy/train_io.py").read_bytes()).hexdigest()
    html = (demo_run / "results/report.html").read_text()
    section = html[html.index(f'id="trace-{slug(retracted)}"'):]
    section = section[: section.index("</details>")]
    assert "src/reappraisal/summary/summary_io.py" in section and bundle in section  # the trace, in the report


def test_editing_one_config_value_marks_exactly_the_claims_downstream_of_it(demo_copy):
    config = demo_copy / "config.yaml"
    text = config.read_text()
    old = "sft: {num_train_epochs: 3, learning_rate: 1.0e-3,"
    assert old in text
    config.write_text(text.replace(old, "sft: {num_train_epochs: 3, learning_rate: 2.0e-3,"))
    # DVC's own judgement of which stages read the edited value ...
    status = json.loads(dvc(demo_copy, "status", "--json").stdout or "{}")
    edited = set(status)
    assert "train_grm" in edited and "train_reward_model" not in edited
    # ... and the claims whose trace runs through one of them are exactly those `trace` marks changed.
    doc = json.loads((demo_copy / "results/summary/provenance.json").read_text())
    expected = {c for c, stages in doc["claims"].items() if edited & set(stages)}
    proc = cli(demo_copy, "trace", "--changed")
    assert proc.returncode == 0, proc.stderr
    lines = dict(line.split(": ", 1) for line in proc.stdout.strip().splitlines())
    marked = {c for c, what in lines.items() if what.startswith("changed")}
    assert marked == expected
    assert 0 < len(marked) < len(lines)  # some claims are downstream of the GRM's training, some are not
    for c in marked:
        assert "config presets.demo.grm.sft.learning_rate" in lines[c]
    assert cli(demo_copy, "trace", "--check").returncode == 1


def test_a_failed_rerun_is_undone_by_restore(demo_copy):
    before = {p: sha256(demo_copy / p) for p in SUMMARY}
    judgments = demo_copy / "results/evaluation/run2/judgments.parquet"
    good = sha256(judgments)
    frame = pd.read_parquet(judgments)
    frame.loc[frame.index[0], "verdict"] = "tie" if frame["verdict"].iloc[0] != "tie" else "win"
    frame.to_parquet(judgments)
    failed = cli(demo_copy, "run", "results/report.html", "--cores", "2")
    assert failed.returncode != 0  # the summary refuses judgments that disagree with their contests
    assert not (demo_copy / "results/summary/claims.json").exists()  # Snakemake removed the failed job's outputs
    proc = cli(demo_copy, "restore", "results/report.html")
    assert proc.returncode == 0, proc.stderr
    assert {p: sha256(demo_copy / p) for p in SUMMARY} == before
    assert sha256(judgments) == good
    assert json.loads(dvc(demo_copy, "status", "--json").stdout or "{}") == {}
    dry = subprocess.run([PYTHON, "-m", "snakemake", "-n", "results/report.html"], cwd=demo_copy,
                         capture_output=True, text=True, env=env_with_venv())
    assert "Nothing to be done" in dry.stdout + dry.stderr


def test_snakemake_killed_mid_training_then_run_again_gives_the_same_model(demo_run, demo_copy):
    """SIGKILL of the Snakemake parent while a reward seed trains (its trainer lives on as an orphan):
    the same `run` command unlocks, reruns the incomplete job, which waits for the orphan's work-folder
    lock and resumes; the model is byte-identical to the uninterrupted one."""
    import psutil

    seed = demo_copy / "results/reward/seed0"
    shutil.rmtree(seed)
    shutil.rmtree(demo_copy / "results/reward/.seed0.work", ignore_errors=True)
    launcher = subprocess.Popen([PYTHON, "-m", "reappraisal", "run", "results/reward/seed0", "--cores", "1",
                                 "--no-record"], cwd=demo_copy, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env=env_with_venv(), start_new_session=True)
    work = demo_copy / "results/reward/.seed0.work"
    deadline = time.time() + 600
    while not any(p.name.startswith("checkpoint-") and (p / "trainer_state.json").is_file()
                  for p in (work.iterdir() if work.is_dir() else [])):
        assert time.time() < deadline and launcher.poll() is None, "no checkpoint before the end of training"
        time.sleep(0.2)
    snake = [p for p in psutil.Process(launcher.pid).children() if "snakemake" in " ".join(p.cmdline())]
    assert len(snake) == 1
    os.kill(snake[0].pid, signal.SIGKILL)
    launcher.wait(timeout=60)
    proc = cli(demo_copy, "run", "results/reward/seed0", "--cores", "1")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for name in ("model.safetensors", "config.json", "tokenizer.json"):  # the records differ in wall-clock seconds
        assert sha256(seed / name) == sha256(demo_run / "results/reward/seed0" / name), name


@pytest.mark.parametrize("module, expected", [
    ("evaluation/panel.py", {"calibrate_judge", "judge", "confirm"}),
    ("report/charts.py", {"report"}),
    ("policy/committee.py", None),  # the policy trainings and the stages after them (read from dvc.yaml below)
])
def test_a_comment_in_one_module_marks_only_the_stages_whose_jobs_import_it(demo_copy, module, expected):
    path = demo_copy / "src/reappraisal" / module
    path.write_text(path.read_text() + "# a comment\n")
    status = dvc(demo_copy, "status", "--json")
    assert status.returncode == 0, status.stderr
    marked = set(json.loads(status.stdout or "{}"))
    stages = yaml.safe_load((demo_copy / "dvc.yaml").read_text())["stages"]
    listing = {name for name, s in stages.items() if f"src/reappraisal/{module}" in s["deps"]}
    assert marked == listing  # DVC's judgement is the import closure's
    if expected is not None:
        assert marked == expected
    else:
        assert {"train_policy", "warm_start_policy"} <= marked
        assert not marked & {"fetch_data", "ingest", "train_reward_model", "train_bradley_terry", "train_grm"}
    assert "is empty" not in status.stderr  # no warning line for an empty dependency


def test_a_setting_added_to_a_section_marks_its_readers_and_another_preset_marks_nothing(demo_copy):
    config = demo_copy / "config.yaml"
    text = config.read_text()
    assert "\nsummary: {}\n" in text
    config.write_text(text.replace("\nsummary: {}\n", "\nsummary: {confidence: 0.9}\n"))
    marked = set(json.loads(dvc(demo_copy, "status", "--json").stdout or "{}"))
    readers = {name for name, spec in yaml.safe_load((demo_copy / "workflow/dvc_stages.yaml").read_text())["stages"].items()
               if "summary" in spec.get("params", [])}
    assert "summarize" in marked and marked == readers
    config.write_text(text.replace("base-policy: {source: model, model: Qwen/Qwen3-4B-Thinking-2507}",
                                   "base-policy: {source: model, model: Qwen/Qwen3-8B}"))
    assert config.read_text() != text  # the paper preset's opponent changed
    assert json.loads(dvc(demo_copy, "status", "--json").stdout or "{}") == {}


def test_dvc_metrics_show_the_headline_and_the_verdicts_and_plots_draw_the_training_curves(demo_run, tmp_path):
    shown = dvc(demo_run, "metrics", "show", "--json")
    assert shown.returncode == 0, shown.stderr
    metrics = json.loads(shown.stdout)[""]["data"]["results/summary/metrics.json"]["data"]
    head = pd.read_csv(demo_run / "results/summary/tables/headline.csv").drop_duplicates(["arm", "opponent"])
    assert len(metrics["headline"]) == len(head)
    for r in head.to_dict("records"):
        row = metrics["headline"][f"{r['arm']} vs {r['opponent']}".replace(".", "_")]
        assert row["win_rate"] == pytest.approx(r["win_rate"], abs=1e-6)
        assert row["ci_low"] == pytest.approx(r["headline_low"], abs=1e-6)
    ledger = json.loads((demo_run / "results/summary/claims.json").read_text())["claims"]
    assert metrics["claims"] == {c["id"].replace(".", "_"): c["verdict"] for c in ledger}
    # every training's DVCLive folder (training.report_to: dvclive) holds its last logged step
    live = yaml.safe_load((demo_run / "dvc.yaml").read_text())["metrics"]
    shown_live = json.loads(shown.stdout)[""]["data"]
    assert live and all(shown_live[path]["data"]["step"] >= 1 for path in live), {p: shown_live.get(p) for p in live}
    plots = dvc(demo_run, "plots", "show", "--json")
    assert plots.returncode == 0, plots.stderr
    drawn = json.loads(plots.stdout)["data"]
    logs = sorted((demo_run / "results/policy").glob("*/training_log.csv"))
    for plot, column in (("gold_per_step", "gold"), ("proxy_reward_per_step", "reward"), ("kl_per_step", "kl")):
        values = drawn[plot][0]["content"]["data"]["values"]
        assert len(values) == sum(len(pd.read_csv(p)) for p in logs)  # every step of every policy
        # the first policy that logged the column (beta0 logs no KL: TRL keeps no reference model at beta 0)
        log = next(p for p in logs if pd.read_csv(p)[column].notna().all())
        first = pd.read_csv(log)
        line = [float(v[column]) for v in values if v["filename"].endswith(f"{log.parent.name}/training_log.csv")]
        assert line == pytest.approx(first[column].tolist()), plot


def _downstream(stages: dict, names: set[str]) -> set[str]:
    """``names`` and every stage that depends, through outputs, on one of them (from dvc.yaml)."""
    found = set(names)
    while True:
        outs = {o for n in found for o in [*stages[n].get("outs", []), *stages[n].get("metrics", [])]}
        more = {n for n, s in stages.items() if n not in found
                and any(d == o or d.startswith(o.rstrip("/") + "/") for d in s["deps"] for o in outs)}
        if not more:
            return found
        found |= more


def test_dvc_exp_run_in_a_temporary_copy_reruns_only_what_a_setting_reaches(demo_copy):
    """The README's steps: commit the build's dvc.lock, then `dvc exp run --temp -S ...`; `dvc exp show` lists it."""
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.invalid"]
    subprocess.run(["git", "add", "-A"], cwd=demo_copy, check=True)
    subprocess.run([*git, "commit", "-qm", "the demo build"], cwd=demo_copy, check=True)
    ran = subprocess.run([PYTHON, "-m", "dvc", "exp", "run", "--temp", "-n", "conf90",
                          "-S", "config.yaml:+presets.demo.summary.confidence=0.9"],
                         cwd=demo_copy, capture_output=True, text=True, env=env_with_venv(), timeout=900)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    stages = yaml.safe_load((demo_copy / "dvc.yaml").read_text())["stages"]
    readers = {name for name, spec in yaml.safe_load((demo_copy / "workflow/dvc_stages.yaml").read_text())["stages"].items()
               if "summary" in spec.get("params", [])}
    assert set(re.findall(r"Running stage '(\w+)'", ran.stdout)) == _downstream(stages, readers)
    assert subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=demo_copy,
                          capture_output=True, text=True).stdout == ""  # the workspace is untouched
    shown = pd.read_csv(io.StringIO(dvc(demo_copy, "exp", "show", "--csv").stdout))
    exp = shown[shown["Experiment"] == "conf90"]
    base = shown[shown["rev"] == "workspace"]
    key = "headline.committee vs base-policy.ci_low"
    assert len(exp) == 1 and float(exp[key].iloc[0]) != float(base[key].iloc[0])  # a narrower interval
