"""The GPU benchmark script runs end to end in its CPU dry mode, so it cannot rot between GPU sessions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_gpu_benchmark_dry_run_measures_every_part_or_says_why_not(tmp_path):
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks/gpu/bench_gpu.py"), "--dry", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads((tmp_path / "gpu_bench.json").read_text())
    parts = doc["parts"]
    assert doc["machine"]["dry"] is True
    for name in ("rm", "grm", "grpo", "committee_share", "cluster_estimate"):
        assert parts[name]["status"] == "ok", (name, parts[name])
    rm = parts["rm"]["figures"]
    assert rm["speedup"] > 0 and rm["max_abs_score_difference"] < 1e-3  # both sides score the same candidates alike
    grpo = parts["grpo"]["figures"]
    assert grpo["step_s"] >= grpo["generation_s"] + grpo["reward_s"] > 0
    assert grpo["share_scored_by_committee"] == 1.0  # the committee's full cost is in the step
    share = parts["committee_share"]["figures"]
    assert 0 < share["reward_share_of_step"] < 1 and "assumptions" in share
    hours = parts["cluster_estimate"]["figures"]["gpu_hours"]
    assert all(isinstance(hours[k], float) and hours[k] > 0 for k in ("reward_models", "grm_sft", "policy_grpo_per_arm"))
    assert hours["judge_70b_tp4"].startswith("not measured")
    # what cannot run here is reported with its reason, never silently missing
    for name in ("judge", "grpo_vllm", "eval_vllm"):  # vLLM's parts need a GPU
        assert parts[name]["status"] == "skipped" and parts[name]["reason"], name
    assert parts["grm"]["figures"]["vllm_generate"]["status"] == "skipped"
    table = (tmp_path / "gpu_bench.md").read_text()
    assert all(f"| {name} |" in table for name in parts)
