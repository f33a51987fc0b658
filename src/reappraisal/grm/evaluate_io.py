"""Evaluate the GRM on held-out, clearly separated human pairs.

Held-out = the ``val`` split of ``pairs.parquet`` (reappraisals the GRM never
trained on), restricted to pairs with human margin ≥ ``grm.delta`` (human
evidence only). Every pair is judged in both orders, greedily, by the
stage-1 (SFT) model and the final (GRPO) model; optionally the final model
is also asked in ``logprob`` mode. Per model (judge statistics from
:mod:`reappraisal.stats`, see STATISTICS.md "Judges"):

* accuracy: per pair the share of its two orders whose verdict is the
  human-preferred slot (an unparseable verdict counts wrong), with the
  scenario-cluster t interval (headline) and the iid Wilson interval;
* error (unparseable) rate over all judged orders;
* agreement with humans with position-undecided pairs counted wrong / as
  0.5 / dropped, Cohen's κ, and agreement by human margin;
* position consistency (same winner in both orders) and first-slot bias
  (exact binomial test);
* a plain statement whether accuracy is distinguishable from 0.5.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from reappraisal.atomic import write_json, write_parquet
from reappraisal.settings import GrmSettings, Settings
from reappraisal.errors import PipelineInputError
from reappraisal.input_tables import read_table
from reappraisal.json_values import json_ready
from reappraisal.params import parse_params
from reappraisal.stats import (
    agreement_by_margin,
    first_slot_bias,
    human_agreement,
    pairwise_accuracy,
    position_consistency,
)
from reappraisal.training.settings import set_cpu_threads

from .pairs import both_orders, select_pairs
from .pairwise import PairwiseModel
from .prompts import scenario_texts
from .training_summary import SUMMARY_FILE, training_health
from .verdict import ERROR, verdict_counts

CHANCE = 0.5


def judged_items(judge: PairwiseModel, items: pd.DataFrame, scenarios: Mapping[str, str]) -> pd.DataFrame:
    """``items`` (both orders) with the judge's ``verdict``, ``p_first`` and raw ``text``."""
    out = judge.judge([scenarios[v] for v in items["vignette_id"]], list(items["first"]), list(items["second"]))
    return items.assign(verdict=out.verdicts, p_first=out.p_first, text=out.texts)


def judgments_table(judged: pd.DataFrame, judge_name: str) -> pd.DataFrame:
    """The stats package's judgments table: contest = pair, ``model`` = the pair's ``id_a``."""
    ab = judged["order"] == "AB"
    return pd.DataFrame({
        "run": 1,
        "judge": judge_name,
        "contest_id": judged["pair_id"].to_numpy(),
        "vignette_id": judged["vignette_id"].to_numpy(),
        "model": np.where(ab, judged["first_id"], judged["second_id"]),
        "opponent": np.where(ab, judged["second_id"], judged["first_id"]),
        "order": judged["order"].to_numpy(),
        "verdict": judged["verdict"].to_numpy(),
    })


def human_margins(pairs: pd.DataFrame) -> pd.DataFrame:
    """contest_id, human_margin (> 0 when humans prefer ``text_a``, the ``model`` answer)."""
    sign = np.where(pairs["preferred"] == "A", 1.0, -1.0)
    return pd.DataFrame({"contest_id": pairs["pair_id"].to_numpy(),
                         "human_margin": sign * pairs["margin"].to_numpy(dtype=float)})


def judge_metrics(judged: pd.DataFrame, pairs: pd.DataFrame, *, delta: float, judge_name: str) -> dict[str, Any]:
    """All held-out statistics of one judge (see module doc)."""
    counts = verdict_counts(judged["verdict"])
    n = len(judged)
    correct = (judged["verdict"] == judged["correct"]).astype(float)
    per_pair = (
        judged.assign(correct=correct)
        .groupby("pair_id", sort=False)
        .agg(vignette_id=("vignette_id", "first"), n_correct=("correct", "sum"))
    )
    accuracy: dict[str, Any]
    try:
        accuracy = pairwise_accuracy(pd.DataFrame({
            "vignette_id": per_pair["vignette_id"].to_numpy(),
            "score_preferred": per_pair["n_correct"].to_numpy(),
            "score_other": 2.0 - per_pair["n_correct"].to_numpy(),
        }))
    except ValueError as exc:  # fewer than 2 scenarios: no clustered interval
        accuracy = {"accuracy": float(per_pair["n_correct"].mean() / 2), "n_pairs": int(len(per_pair)),
                    "ci_cluster_t": None, "note": str(exc)}
    accuracy["definition"] = (
        "per pair: share of its two orders whose verdict names the human-preferred reappraisal "
        "(unparseable = wrong); CI over scenario means (cluster t)"
    )
    table = judgments_table(judged, judge_name)
    margins = human_margins(pairs)
    out: dict[str, Any] = {
        "n_pairs": int(len(per_pair)),
        "n_judgments": int(n),
        "verdict_counts": counts,
        "error_rate": counts[ERROR] / n if n else float("nan"),
        "parseable_rate": 1.0 - counts[ERROR] / n if n else float("nan"),
        "accuracy": accuracy,
        "accuracy_per_order": float(correct.mean()) if n else float("nan"),
    }
    if counts[ERROR] < n:
        out["position_consistency"] = position_consistency(table)
        out["first_slot_bias"] = first_slot_bias(table)
        out["human_agreement"] = human_agreement(table, margins, min_margin=delta)
        edges = np.unique(np.quantile(np.abs(margins["human_margin"]), [0, 1 / 3, 2 / 3, 1]))
        if len(edges) >= 2:
            out["agreement_by_margin"] = agreement_by_margin(table, margins, edges).to_dict("records")
    out["statement"] = statement(out, judge_name)
    return out


def statement(metrics: Mapping[str, Any], judge_name: str) -> str:
    """A plain sentence on accuracy vs chance (and first-slot bias when significant)."""
    acc = metrics["accuracy"]
    ci = acc.get("ci_cluster_t")
    head = f"{judge_name}: held-out accuracy {acc['accuracy']:.3f} on {acc['n_pairs']} clearly separated pairs"
    if ci is None:
        text = f"{head}; no clustered interval (fewer than 2 scenarios), so it cannot be compared with chance."
    elif ci["low"] <= CHANCE <= ci["high"]:
        text = (f"{head} is NOT distinguishable from chance (0.5): its 95% scenario-cluster t interval "
                f"[{ci['low']:.3f}, {ci['high']:.3f}] contains 0.5. The model has not been shown to learn "
                "the human preference.")
    else:
        side = "above" if ci["low"] > CHANCE else "below"
        text = (f"{head} is {side} chance: 95% scenario-cluster t interval [{ci['low']:.3f}, {ci['high']:.3f}].")
    bias = metrics.get("first_slot_bias")
    if bias and bias["n_position_decided"] and bias["p_value"] < 0.05:
        text += (f" It favours the {'first' if bias['share_first_slot'] > 0.5 else 'second'} slot: "
                 f"{bias['n_first_slot_both']} vs {bias['n_second_slot_both']} position-decided pairs "
                 f"(exact binomial p = {bias['p_value']:.2g}).")
    if metrics["error_rate"] > 0:
        text += f" {metrics['verdict_counts'][ERROR]} of {metrics['n_judgments']} verdicts were unparseable."
    return text


def evaluate_grm(
    models: Mapping[str, str | Path],
    pairs: pd.DataFrame,
    vignettes: pd.DataFrame,
    *,
    grm: GrmSettings,
    seed: int,
    preset: str | None = None,
    logprob_model: str | None = None,
) -> tuple[dict[str, Any], pd.DataFrame]:
    """Ask each model (name -> dir) about the held-out pairs; return (metrics, raw verdicts)."""
    delta = float(grm.delta)
    heldout = select_pairs(pairs, split="val", delta=delta)
    cap = grm.eval_max_pairs
    n_available = len(heldout)
    if cap is not None and len(heldout) > cap:
        heldout = heldout.sample(n=int(cap), random_state=seed).sort_index().reset_index(drop=True)
    scenarios = scenario_texts(vignettes, heldout["vignette_id"].unique())
    items = both_orders(heldout)
    runs = [(name, path, "generate") for name, path in models.items()]
    if logprob_model is not None:
        runs.append((f"{logprob_model}_logprob", models[logprob_model], "logprob"))
    result: dict[str, Any] = {
        "preset": preset,
        "delta": delta,
        "heldout": {"split": "val", "n_pairs_available": int(n_available), "n_pairs": int(len(heldout)),
                    "n_scenarios": int(heldout["vignette_id"].nunique())},
        "decoding": {"greedy": True, "max_new_tokens": int(grm.max_new_tokens),
                     "batch_size": int(grm.batch_size)},
        "models": {},
    }
    raw = []
    for name, path, mode in runs:
        engine = grm.engine if mode == "generate" else "hf"
        judge = PairwiseModel.from_dir(path, max_new_tokens=int(grm.max_new_tokens), batch_size=int(grm.batch_size),
                               mode=mode, engine=engine)
        judged = judged_items(judge, items, scenarios)
        result["models"][name] = {"path": str(path), "mode": mode,
                                  **judge_metrics(judged, heldout, delta=delta, judge_name=name)}
        summary_file = Path(path) / SUMMARY_FILE
        if mode == "generate" and summary_file.is_file():
            result["models"][name]["training"] = training_health(json.loads(summary_file.read_text()))
        raw.append(judged.assign(judge=name, mode=mode))
        del judge
    headline = "final" if "final" in result["models"] else next(iter(result["models"]))
    result["headline_model"] = headline
    result["statement"] = result["models"][headline]["statement"]
    if preset == "demo":
        result["note"] = ("demo preset: a tiny randomly initialised model trained for seconds on synthetic data; "
                          "these numbers show that the stage runs, not what a real GRM achieves")
    return result, pd.concat(raw, ignore_index=True)


def cli_main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="reappraisal evaluate-grm", description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="final GRM directory")
    ap.add_argument("--sft-model", default=None, help="stage-1 GRM directory (also evaluated)")
    ap.add_argument("--pairs", required=True)
    ap.add_argument("--vignettes", required=True)
    ap.add_argument("--out", required=True, help="metrics JSON")
    ap.add_argument("--judgments-out", default=None, help="raw judgments parquet")
    ap.add_argument("--params", default=None, help="JSON with section grm, seed, preset")
    ns = ap.parse_args(argv)
    params = parse_params(ns.params)
    if not params.get("grm"):
        raise PipelineInputError("--params must carry the 'grm' section")
    settings = Settings.from_params(params)
    grm = settings.grm
    set_cpu_threads(grm.cpu_threads)
    models = {}
    if ns.sft_model:
        models["sft"] = ns.sft_model
    models["final"] = ns.model
    metrics, raw = evaluate_grm(
        models, read_table(ns.pairs), read_table(ns.vignettes), grm=grm,
        seed=int(settings.seed), preset=settings.preset,
        logprob_model="final" if grm.eval_logprob else None,
    )
    write_json(json_ready(metrics), ns.out)
    if ns.judgments_out:
        write_parquet(raw, ns.judgments_out)
    print(metrics["statement"])
    return 0
