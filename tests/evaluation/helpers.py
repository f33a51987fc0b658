"""Small builders shared by the evaluation tests: judge YAMLs, contests, params."""

from __future__ import annotations

import copy
from pathlib import Path

import pandas as pd
import yaml

from reappraisal.config import load_config
from reappraisal.evaluation.judge_spec import JUDGES_DIR, load_judge

DEMO_JUDGE = yaml.safe_load((JUDGES_DIR / "demo-judge.yaml").read_text())


def write_judge(folder: Path, name: str, **overrides) -> Path:
    """A judge YAML in ``folder``: the demo judge's template with ``overrides`` (nested dicts merged)."""
    spec = copy.deepcopy(DEMO_JUDGE)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(spec.get(key), dict):
            spec[key].update(value)
        elif value is None:
            spec.pop(key, None)
        else:
            spec[key] = value
    if spec["backend"] != "transformers" and "prefill" not in (overrides.get("template") or {}):
        spec["template"].pop("prefill", None)  # the demo judge's prefill is for local models only
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def openai_judge(folder: Path, base_url: str, name: str = "fake-judge", *, api_key_env: str | None = None,
                 timeout_s: float = 2.0, max_retries: int = 2, concurrency: int = 4, **overrides):
    request = {"timeout_s": timeout_s, "max_retries": max_retries, "backoff_s": 0.01, "max_backoff_s": 5.0,
               "concurrency": concurrency, **overrides.pop("request", {})}
    write_judge(folder, name, backend="openai", model="fake-model", base_url=base_url, api_key_env=api_key_env,
                request=request, **overrides)
    return load_judge(name, folder)


def contests_frame(n_per_scenario: int = 3, scenarios=("v01", "v02"), opponent: str = "gpt-4-0314") -> pd.DataFrame:
    """Contests in which the arm's answer is GOOD-k and the opponent's BAD-k (so the better answer is known)."""
    rows = []
    for v in scenarios:
        for k in range(n_per_scenario):
            rows.append({
                "contest_id": f"committee|{opponent}|{v}|{k}", "vignette_id": v, "pool": "train", "model": "committee",
                "opponent": opponent, "model_answer_id": f"m-{v}-{k}", "model_answer": f"GOOD answer {v} {k}.",
                "opponent_answer_id": f"o-{v}-{k}", "opponent_answer": f"BAD answer {v} {k}.",
            })
    return pd.DataFrame(rows)


def scenarios_for(contests: pd.DataFrame) -> dict[str, str]:
    return {v: f"Scenario text of {v}." for v in contests["vignette_id"].unique()}


def demo_params(**evaluation) -> dict:
    """The resolved demo config (as a stage receives it) with ``evaluation`` keys overridden."""
    cfg = load_config()
    cfg["evaluation"].update(evaluation)
    return cfg
