"""The GPU benchmark writes its figures into benchmarks/gpu/estimates.yaml, and the profile is held to them.

``bench_gpu.write_estimates`` runs here on made-up measurements (a vLLM GRPO step and an evaluation batch on an
H100, a part skipped and one failed) into a copy of the committed file: the hand-written part stays byte for
byte, the file parses, the parts not measured keep their earlier figures, and tests/test_slurm_limits.py's check
reads the result: a plausible measurement passes the committed profile, a slow one is refused by rule.
"""

from __future__ import annotations

import copy
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from tests.test_slurm_limits import ESTIMATES, PROFILE, check_profile, gpu_rules

REPO = Path(__file__).resolve().parents[2]
H100 = {"device": "NVIDIA H100 80GB HBM3", "date": "2026-12-06", "torch": "2.13.0+cu130", "transformers": "5.23.0",
        "vllm": "0.30.0", "dry": False, "seconds": 400.0}


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(REPO / "benchmarks/gpu"))
    try:
        import bench_gpu
    finally:
        sys.path.remove(str(REPO / "benchmarks/gpu"))
    return bench_gpu


@pytest.fixture(scope="module")
def limits():
    from reappraisal.config import load_config

    return yaml.safe_load(PROFILE.read_text()), gpu_rules(), load_config(overrides={"preset": "paper"})


def measurements(bench, generation_s: float = 18.0, decode_s: float = 60.0) -> dict:
    part = bench.Part
    return {
        "grpo_vllm": part("grpo_vllm", "ok", figures={
            "generations": 12, "max_completion_length": 2048, "mean_completion_tokens": 2048.0,
            "generation_engine": "vllm colocate (0.3 of the GPU)", "step_s": generation_s + 29.5,
            "generation_s": generation_s, "reward_s": 21.0, "logprobs_and_update_s": 8.5, "trainer_start_s": 70.0}),
        "eval_vllm": part("eval_vllm", "ok", figures={
            "answers": 256, "max_new_tokens": 2048, "engine_start_s": 45.0, "decode_s": decode_s,
            "completion_tokens": 256 * 2048, "answers_per_s": round(256 / decode_s, 2)}),
        "grpo": part("grpo", "skipped", reason="needs about 240 s and 90 s are left"),
        "judge": part("judge", "failed", reason="out of memory"),
    }


def test_the_writer_fills_the_measured_section_and_keeps_the_rest(bench, limits, tmp_path):
    path = tmp_path / "estimates.yaml"
    shutil.copy(ESTIMATES, path)
    committed = ESTIMATES.read_text()
    before = yaml.safe_load(committed)
    bench.write_estimates(path, measurements(bench), H100)
    text = path.read_text()
    # the hand-written part is kept byte for byte, and the file's header still describes the section
    assert text.split(bench.MEASURED_MARKER)[0] == committed.split(bench.MEASURED_MARKER)[0]
    assert "`measured`" in text.split("card:")[0]
    after = yaml.safe_load(text)
    assert {k: after[k] for k in ("card", "margin", "stages")} == {k: before[k] for k in ("card", "margin", "stages")}
    parts = after["measured"]["parts"]
    run = {k: H100[k] for k in ("device", "date", "torch", "transformers", "vllm")}
    assert parts["grpo_vllm"] == {"run": run, "figures": measurements(bench)["grpo_vllm"].figures}
    assert parts["eval_vllm"]["run"] == run
    # what this run did not measure (skipped, failed, not selected) keeps the earlier run's figures
    assert "judge" not in parts
    for name in set(before["measured"]["parts"]) - {"grpo_vllm", "eval_vllm"}:
        assert parts[name] == before["measured"]["parts"][name], name
    # the stages they imply: the vLLM step (not the earlier HF one) for the trainings, the backend for the answers
    stages = after["measured"]["stages"]
    assert {r: e["from"] for r, e in stages.items()} == {
        "train_policy": "measured.parts.grpo_vllm", "train_grm": "measured.parts.grpo_vllm",
        "generate_answers": "measured.parts.eval_vllm", "generate_best_of_n": "measured.parts.eval_vllm"}
    step = bench.h100_step_s(parts["grpo_vllm"]["figures"], 1.0)  # measured on an H100: no scaling
    assert stages["train_policy"]["wall_hours"] == pytest.approx(500 * step / 3600, abs=0.01)
    assert stages["train_policy"]["gpus"] == 4 and stages["generate_best_of_n"]["gpus"] == 1
    assert stages["generate_best_of_n"]["wall_hours"] > 10 * stages["generate_answers"]["wall_hours"] > 0
    # tests/test_slurm_limits.py reads the result: the committed profile covers this measurement
    profile, rules, paper = limits
    assert check_profile(profile, after, rules, paper) == []
    # a second write of nothing new changes nothing
    bench.write_estimates(path, {}, H100)
    assert path.read_text() == text


def test_a_slow_measurement_is_held_against_the_profile_by_rule(bench, limits, tmp_path):
    profile, rules, paper = limits
    path = tmp_path / "estimates.yaml"
    shutil.copy(ESTIMATES, path)
    # decoding far slower than above: the trainings and best-of-16 outgrow the runtimes the profile gives them
    # (an arm's plain answers, 16 times fewer tokens, still fit theirs)
    bench.write_estimates(path, measurements(bench, generation_s=400.0, decode_s=1500.0), H100)
    slow = yaml.safe_load(path.read_text())
    problems = check_profile(profile, slow, rules, paper)
    assert sorted(p.split(":")[0] for p in problems) == ["generate_best_of_n", "train_grm", "train_policy"], problems
    assert all("below the estimate" in p for p in problems), problems
    # a measured stage whose GPUs disagree with the profile's, or with no entry under `stages`, is refused
    odd = copy.deepcopy(yaml.safe_load(ESTIMATES.read_text()))
    odd["measured"]["stages"] = {"train_grm": {**slow["measured"]["stages"]["train_grm"], "gpus": 2, "wall_hours": 1.0},
                                 "train_new_model": {"gpus": 1, "wall_hours": 1.0}}
    assert check_profile(profile, odd, rules, paper) == [
        "train_new_model: a measured estimate for a rule without an entry under `stages`",
        "train_grm: gpu 1 in the profile, the measured estimate is for 2"]


def test_a_dry_run_writes_no_estimates(bench, capsys):
    with pytest.raises(SystemExit) as exit_:
        bench.main(["--dry", "--estimates", str(ESTIMATES)])
    assert exit_.value.code == 2 and "a dry run's are not figures" in capsys.readouterr().err
