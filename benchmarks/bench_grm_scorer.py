"""Benchmark: the batched GRM scorer vs a one-prompt-at-a-time reference.

12 candidates x 2 orders (24 judge prompts), greedy, ``max_new_tokens`` from
the config's ``grm`` section (demo preset: 40). Both paths must give the same
scores and the same replies; the script reports the wall-clock ratio.

    .venv/bin/python benchmarks/bench_grm_scorer.py                      # results/grm/model
    .venv/bin/python benchmarks/bench_grm_scorer.py --model DIR --repeats 3 --out bench.json

Needs the demo data (``snakemake data/processed/pairs.parquet``) and a GRM
directory (``snakemake results/grm/model``; any saved causal LM with a chat
template works, e.g. ``results/base_models/grm``). Candidates are val-split
human reappraisals (never seen in training), references the train medians.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from reappraisal.config import load_config
from reappraisal.grm.scorer import GRMScorer, median_references


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="results/grm/model")
    ap.add_argument("--targets", default="data/processed/targets.parquet")
    ap.add_argument("--vignettes", default="data/interim/vignettes.parquet")
    ap.add_argument("--n", type=int, default=12, help="candidates (each judged in 2 orders)")
    ap.add_argument("--max-new-tokens", type=int, default=None, help="default: config grm.max_new_tokens")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--mode", default="generate", choices=["generate", "logprob"])
    ap.add_argument("--out", default=None, help="write the figures as JSON here too")
    a = ap.parse_args(argv)

    import torch

    cfg = load_config()
    max_new = a.max_new_tokens or int(cfg["grm"]["max_new_tokens"])
    if not Path(a.model).is_dir():
        print(f"error: no model at {a.model}; run `snakemake --cores 2 results/grm/model` first", file=sys.stderr)
        return 2
    targets, vignettes = pd.read_parquet(a.targets), pd.read_parquet(a.vignettes)
    refs = median_references(targets, vignettes, cfg["data"]["primary_dimension"])
    pool = targets[(targets["author_type"] == "human") & (targets["split"] == "val")
                   & targets["vignette_id"].isin(list(refs))]
    cands = pool.sample(n=a.n, random_state=0)
    scen = dict(zip(vignettes["vignette_id"], vignettes["text"]))
    vids = list(cands["vignette_id"])
    args = (vids, [scen[v] for v in vids], list(cands["text"]))

    scorer = GRMScorer.from_dir(a.model, references=refs, max_new_tokens=max_new, batch_size=2 * a.n, mode=a.mode)
    scorer.score(*args)  # warm-up (first-call allocations)
    batched_t, single_t, max_diff = [], [], 0.0
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        batched = scorer.score(*args)
        batched_t.append(time.perf_counter() - t0)
        texts_b, errors_b = scorer.last_texts, scorer.last_error_count
        t0 = time.perf_counter()
        single = scorer.score_one_at_a_time(*args)
        single_t.append(time.perf_counter() - t0)
        max_diff = max(max_diff, float(np.max(np.abs(batched - single))))
        # generate: the same greedy replies, hence identical scores; logprob: the same
        # probabilities up to float rounding (padding changes the summation order).
        same = (np.array_equal(batched, single) and texts_b == scorer.last_texts) if a.mode == "generate" \
            else max_diff <= 1e-5
        if not same:
            print(f"error: batched and one-at-a-time scores differ (max |diff| {max_diff:.3g})", file=sys.stderr)
            return 1
    result = {
        "model": a.model,
        "mode": a.mode,
        "candidates": a.n,
        "prompts": 2 * a.n,
        "max_new_tokens": max_new,
        "repeats": a.repeats,
        "batched_s_median": statistics.median(batched_t),
        "one_at_a_time_s_median": statistics.median(single_t),
        "speedup": statistics.median(single_t) / statistics.median(batched_t),
        "identical_scores_and_replies": a.mode == "generate",
        "max_abs_score_difference": max_diff,
        "unparseable_verdicts": int(errors_b),
        "mean_reply_tokens": float(np.mean([len(scorer.judge.tokenizer(t)["input_ids"])
                                            for pair in texts_b for t in pair])) if a.mode == "generate" else None,
        "torch_threads": torch.get_num_threads(),
        "device": "cuda" if torch.cuda.is_available() else "cpu",
        "platform": platform.platform(),
    }
    print(json.dumps(result, indent=2))
    if a.out:
        Path(a.out).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
