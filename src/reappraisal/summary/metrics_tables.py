"""Tables built from the metrics JSONs and the training logs (pure).

Each builder takes the parsed document (or ``None`` when the file is absent
on this preset) and the artifact path(s) it came from, and returns a
:class:`~reappraisal.summary.summary_table.Table`; an absent or unusable document
gives a ``not_computable`` table with the reason, never an exception.
Shapes read: ``results/evaluation/judge_calibration.json`` (calibrate_judge,
read by :func:`reappraisal.evaluation.calibration_file.read_judge_calibration`),
``results/reward/metrics.json`` (evaluate_reward_models),
``results/grm/metrics.json`` (evaluate_grm), ``results/policy/{arm}/
health.json`` and ``training_log.csv`` (train_policy). An interval heading
names the confidence its file records (the stage that computed it chose it).
Titles and captions are in ``table_texts.yaml`` (:mod:`.texts`).
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import pandas as pd

from .summary_table import Table, not_computable
from .texts import percent, table_text


def _get(doc: Any, *path, default=None):
    for key in path:
        if not isinstance(doc, Mapping) or key not in doc:
            return default
        doc = doc[key]
    return doc


def _num(value) -> float:
    if isinstance(value, bool) or value is None:
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


JUDGE_COLUMNS = [
    "judge", "selected", "passed", "agreement_strict", "agreement_half", "agreement_dropped", "min_agreement",
    "agreement_counted", "kappa", "n_separated_pairs", "n_undecided", "errors", "position_consistency",
    "flip_rate", "tie_rate", "first_slot_both", "second_slot_both", "first_slot_p", "accepted_weak",
]


def judge_calibration_table(doc: Mapping | None, source: str) -> Table:
    """``doc``: the calibration file as :func:`~reappraisal.evaluation.calibration_file.read_judge_calibration`
    returns it (its keys checked), or None when the file is absent."""
    title, caption = table_text("judge_calibration")
    estimand = "share of clearly separated human pairs on which the judge picks the human-preferred answer"
    if doc is None or not doc["judges"]:
        why = "results/evaluation/judge_calibration.json absent" if doc is None else "it lists no judges"
        return not_computable("judge_calibration", title, caption, estimand, JUDGE_COLUMNS, why)
    decision = doc["decision"]
    rows = []
    for name, j in doc["judges"].items():
        agreement, position, bias = j["agreement"], j["position"], j["first_slot_bias"]
        rows.append({
            "judge": name, "selected": name in decision["selected"], "passed": decision["verdicts"][name]["passed"],
            "agreement_strict": _num(agreement["strict"]),
            "agreement_half": _num(agreement["half"]),
            "agreement_dropped": _num(agreement["dropped"]),
            "min_agreement": _num(decision["min_agreement"]),
            "agreement_counted": decision["agreement_counted"],
            "kappa": _num(j["kappa"]),
            "n_separated_pairs": _num(j["n_separated_pairs"]),
            "n_undecided": _num(j["n_undecided"]),
            "errors": _num(j["n_errors"]),
            "position_consistency": _num(position["consistency"]),
            "flip_rate": _num(position["flip_rate"]),
            "tie_rate": _num(position["tie_rate"]),
            "first_slot_both": _num(bias["n_first_slot_both"]),
            "second_slot_both": _num(bias["n_second_slot_both"]),
            "first_slot_p": _num(bias["p_value"]),
            "accepted_weak": bool(decision["accepted_weak"]),
        })
    display = [("judge", ("judge",)), ("used", ("selected",)), ("passed", ("passed",)),
               ("agreement (undecided wrong)", ("agreement_strict",)), ("(as 0.5)", ("agreement_half",)),
               ("(dropped)", ("agreement_dropped",)), ("minimum", ("min_agreement",)), ("κ", ("kappa",)),
               ("pairs", ("n_separated_pairs",)), ("errors", ("errors",)),
               ("position consistency", ("position_consistency",)), ("first-slot p", ("first_slot_p",))]
    return Table("judge_calibration", title, caption, estimand, pd.DataFrame(rows, columns=JUDGE_COLUMNS),
                 [(source,)] * len(rows), display=display)


def _ci_heading(prefix: str, *intervals: Mapping | None) -> str:
    """``prefix`` + "<level> CI" (e.g. "best-of-N 95% CI"), the level the first interval present records."""
    levels = [percent(i["confidence"]) + " " for i in intervals if isinstance(i, Mapping) and "confidence" in i]
    return f"{prefix}{levels[0] if levels else ''}CI"


RM_COLUMNS = [
    "model", "accuracy", "ci_low", "ci_high", "ci_method", "wilson_low", "wilson_high", "n_pairs", "scenarios",
    "spearman_within", "best_of_n", "best_of_n_win_vs_random", "best_of_n_ci_low", "best_of_n_ci_high",
    "ensemble_best_of_n_win_vs_random", "note",
]


def _accuracy_row(name: str, pairwise: Mapping | None) -> dict:
    pairwise = pairwise or {}
    cluster = pairwise.get("ci_cluster_t") or {}
    wilson = pairwise.get("ci_iid_wilson") or {}
    return {
        "model": name, "accuracy": _num(pairwise.get("accuracy")),
        "ci_low": _num(cluster.get("low")), "ci_high": _num(cluster.get("high")),
        "ci_method": cluster.get("method"),
        "wilson_low": _num(wilson.get("low")), "wilson_high": _num(wilson.get("high")),
        "n_pairs": _num(pairwise.get("n_pairs")), "scenarios": _num(pairwise.get("n_scenarios")),
        "note": pairwise.get("unavailable"),
    }


def _bradley_terry_row(bt: Mapping, ensemble_bon: Mapping) -> dict:
    """The Bradley-Terry model's row: the ensemble's figures, and the ensemble's best-of-N on the same draws
    beside its own (what the reranking claim compares); the note gives the paired difference."""
    row = _accuracy_row("bradley_terry", bt.get("pairwise"))
    row["spearman_within"] = _num(_get(bt, "spearman", "within_scenario_mean"))
    bon = bt.get("best_of_n") or {}
    row.update(best_of_n=_num(bon.get("n")), best_of_n_win_vs_random=_num(bon.get("win_vs_random")),
               best_of_n_ci_low=_num(_get(bon, "ci_cluster_t", "low")),
               best_of_n_ci_high=_num(_get(bon, "ci_cluster_t", "high")),
               ensemble_best_of_n_win_vs_random=_num(ensemble_bon.get("win_vs_random")))
    notes = [] if row["note"] is None else [str(row["note"])]
    training = bt.get("training") or {}
    if training.get("n_train_pairs") is not None:
        notes.append(f"Bradley-Terry loss (TRL RewardTrainer) on {training['n_train_pairs']} train pairs with a human "
                     f"gap >= {training.get('min_gap')}")
    diff = bt.get("best_of_n_vs_ensemble") or {}
    if diff.get("difference") is not None:
        ci = diff.get("ci_cluster_t") or {}
        level = f"{percent(ci['confidence'])} " if ci.get("confidence") is not None else ""
        interval = f", {level}cluster t CI [{ci['low']:.3f}, {ci['high']:.3f}]" if ci.get("low") is not None else ""
        notes.append(f"best-of-N minus the ensemble's on the same draws: {diff['difference']:+.3f}{interval} "
                     f"({diff.get('n_scenarios')} scenarios)")
    row["note"] = "; ".join(notes) or None
    return row


def reward_models_table(doc: Mapping | None, source: str) -> Table:
    title, caption = table_text("reward_models")
    estimand = "share of held-out human pairs ordered as humans order them (ties 0.5)"
    if not isinstance(doc, Mapping) or "ensemble" not in doc:
        why = "results/reward/metrics.json absent" if doc is None else "it has no ensemble section"
        return not_computable("reward_models", title, caption, estimand, RM_COLUMNS, why)
    rows = []
    for name, seed in (doc.get("per_seed") or {}).items():
        row = _accuracy_row(str(name), seed.get("pairwise"))
        row["spearman_within"] = _num(_get(seed, "spearman", "within_scenario_mean"))
        row["best_of_n_win_vs_random"] = _num(seed.get("best_of_n_win_vs_random"))
        rows.append(row)
    mean = doc.get("mean_of_seeds_pairwise_accuracy")
    rows.append({"model": "mean_of_seeds", "accuracy": _num(mean), "note": "mean of the seeds' accuracies"})
    ensemble = doc["ensemble"]
    row = _accuracy_row("ensemble", ensemble.get("pairwise"))
    row["spearman_within"] = _num(_get(ensemble, "spearman", "within_scenario_mean"))
    bon = ensemble.get("best_of_n") or {}
    row.update(best_of_n=_num(bon.get("n")), best_of_n_win_vs_random=_num(bon.get("win_vs_random")),
               best_of_n_ci_low=_num(_get(bon, "ci_cluster_t", "low")),
               best_of_n_ci_high=_num(_get(bon, "ci_cluster_t", "high")))
    rows.append(row)
    if ensemble.get("pairwise_mean_only"):
        rows.append(_accuracy_row("ensemble_mean_only", ensemble.get("pairwise_mean_only")))
    bt = doc.get("bradley_terry")
    if isinstance(bt, Mapping):
        rows.append(_bradley_terry_row(bt, bon))
    pairwise = [ensemble.get("pairwise"), *(seed.get("pairwise") for seed in (doc.get("per_seed") or {}).values()),
                *([bt.get("pairwise")] if isinstance(bt, Mapping) else [])]
    ci = _ci_heading("", *((p or {}).get("ci_cluster_t") for p in pairwise))
    display = [("model", ("model",)), ("accuracy", ("accuracy",)), (ci, ("ci_low", "ci_high")),
               ("iid Wilson (ignores clustering)", ("wilson_low", "wilson_high")), ("pairs", ("n_pairs",)),
               ("scenarios", ("scenarios",)), ("Spearman within", ("spearman_within",)), ("best of", ("best_of_n",)),
               ("best-of-N beats random", ("best_of_n_win_vs_random",)),
               (_ci_heading("best-of-N ", bon.get("ci_cluster_t")), ("best_of_n_ci_low", "best_of_n_ci_high")),
               ("ensemble's best-of-N, same draws", ("ensemble_best_of_n_win_vs_random",)),
               ("note", ("note",))]
    return Table("reward_models", title, caption, estimand, pd.DataFrame(rows, columns=RM_COLUMNS),
                 [(source,)] * len(rows), display=display)


GRM_COLUMNS = [
    "model", "mode", "accuracy", "ci_low", "ci_high", "n_pairs", "error_rate", "position_consistency",
    "flip_rate", "tie_rate", "first_slot_both", "second_slot_both", "first_slot_p", "agreement_half", "kappa",
]


def grm_table(doc: Mapping | None, source: str) -> Table:
    title, caption = table_text("grm")
    estimand = "share of judged orders that name the human-preferred reappraisal"
    models = _get(doc, "models")
    if not isinstance(models, Mapping) or not models:
        why = "results/grm/metrics.json absent" if doc is None else "it lists no models"
        return not_computable("grm", title, caption, estimand, GRM_COLUMNS, why)
    rows = []
    for name, m in models.items():
        acc = m.get("accuracy") or {}
        position = m.get("position_consistency") or {}
        bias = m.get("first_slot_bias") or {}
        agreement = m.get("human_agreement") or {}
        rows.append({
            "model": name, "mode": m.get("mode"), "accuracy": _num(acc.get("accuracy")),
            "ci_low": _num(_get(acc, "ci_cluster_t", "low")), "ci_high": _num(_get(acc, "ci_cluster_t", "high")),
            "n_pairs": _num(m.get("n_pairs")), "error_rate": _num(m.get("error_rate")),
            "position_consistency": _num(position.get("consistency")),
            "flip_rate": _num(position.get("flip_rate")), "tie_rate": _num(position.get("tie_rate")),
            "first_slot_both": _num(bias.get("n_first_slot_both")),
            "second_slot_both": _num(bias.get("n_second_slot_both")), "first_slot_p": _num(bias.get("p_value")),
            "agreement_half": _num(agreement.get("agreement_half")), "kappa": _num(agreement.get("kappa")),
        })
    ci = _ci_heading("", *((m.get("accuracy") or {}).get("ci_cluster_t") for m in models.values()))
    display = [("model", ("model",)), ("mode", ("mode",)), ("accuracy", ("accuracy",)), (ci, ("ci_low", "ci_high")),
               ("pairs", ("n_pairs",)), ("unparseable", ("error_rate",)),
               ("position consistency", ("position_consistency",)), ("flips", ("flip_rate",)),
               ("first-slot p", ("first_slot_p",)), ("κ", ("kappa",))]
    return Table("grm", title, caption, estimand, pd.DataFrame(rows, columns=GRM_COLUMNS), [(source,)] * len(rows),
                 display=display)


HEALTH_COLUMNS = [
    "arm", "verdict", "failed", "steps", "kl_max", "entropy_ratio", "reward_std_last", "clipped_ratio_last",
    "gate_pass_last", "reward_first", "reward_last", "gold_first", "gold_last", "proxy_rm_first", "proxy_rm_last",
    "trained_here", "note",
]
#: Steps averaged at each end of the training log for the gold/proxy columns (per-step values are noisy).
GOLD_WINDOW = 10


def training_health_table(arms: Sequence[str], health: Mapping[str, Mapping | None],
                          logs: Mapping[str, pd.DataFrame | None], sources: Mapping[str, Sequence[str]]) -> Table:
    title, caption = table_text("training_health", gold_window=GOLD_WINDOW)
    estimand = "per-run training diagnostics (no sampling interval)"
    if not arms:
        return not_computable("training_health", title, caption, estimand, HEALTH_COLUMNS, "no policy arms configured")
    rows, row_sources = [], []
    for arm in arms:
        h = health.get(arm)
        log = logs.get(arm)
        row = {"arm": arm, "note": None}
        if h is None:
            row.update(verdict="not_computable", note="health.json absent")
        else:
            checks = h.get("checks") or {}
            value = lambda key, checks=checks: _num(_get(checks, key, "value"))
            row.update(verdict=h.get("verdict"), failed=", ".join(h.get("failed") or []) or None,
                       steps=_num(h.get("n_steps")), kl_max=value("kl_bounded"), entropy_ratio=value("entropy_alive"),
                       reward_std_last=value("reward_std_alive"), clipped_ratio_last=value("truncation_low"),
                       gate_pass_last=value("format_ok"), trained_here=h.get("trained_here"), note=h.get("note"))
        if log is not None and "reward" in log.columns and len(log):
            rewards = pd.to_numeric(log["reward"], errors="coerce").dropna()
            if len(rewards):
                row.update(reward_first=float(rewards.iloc[0]), reward_last=float(rewards.iloc[-1]))
            for column, key in (("gold", "gold"), ("rm_score", "proxy_rm")):
                values = pd.to_numeric(log[column], errors="coerce").dropna() if column in log.columns else pd.Series()
                if len(values):
                    row.update({f"{key}_first": float(values.iloc[:GOLD_WINDOW].mean()),
                                f"{key}_last": float(values.iloc[-GOLD_WINDOW:].mean())})
        rows.append(row)
        row_sources.append(tuple(sources.get(arm, ())))
    display = [("arm", ("arm",)), ("verdict", ("verdict",)), ("failed", ("failed",)), ("steps", ("steps",)),
               ("max KL", ("kl_max",)), ("entropy ratio", ("entropy_ratio",)), ("reward std", ("reward_std_last",)),
               ("truncated", ("clipped_ratio_last",)), ("gate pass", ("gate_pass_last",)),
               ("reward first", ("reward_first",)), ("reward last", ("reward_last",)),
               ("gold first", ("gold_first",)), ("gold last", ("gold_last",)),
               ("proxy (ensemble) first", ("proxy_rm_first",)), ("proxy last", ("proxy_rm_last",))]
    return Table("training_health", title, caption, estimand, pd.DataFrame(rows, columns=HEALTH_COLUMNS), row_sources,
                 display=display)
