"""Evaluate the reward-model ensemble on held-out within-scenario pairs.

Held out = the validation split: human reappraisals never trained on, of the
*same* scenarios as training. Figures (all written to
``results/reward/metrics.json`` for the report):

* pairwise accuracy (ties 0.5) per seed, their mean (the model card's
  headline form) and for the ensemble score, each with a scenario-cluster t
  interval and the iid Wilson interval labelled as ignoring clustering;
* Spearman ρ of each score with the human mean z on the primary dimension;
* best-of-N reranking: does the ensemble's top pick of N human reappraisals
  beat a random pick, judged by human z;
* seed disagreement: spread over seeds, between-seed correlation, share of
  pairs on which the seeds do not agree;
* the Bradley–Terry model (``bradley_terry``, when its folder is given):
  the same pairwise accuracy on the same pairs with the same intervals, the
  same Spearman ρ and the same best-of-N reranking (the same draws of
  candidates, so the two best-of-N figures are paired by scenario:
  ``best_of_n_vs_ensemble`` is the mean per-scenario difference with a
  cluster t interval).

A scenario with a single validation reappraisal has no pairs and cannot
enter best-of-N; it is listed, not silently lost.
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path
from typing import Sequence

import numpy as np

from reappraisal.atomic import write_json
from reappraisal.errors import PipelineInputError
from reappraisal.training.settings import set_cpu_threads

from .dataset import examples_for_split, pairs_for_split
from .metrics import accuracy_on_pairs, best_of_n, paired_best_of_n_difference, seed_disagreement, spearman_with_humans
from .penalty import describe_penalty, ensemble_score
from .trainer_command import add_table_arguments, parse_command, read_rated_tables

log = logging.getLogger("reappraisal.reward.evaluate_io")

HELD_OUT_NOTE = (
    "held-out = the validation split's within-scenario pairs of human reappraisals; the scenarios "
    "themselves were seen in training, so these figures do not license claims about new scenarios"
)
CARD_REFERENCE = {"pairwise_accuracy_mean_of_seeds": 0.940, "best_of_16": "around chance"}


def _accuracy(pairs, ids, scores, confidence):
    try:
        return accuracy_on_pairs(pairs, dict(zip(ids, scores)), confidence)
    except ValueError as exc:  # fewer than 2 scenarios with pairs
        return {"unavailable": str(exc)}


def evaluate_scores(
    per_seed: np.ndarray,
    *,
    seed_names: Sequence[str],
    val,
    val_pairs,
    primary_dimension: str,
    penalty: str,
    lam: float,
    n_best_of: int,
    draws: int,
    seed: int,
    confidence: float = 0.95,
    bradley_terry: np.ndarray | None = None,
) -> dict:
    """All figures from per-seed scores of the validation reappraisals (pure; no model needed).

    ``bradley_terry``: the Bradley–Terry model's scores of the same reappraisals (optional), evaluated
    exactly as the ensemble under the key ``bradley_terry``."""
    ids = val.reappraisal_ids
    primary = val.targets[:, val.dimensions.index(primary_dimension)]
    known = set(ids)
    usable = val_pairs[val_pairs["id_a"].isin(known) & val_pairs["id_b"].isin(known)].reset_index(drop=True)
    if usable.empty:
        raise PipelineInputError(
            "no validation pairs to evaluate on (every scenario has at most one rated validation reappraisal?)",
            where="pairs.parquet",
        )
    ens = ensemble_score(per_seed, penalty, lam)
    seeds = {}
    for name, scores in zip(seed_names, per_seed):
        seeds[name] = {
            "pairwise": _accuracy(usable, ids, scores, confidence),
            "spearman": spearman_with_humans(scores, primary, val.vignette_ids),
            "best_of_n_win_vs_random": best_of_n(scores, primary, val.vignette_ids, n_best_of, draws, seed, confidence)["win_vs_random"],
        }
    seed_accs = [s["pairwise"].get("accuracy") for s in seeds.values()]
    index = {rid: i for i, rid in enumerate(ids)}
    counts = dict(zip(*np.unique(np.asarray(val.vignette_ids), return_counts=True)))
    ensemble_best_of_n = best_of_n(ens, primary, val.vignette_ids, n_best_of, draws, seed, confidence)
    out = {
        "held_out": HELD_OUT_NOTE,
        "split": "val",
        "primary_dimension": primary_dimension,
        "ensemble_formula": describe_penalty(penalty, lam),
        "penalty": penalty,
        "lam": lam,
        "n_seeds": len(seed_names),
        "n_reappraisals": len(ids),
        "n_pairs": int(len(usable)),
        "n_pairs_without_score": int(len(val_pairs) - len(usable)),
        "scenarios_with_one_val_reappraisal": sorted(str(k) for k, v in counts.items() if v < 2),
        "per_seed": seeds,
        "mean_of_seeds_pairwise_accuracy": float(np.mean(seed_accs)) if None not in seed_accs else None,
        "ensemble": {
            "pairwise": _accuracy(usable, ids, ens, confidence),
            "pairwise_mean_only": _accuracy(usable, ids, per_seed.mean(axis=0), confidence),
            "spearman": spearman_with_humans(ens, primary, val.vignette_ids),
            "best_of_n": ensemble_best_of_n,
        },
        "seed_disagreement": seed_disagreement(
            per_seed, usable["id_a"].map(index).to_numpy(), usable["id_b"].map(index).to_numpy()
        ),
        "model_card_reference": CARD_REFERENCE,
    }
    if bradley_terry is not None:
        bt = np.asarray(bradley_terry, dtype=float)
        bt_best_of_n = best_of_n(bt, primary, val.vignette_ids, n_best_of, draws, seed, confidence)
        out["bradley_terry"] = {
            "pairwise": _accuracy(usable, ids, bt, confidence),
            "spearman": spearman_with_humans(bt, primary, val.vignette_ids),
            "best_of_n": bt_best_of_n,
            "best_of_n_vs_ensemble": paired_best_of_n_difference(bt_best_of_n, ensemble_best_of_n, confidence),
        }
    return out


def evaluate_reward_models(
    model_dirs: Sequence[str | Path],
    *,
    targets,
    vignettes,
    pairs,
    dimensions: Sequence[str],
    primary_dimension: str,
    penalty: str = "std",
    lam: float = 0.5,
    batch_size: int = 32,
    max_length: int = 512,
    n_best_of: int = 16,
    draws: int = 200,
    seed: int = 0,
    confidence: float = 0.95,
    bradley_terry_dir: str | Path | None = None,
) -> dict:
    """Score the validation reappraisals with every seed (and the Bradley–Terry model, when its folder is
    given) and compute :func:`evaluate_scores`."""
    from .ensemble import EnsembleScorer

    val = examples_for_split(targets, vignettes, "val", dimensions)
    scorer = EnsembleScorer.from_dirs(model_dirs, penalty=penalty, lam=lam, batch_size=batch_size, max_length=max_length)
    per_seed = scorer.score_per_seed(val.scenarios, val.reappraisals)
    bt_scores = None
    if bradley_terry_dir is not None:
        bt_scorer = EnsembleScorer.from_dirs([bradley_terry_dir], batch_size=batch_size, max_length=max_length)
        bt_scores = bt_scorer.score_per_seed(val.scenarios, val.reappraisals)[0]
    out = evaluate_scores(
        per_seed,
        seed_names=scorer.names,
        val=val,
        val_pairs=pairs_for_split(pairs, "val"),
        primary_dimension=primary_dimension,
        penalty=penalty,
        lam=lam,
        n_best_of=n_best_of,
        draws=draws,
        seed=seed,
        confidence=confidence,
        bradley_terry=bt_scores,
    )
    if bradley_terry_dir is not None:
        out["bradley_terry"]["model_dir"] = str(bradley_terry_dir)
        out["bradley_terry"]["training"] = _training_record(Path(bradley_terry_dir))
    out["model_dirs"] = [str(d) for d in model_dirs]
    out["max_length"] = max_length
    return out


def _training_record(model_dir: Path) -> dict:
    """What the Bradley–Terry model was trained on and how long (its metrics.json, without the figures)."""
    try:
        record = json.loads((model_dir / "metrics.json").read_text())
    except (OSError, ValueError):
        return {}
    keys = ("loss", "base", "n_train_pairs", "n_split_pairs", "min_gap", "max_pairs", "n_scenarios", "gap_quantiles",
            "global_steps", "train_seconds", "train_loss", "config")
    return {k: record[k] for k in keys if k in record}


def cli_main(argv: Sequence[str] | None = None) -> int:
    """``reappraisal evaluate-reward-models``: held-out pairwise accuracy and diagnostics of the ensemble."""
    p = argparse.ArgumentParser(prog="reappraisal evaluate-reward-models", description=cli_main.__doc__)
    p.add_argument("--models", nargs="+", required=True, help="one directory per seed")
    add_table_arguments(p)
    p.add_argument("--bradley-terry", default=None, help="the Bradley-Terry model's folder (evaluated beside the ensemble)")
    a, settings, dims, primary = parse_command(p, argv)
    rm = settings.reward
    ens, ev = rm.ensemble, rm.evaluation
    set_cpu_threads(rm.cpu_threads)
    targets, vignettes, pairs = read_rated_tables(a.targets, a.vignettes, a.pairs)
    out = evaluate_reward_models(
        a.models,
        targets=targets,
        vignettes=vignettes,
        pairs=pairs,
        dimensions=dims,
        primary_dimension=primary,
        penalty=ens.penalty,
        lam=float(ens.lam),
        batch_size=int(ens.batch_size),
        max_length=int(rm.max_length),
        n_best_of=int(ev.best_of_n),
        draws=int(ev.best_of_n_draws),
        seed=int(settings.seed),
        confidence=float(ev.confidence),
        bradley_terry_dir=a.bradley_terry,
    )
    out["preset"] = settings.preset
    write_json(out, a.out)
    acc = out["ensemble"]["pairwise"].get("accuracy")
    print(f"ensemble held-out pairwise accuracy {acc}; per seed "
          + ", ".join(f"{k} {v['pairwise'].get('accuracy')}" for k, v in out["per_seed"].items())
          + (f"; Bradley-Terry {out['bradley_terry']['pairwise'].get('accuracy')}" if "bradley_terry" in out else ""))
    return 0
