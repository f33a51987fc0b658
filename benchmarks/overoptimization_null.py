"""The training log's overoptimization verdict on logs whose truth is known: how often it calls gold fallen when gold
never fell (false alarms), and how often it sees a real fall (power), for the rule with split halves (the peak chosen
on the even-numbered steps, measured on the odd ones) beside the earlier rule (peak and drop from the same running
means, the maximum of many of them).

Simulated logs of a demo arm's length (80 steps, running means over 20) and a paper arm's (500 steps, over 50): the
proxy climbs steadily (as every trained arm's does); gold's step means carry noise of sd 1 (independent, or AR(1)
with 0.3 between neighbouring steps: a policy changes a little each step) around a path:

- ``flat``: gold never moves (the null);
- ``rise then plateau``: gold rises by 1 over the first third and stays (the null: no fall);
- ``peak then fall (d)``: gold rises by 1 over the first 40 % and then falls by d (0.5, 1: overoptimization).

``python benchmarks/overoptimization_null.py [--logs 2000] [--seed 11]`` (about a minute on 2 cores). The seed
was never used while choosing the rule.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src")]

from reappraisal.summary.overoptimization import overoptimization_row

LENGTHS = {"demo (80 steps, window 20)": (80, 20), "paper (500 steps, window 50)": (500, 50)}
NOISE = {"independent": 0.0, "AR(1) 0.3": 0.3}


def paths(n: int) -> dict:
    t = np.linspace(0, 1, n)
    return {"flat": np.zeros(n), "rise then plateau": np.minimum(t * 3, 1.0),
            **{f"peak then fall ({d:g})": np.minimum(t / 0.4, 1.0) - d * np.clip((t - 0.4) / 0.6, 0, None)
               for d in (0.5, 1.0)}}


def noise(rng, n: int, rho: float) -> np.ndarray:
    e = rng.standard_normal(n)
    out = np.empty(n)
    out[0] = e[0]
    for i in range(1, n):
        out[i] = rho * out[i - 1] + np.sqrt(1 - rho**2) * e[i]
    return out


def alarm_rates(n: int, window: int, path: np.ndarray, rho: float, logs: int, seed: int) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    split = earlier = 0
    for _ in range(logs):
        log = pd.DataFrame({"step": np.arange(1, n + 1), "gold": path + noise(rng, n, rho),
                            "rm_score": np.linspace(0, 3, n) + 0.3 * rng.standard_normal(n)})
        split += overoptimization_row(log, window)["overoptimized"]
        earlier += overoptimization_row(log, window, split=False)["overoptimized"]
    return split / logs, earlier / logs


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--logs", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args(argv)
    start = time.perf_counter()
    lines = ["| log | gold's path | step noise | overoptimized: split halves | overoptimized: earlier rule |",
             "|---|---|---|---|---|"]
    for length, (n, window) in LENGTHS.items():
        for name, path in paths(n).items():
            for noise_name, rho in NOISE.items():
                split, earlier = alarm_rates(n, window, path, rho, args.logs, args.seed)
                lines.append(f"| {length} | {name} | {noise_name} | {split:.3f} | {earlier:.3f} |")
    print("\n".join(lines))
    print(f"\n{args.logs} logs a row, seed {args.seed}; {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
