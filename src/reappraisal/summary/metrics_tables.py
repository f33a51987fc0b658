"""Tables built from the metrics JSONs and the training logs (pure).

Each builder takes the parsed document (or ``None`` when the file is absent
on this preset) and the artifact path(s) it came from, and returns a
:class:`~reappraisal.summary.summary_table.Table`; an absent or unusable document
gives a ``not_computable`` table with the reason, never an exception.
Shapes read: ``results/evaluation/judge_calibration.json`` (calibrate_judge),
``results/reward/metrics.json`` (evaluate_reward_models),
``results/grm/metrics.json`` (evaluate_grm), ``results/policy/{arm}/
health.json`` and ``training_log.csv`` (train_policy).
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import pandas as pd

from .summary_table import Table, not_computable


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
    title = "Judge calibration against human preference"
    caption = (
        "Agreement of each candidate judge with human preference on clearly separated held-out human pairs "
        "(human margin >= delta, chosen by human ratings only): undecided pairs (ties or an order-dependent "
        "winner) counted wrong (strict), as 0.5 (half) and dropped; Cohen's kappa; position consistency "
        "(same winner in both orders), flips (winner changes with the order) and ties reported separately; "
        "first-slot bias: pairs won by the first slot in both orders vs by the second, exact binomial p. "
        "passed: agreement (counted as agreement_counted) >= min_agreement."
    )
    estimand = "share of clearly separated human pairs on which the judge picks the human-preferred answer"
    judges = _get(doc, "judges")
    if not isinstance(judges, Mapping) or not judges:
        why = "results/evaluation/judge_calibration.json absent" if doc is None else "it lists no judges"
        return not_computable("judge_calibration", title, caption, estimand, JUDGE_COLUMNS, why)
    decision = _get(doc, "decision", default={}) or {}
    selected = decision.get("selected", doc.get("selected", []))
    selected = [selected] if isinstance(selected, str) else list(selected or [])
    verdicts = decision.get("verdicts", {}) or {}
    min_agreement = decision.get("min_agreement", doc.get("min_agreement"))
    rows = []
    for name, j in judges.items():
        agreement = j.get("agreement", {}) or {}
        position = j.get("position", j.get("position_consistency", {}))
        position = position if isinstance(position, Mapping) else {"consistency": position}
        bias = j.get("first_slot_bias", {}) or {}
        passed = _get(verdicts, name, "passed", default=j.get("passed"))
        rows.append({
            "judge": name, "selected": name in selected, "passed": passed,
            "agreement_strict": _num(agreement.get("strict", agreement.get("wrong"))),
            "agreement_half": _num(agreement.get("half")),
            "agreement_dropped": _num(agreement.get("dropped")),
            "min_agreement": _num(min_agreement),
            "agreement_counted": decision.get("agreement_counted"),
            "kappa": _num(j.get("kappa")),
            "n_separated_pairs": _num(j.get("n_separated_pairs", j.get("n_pairs"))),
            "n_undecided": _num(j.get("n_undecided")),
            "errors": _num(j.get("n_errors")),
            "position_consistency": _num(position.get("consistency")),
            "flip_rate": _num(position.get("flip_rate", j.get("flips"))),
            "tie_rate": _num(position.get("tie_rate", j.get("ties"))),
            "first_slot_both": _num(bias.get("n_first_slot_both", bias.get("first"))),
            "second_slot_both": _num(bias.get("n_second_slot_both", bias.get("second"))),
            "first_slot_p": _num(bias.get("p_value")),
            "accepted_weak": bool(decision.get("accepted_weak", doc.get("accepted_weak", False))),
        })
    display = [("judge", ("judge",)), ("used", ("selected",)), ("passed", ("passed",)),
               ("agreement (undecided wrong)", ("agreement_strict",)), ("(as 0.5)", ("agreement_half",)),
               ("(dropped)", ("agreement_dropped",)), ("minimum", ("min_agreement",)), ("κ", ("kappa",)),
               ("pairs", ("n_separated_pairs",)), ("errors", ("errors",)),
               ("position consistency", ("position_consistency",)), ("first-slot p", ("first_slot_p",))]
    return Table("judge_calibration", title, caption, estimand, pd.DataFrame(rows, columns=JUDGE_COLUMNS),
                 [(source,)] * len(rows), display=display)


RM_COLUMNS = [
    "model", "accuracy", "ci_low", "ci_high", "ci_method", "wilson_low", "wilson_high", "n_pairs", "scenarios",
    "spearman_within", "best_of_n", "best_of_n_win_vs_random", "best_of_n_ci_low", "best_of_n_ci_high", "note",
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


def reward_models_table(doc: Mapping | None, source: str) -> Table:
    title = "Reward-model ensemble: held-out pairwise accuracy"
    caption = (
        "Pairwise accuracy (ties 0.5) of each reward-model seed, their mean (the model card's form) and the "
        "ensemble score on held-out within-scenario pairs of human reappraisals. ci: t interval on the "
        "per-scenario accuracies (scenario-clustered, G-1 df); Wilson: iid, ignores clustering. The scenarios "
        "were seen in training, so these figures do not license claims about new scenarios. best_of_n: the "
        "ensemble's top pick of n candidates vs a random pick by human z (chance 0.5), cluster t interval."
    )
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
    display = [("model", ("model",)), ("accuracy", ("accuracy",)), ("95% CI", ("ci_low", "ci_high")),
               ("iid Wilson (ignores clustering)", ("wilson_low", "wilson_high")), ("pairs", ("n_pairs",)),
               ("scenarios", ("scenarios",)), ("Spearman within", ("spearman_within",)), ("best of", ("best_of_n",)),
               ("best-of-N beats random", ("best_of_n_win_vs_random",)),
               ("best-of-N 95% CI", ("best_of_n_ci_low", "best_of_n_ci_high")), ("note", ("note",))]
    return Table("reward_models", title, caption, estimand, pd.DataFrame(rows, columns=RM_COLUMNS),
                 [(source,)] * len(rows), display=display)


GRM_COLUMNS = [
    "model", "mode", "accuracy", "ci_low", "ci_high", "n_pairs", "error_rate", "position_consistency",
    "flip_rate", "tie_rate", "first_slot_both", "second_slot_both", "first_slot_p", "agreement_half", "kappa",
]


def grm_table(doc: Mapping | None, source: str) -> Table:
    title = "Generative reward model (GRM): held-out judging"
    caption = (
        "The GRM judging held-out clearly separated human pairs in both orders: accuracy (share of orders "
        "naming the human-preferred reappraisal, unparseable = wrong) with a scenario-clustered t interval; "
        "unparseable rate; position consistency, flips and ties (separately); first-slot bias with an exact "
        "binomial p; agreement with humans (undecided = 0.5) and Cohen's kappa. sft = after stage 1, final = "
        "after GRPO, *_logprob = the final model read from its verdict-token probabilities."
    )
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
            "flip_rate": _num(_flip_rate(position)), "tie_rate": _num(_tie_rate(position)),
            "first_slot_both": _num(bias.get("n_first_slot_both")),
            "second_slot_both": _num(bias.get("n_second_slot_both")), "first_slot_p": _num(bias.get("p_value")),
            "agreement_half": _num(agreement.get("agreement_half")), "kappa": _num(agreement.get("kappa")),
        })
    display = [("model", ("model",)), ("mode", ("mode",)), ("accuracy", ("accuracy",)), ("95% CI", ("ci_low", "ci_high")),
               ("pairs", ("n_pairs",)), ("unparseable", ("error_rate",)),
               ("position consistency", ("position_consistency",)), ("flips", ("flip_rate",)),
               ("first-slot p", ("first_slot_p",)), ("κ", ("kappa",))]
    return Table("grm", title, caption, estimand, pd.DataFrame(rows, columns=GRM_COLUMNS), [(source,)] * len(rows),
                 display=display)


def _flip_rate(position: Mapping):
    """Flips only (winner changes with the order), also from files written before ties were split off."""
    n = position.get("n_pairs")
    if "n_flips" in position or not n:
        return position.get("flip_rate")
    return (position.get("n_first_slot_both", 0) + position.get("n_second_slot_both", 0)) / n


def _tie_rate(position: Mapping):
    n = position.get("n_pairs")
    if "tie_rate" in position or not n:
        return position.get("tie_rate")
    return position.get("n_with_tie", 0) / n


HEALTH_COLUMNS = [
    "arm", "verdict", "failed", "steps", "kl_max", "entropy_ratio", "reward_std_last", "clipped_ratio_last",
    "gate_pass_last", "reward_first", "reward_last", "gold_first", "gold_last", "proxy_rm_first", "proxy_rm_last",
    "trained_here", "note",
]
#: Steps averaged at each end of the training log for the gold/proxy columns (per-step values are noisy).
GOLD_WINDOW = 10


def training_health_table(arms: Sequence[str], health: Mapping[str, Mapping | None],
                          logs: Mapping[str, pd.DataFrame | None], sources: Mapping[str, Sequence[str]]) -> Table:
    title = "Training health of each GRPO arm"
    caption = (
        "Per arm, the health verdict of its GRPO run with the config's thresholds (policy.health): KL to the "
        "reference bounded (largest per-step KL), entropy alive (last window / first window), reward std "
        "alive (groups still disagree), truncation at the length limit low, format gate passed; reward at the "
        "first and last logged step from the training log. Gold (a log-only scorer, never optimized: the demo's "
        f"rating model) and the ensemble proxy are means over the first and last {GOLD_WINDOW} logged steps; "
        "empty when no gold scorer is configured. An arm trained elsewhere has no log."
    )
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
            value = lambda key: _num(_get(checks, key, "value"))  # noqa: E731
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
