"""The model cards' metadata: the YAML front matter with a Hugging Face ``model-index``. Pure.

The Hub shows a card's evaluation results from the ``model-index`` in its
front matter (name, then results: each a task, a dataset and its metrics;
https://huggingface.co/docs/hub/model-cards#evaluation-results). Each card
carries the numbers its own tables show: a policy its win rate against each
opponent (study and out-of-distribution pools) with the interval, a reward
model or the GRM its held-out accuracy with the interval. An interval rides in
the metric's ``args`` (``ci_low``, ``ci_high``, ``ci_level``, ``ci_method``),
which the Hub keeps and does not interpret. No metric is ``verified``: no
Hub evaluation produced it.

Values are plain Python numbers (a NaN or missing value leaves its metric
out), so the front matter dumps with ``yaml.safe_dump``; the tests parse
every card with ``huggingface_hub.ModelCard``.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import yaml


def number(v: Any) -> float | int | None:
    """A finite plain number, else None (numpy scalars become Python ones)."""
    if v is None or isinstance(v, bool):
        return None
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, int):
        return v
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def metric(type_: str, value: Any, name: str, **args: Any) -> dict[str, Any] | None:
    """One entry of a result's ``metrics`` (None without a value); ``args`` without their missing values."""
    v = number(value)
    if v is None:
        return None
    kept = {k: (number(a) if not isinstance(a, str) else a) for k, a in args.items()}
    kept = {k: a for k, a in kept.items() if a is not None}
    out: dict[str, Any] = {"type": type_, "value": v, "name": name, "verified": False}
    if kept:
        out["args"] = kept
    return out


def result(task_type: str, task_name: str, dataset_type: str, dataset_name: str, metrics: Sequence[Mapping | None],
           *, config: str | None = None, split: str | None = None) -> dict[str, Any] | None:
    """One entry of ``results`` (None when none of its metrics has a value)."""
    kept = [dict(m) for m in metrics if m]
    if not kept:
        return None
    dataset: dict[str, Any] = {"type": dataset_type, "name": dataset_name}
    if config:
        dataset["config"] = config
    if split:
        dataset["split"] = split
    return {"task": {"type": task_type, "name": task_name}, "dataset": dataset, "metrics": kept}


def model_index(name: str, results: Sequence[Mapping | None]) -> list[dict[str, Any]]:
    """The ``model-index`` of one model (empty when no result has a metric)."""
    kept = [dict(r) for r in results if r]
    return [{"name": name, "results": kept}] if kept else []


#: The dataset every win rate is measured on (its pool as the config).
SCENARIOS = ("reappraisal-scenarios", "Reappraisal scenarios")
#: The held-out human pairs reward models and the GRM are scored on.
HUMAN_PAIRS = ("reappraisal-human-pairs", "Held-out human reappraisal pairs")


def win_rate_metric(row: Mapping[str, Any], *, low: str, high: str, level: float) -> dict[str, Any] | None:
    """A headline-style row (arm vs opponent) as a ``win_rate`` metric with its interval and counts."""
    return metric("win_rate", row.get("win_rate"), f"win rate vs {row['opponent']} (judge {row.get('judge')})",
                  opponent=str(row["opponent"]), judge=str(row.get("judge")), ci_low=row.get(low), ci_high=row.get(high),
                  ci_level=level, ci_method=str(row.get("headline_method") or "headline"),
                  contests=row.get("contests"), scenarios=row.get("scenarios"))


def policy_index(name: str, headline: Sequence[Mapping[str, Any]], ood: Sequence[Mapping[str, Any]],
                 level: float) -> list[dict[str, Any]]:
    """A policy's win rate against each opponent, on the study scenarios and on the OOD pool."""
    task = ("text-generation", "Cognitive reappraisal: pairwise win rate")
    return model_index(name, [
        result(*task, *SCENARIOS, [win_rate_metric(r, low="headline_low", high="headline_high", level=level)
                                   for r in headline], config="study"),
        result(*task, *SCENARIOS, [win_rate_metric(r, low="headline_low", high="headline_high", level=level)
                                   for r in ood], config="ood"),
    ])


def accuracy_metric(label: str, pairwise: Mapping[str, Any], level: float) -> dict[str, Any] | None:
    """A reward model's held-out pairwise accuracy with its scenario-clustered interval."""
    ci = pairwise.get("ci_cluster_t") or {}
    return metric("accuracy", pairwise.get("accuracy"), f"pairwise accuracy ({label})", ci_low=ci.get("low"),
                  ci_high=ci.get("high"), ci_level=ci.get("confidence", level), ci_method=ci.get("method") or "cluster_t",
                  pairs=pairwise.get("n_pairs"), scenarios=pairwise.get("n_scenarios"))


def ensemble_index(name: str, rm: Mapping[str, Any], level: float) -> list[dict[str, Any]]:
    """The ensemble's accuracy, each seed's and their mean, and its best-of-N pick against a random one."""
    ens = rm.get("ensemble") or {}
    bon = ens.get("best_of_n") or {}
    bon_ci = bon.get("ci_cluster_t") or {}
    metrics = [accuracy_metric("ensemble", ens.get("pairwise") or {}, level),
               metric("accuracy", rm.get("mean_of_seeds_pairwise_accuracy"), "pairwise accuracy (mean of seeds)"),
               *[accuracy_metric(seed, (m or {}).get("pairwise") or {}, level)
                 for seed, m in (rm.get("per_seed") or {}).items()],
               metric("win_rate", bon.get("win_vs_random"), f"best-of-{bon.get('n')} pick vs a random pick",
                      ci_low=bon_ci.get("low"), ci_high=bon_ci.get("high"), ci_level=bon_ci.get("confidence", level),
                      chance=bon.get("chance_win_vs_random"))]
    return model_index(name, [result("text-classification", "Reappraisal preference: pairwise accuracy", *HUMAN_PAIRS,
                                     metrics, split=rm.get("split"))])


def grm_index(name: str, grm: Mapping[str, Any], level: float) -> list[dict[str, Any]]:
    """The GRM's held-out accuracy (its headline model first, then the others) and its position consistency."""
    models = grm.get("models") or {}
    head = grm.get("headline_model")
    order = [head, *[m for m in models if m != head]] if head in models else list(models)
    metrics = []
    for model in order:
        m = models[model] or {}
        acc = m.get("accuracy") or {}
        ci = acc.get("ci_cluster_t") or {}
        metrics.append(metric("accuracy", acc.get("accuracy"), f"judging accuracy ({model})", ci_low=ci.get("low"),
                              ci_high=ci.get("high"), ci_level=ci.get("confidence", level),
                              ci_method=ci.get("method") or "cluster_t", pairs=acc.get("n_pairs")))
        pc = m.get("position_consistency")
        metrics.append(metric("position_consistency", pc.get("consistency") if isinstance(pc, Mapping) else pc,
                              f"position consistency ({model})"))
    heldout = grm.get("heldout") or {}
    return model_index(name, [result("text-classification", "Reappraisal preference: pairwise judging", *HUMAN_PAIRS,
                                     metrics, split=heldout.get("split"))])


def front_matter(meta: Mapping[str, Any]) -> str:
    """The card's metadata as YAML front matter (between ``---`` lines), keys in the order given."""
    return "---\n" + yaml.safe_dump(dict(meta), sort_keys=False, allow_unicode=True, width=120) + "---\n"
