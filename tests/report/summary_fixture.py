"""Summary artifacts in the contract's shape (docs/CONVENTIONS.md), built from a simulated contests table.

The report renders what the summary wrote; these files stand in for the summary stage in the
report's own tests: win rates are computed here from simulated contests (6 scenarios × 3 runs ×
40 per arm), intervals with the Wilson formula, so each number the page shows can be traced.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

ARMS = ("committee", "rm_only", "policy_heavy")  # an arm whose name starts with "policy_" on purpose
SCENARIOS = tuple(f"v{i}" for i in range(1, 7))
OOD = ("o1", "o2", "o3")
BAR = 0.608


def wilson(k: float, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def contests(seed: int = 7) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for ai, arm in enumerate(ARMS):
        for pool, scenarios in (("train", SCENARIOS), ("ood", OOD)):
            opponent = "gpt-4-0314" if pool == "train" else "qwen2.5-72b"
            for vi, v in enumerate(scenarios):
                p = min(0.95, 0.55 + 0.1 * ai + 0.04 * vi)
                for run in (1, 2, 3):
                    for _ in range(40 if pool == "train" else 10):
                        rows.append({"arm": arm, "opponent": opponent, "judge": "demo-judge", "vignette_id": v,
                                     "pool": pool, "run": run, "score": rng.choice([1.0, 0.5, 0.0], p=[p * 0.9, 0.1, 0.9 - p * 0.9])})
    return pd.DataFrame(rows)


def _rate_rows(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    out = []
    for key, g in df.groupby(keys, sort=False):
        n = len(g)
        k = g["score"].sum()
        lo, hi = wilson(k, n)
        out.append({**dict(zip(keys, key)), "n_contests": n, "win_rate": k / n, "ci_low": lo, "ci_high": hi})
    return pd.DataFrame(out)


def write_summary(root: Path) -> dict[str, Path]:
    """results/summary/tables/{*.csv,*.md,*.tex,index.json} and results/summary/claims.json under ``root``."""
    tables = root / "results" / "summary" / "tables"
    tables.mkdir(parents=True, exist_ok=True)
    df = contests()
    per_scenario = _rate_rows(df, ["arm", "opponent", "judge", "vignette_id", "pool"])
    per_run = _rate_rows(df[df.pool == "train"], ["arm", "opponent", "judge", "run"])
    head = []
    for (arm, opponent, judge), g in df[df.pool == "train"].groupby(["arm", "opponent", "judge"], sort=False):
        n, k = len(g), g["score"].sum()
        means = g.groupby("vignette_id")["score"].mean()
        lo, hi = wilson(k, n)
        sd = means.std(ddof=1) / math.sqrt(len(means))
        head.append({
            "arm": arm, "opponent": opponent, "judge": judge, "win_rate": k / n, "contests": n, "scenarios": len(means),
            "wilson_low": lo, "wilson_high": hi, "headline_low": means.mean() - 2.57 * sd, "headline_high": means.mean() + 2.57 * sd,
            "headline_method": "cluster t (G-1 df)",
            "logit_jackknife_low": means.mean() - 2.0 * sd, "logit_jackknife_high": means.mean() + 2.0 * sd,
            "boot_low": means.min(), "boot_high": means.max(),
            "signflip_p_bar": 0.03125, "signflip_p_half": 0.03125, "signflip_min_p": 0.03125, "errors": 0,
        })
    headline = pd.DataFrame(head)
    h2h = pd.DataFrame([{"arm": "committee", "opponent": "arm:rm_only", "judge": "demo-judge", "scenarios": 6,
                         "mean_difference": 0.0812, "ci_low": -0.02, "ci_high": 0.18, "signflip_p": 0.1562}])
    extra = pd.DataFrame([{"arm": a, "reward_path_win_rate": 0.7 + 0.05 * i, "heldout_win_rate": 0.6 + 0.05 * i,
                           "gap": 0.1} for i, a in enumerate(ARMS)])
    written = {}
    index = []
    for name, title, caption, frame in (
        ("headline", "Headline", "Win rate against GPT-4-0314 pooled over 3 runs; headline interval: cluster t.", headline),
        ("per_scenario", "Per scenario", "Wilson interval within each scenario.", per_scenario),
        ("per_run", "Per run", "Wilson interval within each run.", per_run),
        ("head_to_head", "Head-to-head", "Paired by scenario.", h2h),
        ("reward_path_gap", "Reward path vs held-out judge", "Gap = reward-path minus held-out win rate.", extra),
        ("exotic_table", "A table the report has no place for", "Rendered generically in the appendix.", extra.head(1)),
    ):
        csv = tables / f"{name}.csv"
        frame.to_csv(csv, index=False)
        (tables / f"{name}.md").write_text(frame.to_markdown(index=False) if hasattr(frame, "to_markdown") else "")
        (tables / f"{name}.tex").write_text("\\begin{tabular}{}\\end{tabular}\n")
        written[name] = csv
        index.append({"name": name, "title": title, "caption": caption, "estimand": "pooled win rate",
                      "files": {"csv": f"results/summary/tables/{name}.csv", "md": f"results/summary/tables/{name}.md", "tex": f"results/summary/tables/{name}.tex"}})
    (tables / "index.json").write_text(json.dumps(index, indent=1))
    written["index"] = tables / "index.json"
    sha = lambda p: __import__("hashlib").sha256(p.read_bytes()).hexdigest()
    lineage = [{"path": "results/summary/tables/headline.csv", "sha256": sha(written["headline"]), "dvc_stage": "summarize", "dvc_hash": "0" * 32}]
    claims = {"claims": [
        {"id": "committee_beats_gpt4", "text": "The committee policy beats GPT-4-0314: headline CI-low > 0.608.",
         "rule": "headline_low > 0.608", "value": float(headline.loc[0, "headline_low"]),
         "verdict": "holds" if headline.loc[0, "headline_low"] > BAR else "fails", "retraction": None, "flag": None, "lineage": lineage},
        {"id": "iid_ci_low", "text": "The committee policy's iid Wilson CI-low 0.846 clears the bar.", "rule": "wilson_low > 0.608",
         "value": float(headline.loc[0, "wilson_low"]), "verdict": "retracted",
         "retraction": {"date": "2025-06-01", "reason": "ignores clustering by scenario", "replacement": "committee_beats_gpt4"},
         "flag": None, "lineage": lineage},
        {"id": "r1_reference", "text": "DeepSeek-R1 95% CI lower 0.718.", "rule": "wald_low(0.771, 240)", "value": 0.7136,
         "verdict": "not_computable", "retraction": None, "flag": "0.718 is the Wald bound (0.7177); Wilson gives 0.714", "lineage": []},
    ]}
    (root / "results" / "summary" / "claims.json").write_text(json.dumps(claims, indent=1))
    written["claims"] = root / "results" / "summary" / "claims.json"
    return written


def write_training(root: Path, arm: str, steps: int = 8) -> tuple[Path, Path]:
    d = root / "results" / "policy" / arm
    d.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(len(arm))
    log = pd.DataFrame({"step": range(1, steps + 1), "reward": np.linspace(-1, 0.5, steps) + rng.normal(0, 0.05, steps),
                        "reward_std": np.linspace(0.9, 0.6, steps), "kl": np.linspace(0, 0.02, steps),
                        "entropy": np.linspace(1.3, 1.1, steps), "frac_reward_zero_std": 0.0, "clipped_ratio": 0.1,
                        "gate_pass_rate": np.linspace(0.75, 0.9, steps),
                        "rm_score": np.linspace(0.0, 0.4, steps), "grm_score": np.linspace(0.4, 0.6, steps),
                        "gold": np.linspace(-0.3, 0.1, steps) + rng.normal(0, 0.05, steps)})
    log.to_csv(d / "training_log.csv", index=False)
    check = lambda v, t: {"value": v, "threshold": t, "passed": True, "description": "d"}
    health = {"verdict": "healthy", "failed": [], "n_steps": steps,
              "checks": {"kl_bounded": check(0.02, 1.0), "entropy_alive": check(0.85, 0.3)}}
    (d / "health.json").write_text(json.dumps(health))
    return d / "training_log.csv", d / "health.json"


def _calibration_judgments(judge: str, n_pairs: int, correct_every: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Judgments of ``judge`` on ``n_pairs`` human pairs (first text preferred when its margin is positive):
    every ``correct_every``-th pair is judged against the humans in both orders, the rest with them."""
    rows, pairs = [], []
    for i in range(n_pairs):
        margin = (1.0 + (i % 3) * 0.5) * (1 if i % 2 else -1)
        human = "A" if margin > 0 else "B"
        verdict = ("B" if human == "A" else "A") if i % correct_every == 0 else human
        pairs.append({"pair_id": f"p{i}", "margin": margin})
        for order, v in (("AB", verdict), ("BA", "B" if verdict == "A" else "A")):
            rows.append({"run": "calibration", "judge": judge, "contest_id": f"p{i}", "vignette_id": f"v{i % 6}",
                         "model": "human:first", "opponent": "human:second", "order": order, "verdict": v})
    return pd.DataFrame(rows), pd.DataFrame(pairs)


def write_calibration(root: Path) -> Path:
    """A judge_calibration.json built by the calibrate stage's own functions: one weak judge, accepted knowingly."""
    from reappraisal.evaluation.calibration import decide, judge_calibration

    p = root / "results" / "evaluation" / "judge_calibration.json"
    p.parent.mkdir(parents=True, exist_ok=True)
    numbers = {}
    for name, every in (("demo-judge", 3), ("demo-judge-untrained", 2)):
        judgments, pairs = _calibration_judgments(name, 40, every)
        numbers[name] = judge_calibration(judgments, pairs, delta=1.0, margin_edges=[0.0, 1.25, 2.5])
    decision = decide(numbers, selected=["demo-judge"], min_agreement=0.7, way="half", accept_weak=True)
    p.write_text(json.dumps({"judges": numbers, "decision": decision, "delta": 1.0, "n_calibration_pairs": 40,
                             "n_clearly_separated": 40, "pairs": "test pairs"}))
    return p


def manifest(root: Path) -> dict:
    """The --inputs manifest the report rule would pass, for everything written above (paths relative to root)."""
    write_summary(root)
    write_calibration(root)
    m = {"summary_tables": {"path": "results/summary/tables/index.json", "kind": "tables_index"},
         "claims": {"path": "results/summary/claims.json", "kind": "claims"},
         "judge_calibration": "results/evaluation/judge_calibration.json"}
    for arm in ARMS:
        write_training(root, arm)
        m[f"health_{arm}"] = {"path": f"results/policy/{arm}/health.json", "kind": "policy_health", "arm": arm}
        m[f"log_{arm}"] = {"path": f"results/policy/{arm}/training_log.csv", "kind": "training_log", "arm": arm}
    return m
