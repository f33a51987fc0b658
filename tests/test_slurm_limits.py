"""The cluster profile's limits against the GPU benchmark's estimates (`benchmarks/gpu/estimates.yaml`).

A job killed at its SLURM time limit is a night lost: each GPU rule must ask
for a GPU, and each estimated stage for at least its estimated wall time
times the stated margin (the larger of the hand-written estimate under
`stages` and the one `bench_gpu.py` wrote under `measured.stages`); a stage
killed at its limit must be retried and find a checkpoint to resume from.
"""

from __future__ import annotations

import copy
import math
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PROFILE = ROOT / "workflow/profiles/slurm/config.yaml"
ESTIMATES = ROOT / "benchmarks/gpu/estimates.yaml"


def gpu_rules(rules_dir: Path = ROOT / "workflow/rules") -> set[str]:
    """Rules whose own `resources:` ask for a GPU (`gpu=N`)."""
    found = set()
    for path in rules_dir.glob("*.smk"):
        for block in re.split(r"^rule ", path.read_text(), flags=re.M)[1:]:
            name, body = block.split(":", 1)
            if re.search(r"^\s+gpu\s*=\s*[1-9]", body, flags=re.M):
                found.add(name.strip())
    return found


def _config_value(cfg: dict, key: str):
    for part in key.split("."):
        cfg = cfg[part]
    return cfg


def check_profile(profile: dict, estimates: dict, workflow_gpu_rules: set[str], paper: dict) -> list[str]:
    """What stops a paper run on the cluster: one line per problem (empty when the profile is fit)."""
    problems = []
    stages = estimates["stages"]
    measured = (estimates.get("measured") or {}).get("stages") or {}
    margin = float(estimates["margin"])
    for rule in sorted(set(measured) - set(stages)):
        problems.append(f"{rule}: a measured estimate for a rule without an entry under `stages`")
    defaults = profile.get("default-resources", {})
    per_rule = profile.get("set-resources", {})
    for rule in sorted((workflow_gpu_rules | {r for r, v in per_rule.items() if v.get("gpu")}) - set(stages)):
        problems.append(f"{rule}: a GPU rule without an entry in {ESTIMATES.name} (an estimate or `not_measured`)")
    retries = int(profile.get("retries", 0))
    if retries < 1:
        problems.append(f"retries: {retries}: a stage killed at its time limit is not retried, so it cannot resume")
    for rule, est in stages.items():
        if "not_run" in est:
            continue
        res = {**defaults, **per_rule.get(rule, {})}
        if rule not in per_rule or not res.get("gpu") or res.get("slurm_partition") == defaults.get("slurm_partition"):
            problems.append(f"{rule}: no GPU resources in the profile (gpu, a GPU partition, runtime)")
            continue
        for where, gpus in (("estimate", est["gpus"]), ("measured estimate", measured.get(rule, {}).get("gpus"))):
            if gpus is not None and int(res["gpu"]) != int(gpus):
                problems.append(f"{rule}: gpu {res['gpu']} in the profile, the {where} is for {gpus}")
        if "runtime" not in per_rule[rule]:
            problems.append(f"{rule}: no runtime of its own (the default {defaults.get('runtime')} min is for CPU jobs)")
            continue
        walls = [e["wall_hours"] for e in (est, measured.get(rule, {})) if "wall_hours" in e]
        if not walls:  # neither estimated by hand nor measured: the runtime is set by hand
            continue
        wall_hours = max(walls)
        runtime_h = int(res["runtime"]) / 60
        wanted = math.ceil(wall_hours * margin * 60)
        if runtime_h * 60 < wanted:
            problems.append(f"{rule}: runtime {res['runtime']} min is below the estimate {wall_hours} h "
                            f"x {margin} = {wanted} min")
        if "checkpoint" in est:
            every = _config_value(paper, est["checkpoint"]["every"])
            of = _config_value(paper, est["checkpoint"]["of"])
            interval_h = wall_hours * every / of
            if interval_h * 2 > runtime_h:  # a killed attempt must leave at least one complete checkpoint behind
                problems.append(f"{rule}: a checkpoint every {interval_h:.1f} h ({est['checkpoint']['every']}={every}"
                                f" of {of}) against a runtime of {runtime_h:.1f} h: a kill at the limit loses "
                                "most of the attempt")
    return problems


@pytest.fixture(scope="module")
def inputs():
    from reappraisal.config import load_config

    return (yaml.safe_load(PROFILE.read_text()), yaml.safe_load(ESTIMATES.read_text()), gpu_rules(),
            load_config(overrides={"preset": "paper"}))


def test_the_profile_covers_every_estimate_and_gpu_rule(inputs):
    assert check_profile(*inputs) == []


def test_every_estimate_says_where_it_comes_from(inputs):
    _, estimates, rules, _ = inputs
    stages = estimates["stages"]
    assert rules <= set(stages)
    for rule, est in stages.items():
        assert {"source", "not_measured", "not_run"} & set(est), rule
        if "source" in est:  # a measured figure: its GPU-hours and wall time agree with the GPUs it ran on
            assert est["gpu_hours"] == pytest.approx(est["wall_hours"] * est["gpus"], rel=0.01), rule
            assert "benchmarks/" in est["source"], rule
    measured = estimates["measured"]
    for rule, est in measured["stages"].items():  # bench_gpu.py's: from a part whose figures are there
        assert est["gpu_hours"] == pytest.approx(est["wall_hours"] * est["gpus"], rel=0.01), rule
        assert est["from"].removeprefix("measured.parts.") in measured["parts"] and est["assumes"], rule
    for name, part in measured["parts"].items():
        assert {"device", "date", "torch", "transformers", "vllm"} <= set(part["run"]) and part["figures"], name


def _planted(inputs, edit):
    profile, estimates, rules, paper = copy.deepcopy(inputs)
    edit(profile)
    return check_profile(profile, estimates, rules, paper)


def test_check_refuses_a_runtime_below_the_estimate(inputs):
    def short(profile):
        profile["set-resources"]["train_policy"]["runtime"] = 1440  # 24 h against 44.6 h
    problems = _planted(inputs, short)
    assert len(problems) == 1 and problems[0].startswith("train_policy: runtime 1440 min is below"), problems


def test_check_refuses_a_gpu_rule_without_resources(inputs):
    problems = _planted(inputs, lambda profile: profile["set-resources"].pop("generate_best_of_n"))
    assert problems == ["generate_best_of_n: no GPU resources in the profile (gpu, a GPU partition, runtime)"]


def test_check_refuses_a_gpu_rule_missing_from_the_estimates(inputs):
    profile, estimates, rules, paper = copy.deepcopy(inputs)
    problems = check_profile(profile, estimates, rules | {"train_new_model"}, paper)
    assert problems == ["train_new_model: a GPU rule without an entry in estimates.yaml (an estimate or "
                        "`not_measured`)"]


def test_check_refuses_a_profile_that_cannot_resume_a_killed_stage(inputs):
    problems = _planted(inputs, lambda profile: profile.update(retries=0))
    assert len(problems) == 1 and problems[0].startswith("retries: 0"), problems
    profile, estimates, rules, paper = copy.deepcopy(inputs)
    paper["policy"]["save_steps"] = paper["policy"]["max_steps"]  # the only checkpoint is the last step
    problems = check_profile(profile, estimates, rules, paper)
    assert len(problems) == 1 and problems[0].startswith("train_policy: a checkpoint every"), problems
