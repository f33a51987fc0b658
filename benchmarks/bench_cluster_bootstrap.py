"""Benchmark: vectorized cluster bootstrap vs a pandas groupby loop.

Data: synthetic contests (scores 1 / 0.5 / 0) in scenarios of equal size,
720 contests in 6 scenarios by default. Both methods compute the percentile
cluster bootstrap statistic, the pooled win rate of a resample of whole
scenarios, in the same process:

- vectorized: ``reappraisal.stats.cluster_bootstrap_draws`` — per-scenario
  sums and sizes (one groupby), a (B, G) multinomial count matrix C and
  (C @ sums) / (C @ sizes);
- baseline: per replicate, draw G scenarios with replacement, ``pd.concat``
  their rows, ``groupby`` the resampled clusters for sums and counts, pool.
  It runs for ``--baseline-draws`` replicates only; its per-replicate time is
  extrapolated to ``--draws`` (the output says so).

Targets: vectorized < 0.5 s for the requested draws, and >= 50x faster than
the baseline. Run:

    .venv/bin/python benchmarks/bench_cluster_bootstrap.py --draws 100000 --seed 0
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np
import pandas as pd

from reappraisal.stats import cluster_bootstrap_draws

TARGET_SECONDS = 0.5
TARGET_SPEEDUP = 50.0


def make_contests(n_contests: int, n_scenarios: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    per = n_contests // n_scenarios
    rates = rng.uniform(0.6, 0.9, size=n_scenarios)
    scores = [
        rng.choice([1.0, 0.5, 0.0], size=per, p=[r - 0.05, 0.1, 0.95 - r]) for r in rates
    ]
    return pd.DataFrame(
        {"vignette_id": np.repeat([f"v{g}" for g in range(n_scenarios)], per), "score": np.concatenate(scores)}
    )


def vectorized(contests: pd.DataFrame, draws: int, seed: int) -> np.ndarray:
    totals = contests.groupby("vignette_id")["score"].agg(["sum", "count"])
    return cluster_bootstrap_draws(
        totals["sum"].to_numpy(float), totals["count"].to_numpy(float), draws, seed=seed
    )


def baseline(contests: pd.DataFrame, draws: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    groups = {name: rows for name, rows in contests.groupby("vignette_id")}
    names = list(groups)
    stats = np.empty(draws)
    for b in range(draws):
        picked = rng.choice(len(names), size=len(names), replace=True)
        resample = pd.concat(
            [groups[names[i]].assign(boot_cluster=j) for j, i in enumerate(picked)], ignore_index=True
        )
        cells = resample.groupby("boot_cluster")["score"].agg(["sum", "count"])
        stats[b] = cells["sum"].sum() / cells["count"].sum()
    return stats


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=100_000, help="bootstrap replicates (default 100000)")
    parser.add_argument("--seed", type=int, default=0, help="random seed for data and draws (default 0)")
    parser.add_argument("--baseline-draws", type=int, default=1_000, help="replicates actually run by the loop baseline (default 1000)")
    parser.add_argument("--contests", type=int, default=720, help="number of contests (default 720)")
    parser.add_argument("--scenarios", type=int, default=6, help="number of scenarios (default 6)")
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats of the vectorized run; median reported (default 5)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)

    contests = make_contests(args.contests, args.scenarios, args.seed)
    vectorized(contests, 1_000, args.seed)  # warm-up: imports, caches

    times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        fast = vectorized(contests, args.draws, args.seed)
        times.append(time.perf_counter() - start)
    fast_seconds = statistics.median(times)

    start = time.perf_counter()
    slow = baseline(contests, args.baseline_draws, args.seed)
    slow_measured = time.perf_counter() - start
    per_replicate = slow_measured / args.baseline_draws
    slow_seconds = per_replicate * args.draws
    speedup = slow_seconds / fast_seconds

    print(f"data: {len(contests)} contests in {args.scenarios} scenarios, seed {args.seed}")
    print(
        f"vectorized (multinomial counts @ cluster sums): {args.draws} draws in {fast_seconds:.4f} s "
        f"(median of {args.repeats}; includes the per-scenario groupby)"
    )
    print(
        f"pandas loop baseline (resample, concat, groupby): measured {args.baseline_draws} draws in "
        f"{slow_measured:.2f} s = {per_replicate * 1e3:.3f} ms/draw; "
        f"extrapolated to {args.draws} draws: {slow_seconds:.1f} s"
    )
    print(f"speedup: {speedup:.0f}x")
    print(
        f"bootstrap SE check: vectorized {fast.std():.5f}, baseline {slow.std():.5f} "
        f"({args.baseline_draws} draws)"
    )
    time_ok = fast_seconds < TARGET_SECONDS
    speed_ok = speedup >= TARGET_SPEEDUP
    print(f"target < {TARGET_SECONDS} s: {'met' if time_ok else 'NOT met'}")
    print(f"target >= {TARGET_SPEEDUP:.0f}x: {'met' if speed_ok else 'NOT met'}")
    return 1 if args.strict and not (time_ok and speed_ok) else 0


if __name__ == "__main__":
    sys.exit(main())
