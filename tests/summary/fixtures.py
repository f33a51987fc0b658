"""Evaluation outputs in the shape of the evaluation contract, built from planted rates.

A test builds judgments (one row per judged order) from verdict pairs drawn
with a planted win rate per (arm, opponent, scenario), and the contests
table from them with its own two-order rule (written out below, not the
package's), so a summary can be checked against independent arithmetic.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

HEADLINE_JUDGE = "judge-a"
REWARD_PATH = "reward_path:ensemble"
TRAIN = [f"v{g}" for g in range(1, 7)]
OOD = [f"o{g}" for g in range(1, 5)]
ARMS = {"committee": {"w_rm": 0.5, "w_grm": 0.5}, "rm_only": {"w_rm": 1.0, "w_grm": 0.0},
        "committee_rm_heavy": {"w_rm": 0.7, "w_grm": 0.3}, "bradley_terry": {"reward": "bradley_terry", "seeds": [0, 1]}}
#: The policy folders (arm instances): an arm with two seeds has one per seed.
INSTANCES = ["committee", "rm_only", "committee_rm_heavy", "bradley_terry-seed0", "bradley_terry-seed1"]
BEST_OF_N = "committee-bon4-ensemble"
RUNS = (1, 2, 3)
#: The held-out judge's YAML (verdict pattern and labels of the raw replies built below).
JUDGES_DIR = Path(__file__).with_name("judges")

# (arm, opponent, pool, contests per scenario and run, mean rate)
MATCHUPS = [
    ("committee", "gpt-4-0314", "train", 40, 0.80),
    ("rm_only", "gpt-4-0314", "train", 12, 0.70),
    ("committee_rm_heavy", "gpt-4-0314", "train", 12, 0.72),
    ("committee", "deepseek-r1", "train", 12, 0.60),
    ("committee", "arm:rm_only", "train", 12, 0.55),
    ("committee", "deepseek-r1", "ood", 10, 0.60),
    ("rm_only", "deepseek-r1", "ood", 10, 0.58),
    ("committee", "qwen2.5-72b", "ood", 10, 0.65),
    ("rm_only", "qwen2.5-72b", "ood", 10, 0.62),
    # two seeds of one arm, a best-of-N system, and every candidate on the selection pool (ood vs qwen2.5-72b)
    ("bradley_terry-seed0", "gpt-4-0314", "train", 12, 0.60),
    ("bradley_terry-seed1", "gpt-4-0314", "train", 12, 0.66),
    (BEST_OF_N, "gpt-4-0314", "train", 12, 0.80),
    ("committee_rm_heavy", "qwen2.5-72b", "ood", 10, 0.60),
    ("bradley_terry-seed0", "qwen2.5-72b", "ood", 10, 0.55),
    ("bradley_terry-seed1", "qwen2.5-72b", "ood", 10, 0.57),
    (BEST_OF_N, "qwen2.5-72b", "ood", 10, 0.66),
]

# (AB verdict, BA verdict) -> the arm's contest score; the arm sits in slot A in
# order AB and in slot B in order BA.
TWO_ORDER_SCORE = {
    ("A", "B"): 1.0, ("B", "A"): 0.0, ("A", "A"): 0.5, ("B", "B"): 0.5, ("tie", "tie"): 0.5,
    ("A", "tie"): 0.5, ("tie", "B"): 0.5, ("tie", "A"): 0.5, ("B", "tie"): 0.5,
}


def _verdicts(rng, p, size, error_share):
    """Verdict pairs with P(win both) = p - 0.1, P(split/tie) = 0.2 (so E[score] = p)."""
    kind = rng.choice(3, size=size, p=[p - 0.1, 0.2, 0.9 - p])
    halves = [("A", "A"), ("tie", "tie"), ("B", "B"), ("A", "tie")]
    pairs = [("A", "B") if k == 0 else ("B", "A") if k == 2 else halves[rng.integers(4)] for k in kind]
    errors = rng.random(size) < error_share
    return [("error", ba) if e else (ab, ba) for (ab, ba), e in zip(pairs, errors)]


def build_run(run, seed=0, *, matchups=MATCHUPS, error_share=0.01, reward_path=True):
    rng = np.random.default_rng([seed, run])
    scenario_shift = {v: d for v, d in zip(TRAIN + OOD, np.random.default_rng(seed).normal(0, 0.06, 10))}
    rows = []
    for arm, opponent, pool, per_cell, rate in matchups:
        scenarios = TRAIN if pool == "train" else OOD
        for v in scenarios:
            p = float(np.clip(rate + scenario_shift[v], 0.15, 0.85))
            pairs = _verdicts(rng, p, per_cell, error_share)
            judges = [(HEADLINE_JUDGE, "heldout", pairs)]
            if reward_path and opponent == "gpt-4-0314":
                judges.append((REWARD_PATH, "reward_path", _verdicts(rng, min(p + 0.1, 0.85), per_cell, 0.0)))
            for i in range(per_cell):
                contest = f"r{run}-{arm}-{opponent}-{v}-{i:03d}"
                for judge, kind, verdicts in judges:
                    ab, ba = verdicts[i]
                    for order, verdict in (("AB", ab), ("BA", ba)):
                        rows.append({
                            "run": run, "judge": judge, "judge_kind": kind, "contest_id": contest,
                            "vignette_id": v, "pool": pool, "model": arm, "opponent": opponent, "order": order,
                            "verdict": verdict, "raw": f"[[{verdict}]] reasoning for {contest}",
                            "model_answer_id": f"{contest}-m", "opponent_answer_id": f"{contest}-o",
                        })
    judgments = pd.DataFrame(rows)
    return judgments, contests_from(judgments)


def contests_from(judgments: pd.DataFrame) -> pd.DataFrame:
    keys = ["run", "judge", "judge_kind", "contest_id", "vignette_id", "pool", "model", "opponent"]
    ab = judgments[judgments["order"] == "AB"].set_index(keys)["verdict"].rename("verdict_ab")
    ba = judgments[judgments["order"] == "BA"].set_index(keys)["verdict"].rename("verdict_ba")
    wide = pd.concat([ab, ba], axis=1).reset_index()
    error = (wide["verdict_ab"] == "error") | (wide["verdict_ba"] == "error")
    wide["score"] = [np.nan if e else TWO_ORDER_SCORE[(a, b)]
                     for a, b, e in zip(wide["verdict_ab"], wide["verdict_ba"], error)]
    wide["error"] = error.to_numpy()
    # answer lengths in words, a deterministic function of the contest id (the same for every judge)
    codes = wide["contest_id"].map(lambda c: sum(map(ord, c)))
    wide["model_words"] = (20 + codes % 17).astype("int64")
    wide["opponent_words"] = (22 + codes % 11).astype("int64")
    return wide


def write_evals(root: Path, seed=0, **kwargs) -> dict[int, tuple[pd.DataFrame, pd.DataFrame]]:
    out = {}
    for run in RUNS:
        judgments, contests = build_run(run, seed, **kwargs)
        folder = root / "results" / "evaluation" / f"run{run}"
        folder.mkdir(parents=True, exist_ok=True)
        judgments.to_parquet(folder / "judgments.parquet", index=False)
        contests.to_parquet(folder / "contests.parquet", index=False)
        out[run] = (judgments, contests)
    return out


def write_metrics(root: Path) -> None:
    for stage in ("reward", "grm", "evaluation"):
        (root / "results" / stage).mkdir(parents=True, exist_ok=True)
    pairwise = lambda acc: {"accuracy": acc, "n_pairs": 300, "n_scenarios": 6,
                            "ci_cluster_t": {"method": "cluster_t", "low": acc - 0.05, "high": acc + 0.05,
                                             "confidence": 0.95},
                            "ci_iid_wilson": {"method": "iid_wilson", "low": acc - 0.03, "high": acc + 0.03,
                                              "confidence": 0.95}}
    (root / "results" / "reward" / "metrics.json").write_text(json.dumps({
        "per_seed": {f"seed{s}": {"pairwise": pairwise(0.74 + 0.01 * s), "spearman": {"within_scenario_mean": 0.3},
                                  "best_of_n_win_vs_random": 0.55} for s in range(3)},
        "mean_of_seeds_pairwise_accuracy": 0.75,
        "ensemble": {"pairwise": pairwise(0.76), "spearman": {"within_scenario_mean": 0.31},
                     "best_of_n": {"n": 8, "win_vs_random": 0.56,
                                   "ci_cluster_t": {"method": "cluster_t", "low": 0.45, "high": 0.67,
                                                    "confidence": 0.95}}},
        "bradley_terry": {"pairwise": pairwise(0.78), "spearman": {"within_scenario_mean": 0.35},
                          "best_of_n": {"n": 8, "win_vs_random": 0.61,
                                        "ci_cluster_t": {"method": "cluster_t", "low": 0.52, "high": 0.70,
                                                         "confidence": 0.95}},
                          "best_of_n_vs_ensemble": {"difference": 0.05, "n_scenarios": 6,
                                                    "ci_cluster_t": {"method": "cluster_t", "low": -0.02,
                                                                     "high": 0.12, "confidence": 0.95}},
                          "training": {"n_train_pairs": 500, "min_gap": 0.5}},
    }))
    (root / "results" / "grm" / "metrics.json").write_text(json.dumps({"models": {
        "final": {"mode": "generate", "n_pairs": 100, "error_rate": 0.02,
                  "accuracy": {"accuracy": 0.76, "ci_cluster_t": {"low": 0.6, "high": 0.9, "confidence": 0.95}},
                  "position_consistency": {"n_pairs": 100, "n_first_slot_both": 10, "n_second_slot_both": 5,
                                           "n_with_tie": 20, "n_flips": 15, "consistency": 0.65, "flip_rate": 0.15,
                                           "tie_rate": 0.2},
                  "first_slot_bias": {"n_first_slot_both": 10, "n_second_slot_both": 5, "p_value": 0.3},
                  "human_agreement": {"agreement_half": 0.7, "kappa": 0.4}}}}))
    (root / "results" / "evaluation" / "judge_calibration.json").write_text(json.dumps({
        "judges": {HEADLINE_JUDGE: {"agreement": {"strict": 0.7, "half": 0.78, "dropped": 0.85}, "kappa": 0.5,
                                    "n_separated_pairs": 120, "n_undecided": 20, "n_errors": 1,
                                    "by_margin": [{"low": 1.0, "high": 5.0, "agreement_half": 0.78, "n_pairs": 120}],
                                    "position": {"consistency": 0.8, "flip_rate": 0.1, "tie_rate": 0.1,
                                                 "n_flips": 12, "n_with_tie": 12},
                                    "first_slot_bias": {"n_first_slot_both": 7, "n_second_slot_both": 5,
                                                        "p_value": 0.77}}},
        "decision": {"selected": [HEADLINE_JUDGE], "min_agreement": 0.7, "agreement_counted": "half",
                     "verdicts": {HEADLINE_JUDGE: {"agreement": 0.78, "passed": True}}, "failed": [],
                     "accepted_weak": False, "ok": True},
        "delta": 1.0}))


def write_policies(root: Path) -> None:
    for arm in INSTANCES:
        folder = root / "results" / "policy" / arm
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "health.json").write_text(json.dumps({
            "arm": arm, "verdict": "healthy", "failed": [], "n_steps": 8, "trained_here": True,
            "checks": {"kl_bounded": {"value": 0.02}, "entropy_alive": {"value": 0.9},
                       "reward_std_alive": {"value": 0.4}, "truncation_low": {"value": 0.1},
                       "format_ok": {"value": 0.8}}}))
        pd.DataFrame({"step": [1, 2, 3], "reward": [0.1, 0.2, 0.35], "kl": [0.0, 0.01, 0.02]}).to_csv(
            folder / "training_log.csv", index=False)


def params(**overrides) -> dict:
    out = {
        "seed": 7, "preset": "demo",
        "summary": {"bar": 0.608, "headline_arm": "committee", "confidence": 0.95, "n_boot": 100000},
        # judges/judge-a.yaml: the pattern summarize re-parses each raw reply with
        "evaluation": {"runs": list(RUNS), "headline_judge": HEADLINE_JUDGE, "headline_opponent": "gpt-4-0314",
                       "judges_dir": str(JUDGES_DIR), "best_of_n": ["bon:committee:ensemble:4"]},
        "policy": {"arms": ARMS, "seeds": [0]},
    }
    out.update(overrides)
    return out


CONFIRM = [f"c{g}" for g in range(1, 5)]


def write_confirmation(root: Path, evals, seed=0, rate=0.52) -> dict:
    """The confirm stage's files: the pre-registration (the package's selection on the selection pool of
    ``evals``), the confirmation contests (planted ``rate`` on 4 fresh scenarios) and confirmation.json."""
    import yaml

    from reappraisal.confirm.confirmation import confirmation_result
    from reappraisal.confirm.preregistration import build_preregistration, select

    contests = pd.concat([c for _, c in evals.values()], ignore_index=True)
    candidates = [*INSTANCES, BEST_OF_N]
    selection = select(contests, candidates, opponent="qwen2.5-72b", judge=HEADLINE_JUDGE)
    document = build_preregistration(
        selection=selection, system={"kind": "arm"}, checkpoint_sha256={"results/policy/x/model.safetensors": "0" * 64},
        opponent="qwen2.5-72b", judge=HEADLINE_JUDGE, bar=0.5, confidence=0.95, confirmation_scenarios=CONFIRM,
        runs=list(RUNS), answers_per_scenario=10, date="2026-12-02")
    folder = root / "results" / "confirm"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "preregistration.yaml").write_text(yaml.safe_dump(json.loads(json.dumps(document, default=float)),
                                                                sort_keys=False))
    rng = np.random.default_rng(seed)
    rows = []
    for run in RUNS:
        for v in CONFIRM:
            for i in range(10):
                score = float(rng.choice([0.0, 0.5, 1.0], p=[0.9 - rate, 0.2, rate - 0.1]))
                rows.append({"run": run, "judge": HEADLINE_JUDGE, "judge_kind": "heldout",
                             "contest_id": f"c{run}-{v}-{i}", "vignette_id": v, "pool": "confirm",
                             "model": selection["selected"], "opponent": "qwen2.5-72b", "score": score,
                             "error": False})
    confirm_contests = pd.DataFrame(rows)
    confirm_contests.to_parquet(folder / "contests.parquet", index=False)
    result = confirmation_result(confirm_contests, yaml.safe_load((folder / "preregistration.yaml").read_text()),
                                 n_boot=1000, seed=seed)
    (folder / "confirmation.json").write_text(json.dumps({**result, "per_scenario": None}, default=float))
    return {"selection": selection, "contests": confirm_contests, "result": result}
