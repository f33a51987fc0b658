"""Which headline interval is honest at every win rate the pipeline produces? Coverage, tails and widths of candidate
intervals for the mean of G scenario win rates over the whole regime: near 0 and 1, few or many contests a scenario.

Grid (``--grid tuning``, what the headline's rule was chosen on): true mean win rates 0.01, 0.02, 0.05, 0.1, 0.2, 0.3,
0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99; between-scenario sd 0.02, 0.05, 0.1, 0.2 (where feasible: below 0.95 of the
largest sd a rate in [0, 1] with that mean can have, and a logit-normal with it exists); Beta and logit-normal scenario rates; G = 4, 6, 7, 12;
4, 6, 12, 40, 120, 200 contests a scenario, equal or unequal (0.4x to 1.6x the mean across scenarios); ties 0, 10 and
20 % of contests (where the rate allows). ``--grid holdout``: settings nothing was chosen on (rates 0.015 ... 0.985,
sd 0.03, 0.075, 0.15, G = 5, 8, 10, 5-160 contests a scenario, another seed). The truth is the population's mean rate.

Bar: coverage >= 0.93 and each tail (the share of intervals wholly below, wholly above the truth) <= 0.04.

Candidates: ``stretched_logit_jackknife`` (the jackknife on sinh(0.5 logit), clipped at 0.5/n), ``korn_graubard``
(uncapped), ``wilson_effective_n`` (Wilson at Korn-Graubard's effective number of contests), ``korn_graubard_cap{c}_near{d}`` (the effective number of contests at most c a scenario where the estimate
lies within d of a bound; ``_near1.0`` = everywhere), ``cluster_clopper_pearson`` (distribution-free). The headline
is ``korn_graubard_cap4_near0.2`` (:func:`reappraisal.stats.cluster_korn_graubard_interval`).

``python benchmarks/headline_regimes.py --grid tuning --datasets 1500 [--out FILE]`` (about 20 minutes on 2 cores;
the held-out grid about 10). ``tests/stats/test_coverage.py`` asserts the bar on a subset of both grids.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from reappraisal.stats import (
    cluster_clopper_pearson_interval,
    cluster_korn_graubard_interval,
    cluster_stretched_logit_jackknife_interval,
    wilson_interval,
)
from tests.stats.helpers import FAMILIES, logit_normal_parameters, simulate_regime

GRIDS = {
    "tuning": {"seed": 1, "means": (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99),
               "spreads": (0.02, 0.05, 0.1, 0.2), "scenarios": (4, 6, 7, 12), "per_scenario": (4, 6, 12, 40, 120, 200)},
    "holdout": {"seed": 2, "means": (0.015, 0.03, 0.07, 0.15, 0.25, 0.4, 0.6, 0.75, 0.85, 0.93, 0.97, 0.985),
                "spreads": (0.03, 0.075, 0.15), "scenarios": (5, 8, 10), "per_scenario": (5, 9, 24, 80, 160)},
}
TIES = (0.0, 0.1, 0.2)
HEADLINE = "korn_graubard_cap4_near0.2"


def _kg(cap, near):
    return lambda means, n: cluster_korn_graubard_interval(means, n, near_bound=near, contests_per_scenario_near_bound=cap)


def _wilson_effective_n(means, n):
    """Wilson score interval at Korn-Graubard's effective number of contests (uncapped, df-adjusted)."""
    g = means.shape[-1]
    theta = means.mean(axis=-1)
    variance = means.var(axis=-1, ddof=1) / g
    spread = variance > 0
    n_eff = np.minimum(np.where(spread, theta * (1 - theta) / np.where(spread, variance, 1.0), np.inf), n)
    n_star = n_eff * (stats.norm.isf(0.025) / stats.t.isf(0.025, df=g - 1)) ** 2
    return wilson_interval(theta * n_star, n_star)


CANDIDATES = {
    "wilson_effective_n": _wilson_effective_n,
    "stretched_logit_jackknife": lambda means, n: cluster_stretched_logit_jackknife_interval(means, n),
    "korn_graubard": _kg(np.inf, 0.0),
    **{f"korn_graubard_cap{c}_near{d}": _kg(c, d) for c in (4, 6, 8, 12, 24) for d in (0.1, 0.2, 0.3, 1.0)},
    "cluster_clopper_pearson": lambda means, n: cluster_clopper_pearson_interval(means),
}


@functools.lru_cache(maxsize=None)
def feasible(family: str, mean: float, spread: float) -> bool:
    """Below 0.95 of the largest sd a rate in [0, 1] with this mean can have, and (logit-normal) solvable."""
    if spread >= 0.95 * np.sqrt(mean * (1 - mean)):
        return False
    if family == "logit_normal":
        try:
            logit_normal_parameters(mean, spread)
        except ValueError:
            return False
    return True


def settings(grid: dict):
    for family, g, mean, spread, per, unequal, tie in itertools.product(
            FAMILIES, grid["scenarios"], grid["means"], grid["spreads"], grid["per_scenario"], (0, 1), TIES):
        if feasible(family, mean, spread):
            yield family, g, mean, spread, per, unequal, tie


def measure(setting, seed: int, datasets: int, candidates) -> dict:
    family, g, mean, spread, per, unequal, tie = setting
    rng = np.random.default_rng([seed, FAMILIES.index(family), g, int(mean * 1000), int(spread * 1000), per, unequal,
                                 int(tie * 100)])
    means, n = simulate_regime(rng, datasets, n_scenarios=g, mean=mean, spread=spread, family=family,
                               per_scenario=per, unequal=bool(unequal), tie_share=tie)
    out = {}
    for name in candidates:
        low, high = CANDIDATES[name](means, n)
        out[name] = {"coverage": float(np.mean((low <= mean) & (mean <= high))), "below": float(np.mean(high < mean)),
                     "above": float(np.mean(low > mean)), "width": float(np.median(high - low)),
                     "wide": float(np.mean(high - low > 0.5))}
    return out


def fails(r: dict) -> bool:
    return r["coverage"] < 0.93 or r["below"] > 0.04 or r["above"] > 0.04


REGIMES = {
    "all": lambda s: True,
    "<= 12 a scenario, within 0.1 of a bound": lambda s: min(s[2], 1 - s[2]) <= 0.1 and s[4] <= 12,
    "> 12 a scenario, within 0.1 of a bound": lambda s: min(s[2], 1 - s[2]) <= 0.1 and s[4] > 12,
    "rates 0.15-0.85": lambda s: min(s[2], 1 - s[2]) > 0.1,
}


def markdown(results: dict, candidates) -> str:
    lines = ["| candidate | regime | settings failing | min coverage | max tail | median width | share wider than 0.5 |",
             "|---|---|---|---|---|---|---|"]
    for name in candidates:
        for regime, member in REGIMES.items():
            rows = [r[name] for s, r in results.items() if member(s)]
            if not rows:
                continue
            mark = " (headline)" if name == HEADLINE else ""
            lines.append(f"| {name}{mark} | {regime} | {sum(map(fails, rows))} of {len(rows)} | "
                         f"{min(r['coverage'] for r in rows):.3f} | {max(max(r['below'], r['above']) for r in rows):.3f} | "
                         f"{np.median([r['width'] for r in rows]):.3f} | {np.mean([r['wide'] for r in rows]):.2f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", choices=list(GRIDS), default="tuning")
    ap.add_argument("--datasets", type=int, default=1500, help="simulated datasets per setting")
    ap.add_argument("--candidates", nargs="+", default=["stretched_logit_jackknife", "wilson_effective_n", "korn_graubard",
                                                        "korn_graubard_cap4_near1.0", "korn_graubard_cap4_near0.1",
                                                        HEADLINE, "korn_graubard_cap12_near0.2", "cluster_clopper_pearson"],
                    choices=list(CANDIDATES))
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    start = time.perf_counter()
    grid = GRIDS[args.grid]
    results = {s: measure(s, grid["seed"], args.datasets, args.candidates) for s in settings(grid)}
    text = (f"{args.grid} grid: {len(results)} settings x {args.datasets} datasets, seed {grid['seed']}\n\n"
            + markdown(results, args.candidates))
    failing = [(s, r[HEADLINE]) for s, r in results.items() if HEADLINE in r and fails(r[HEADLINE])]
    if failing:
        text += "\n\nsettings where the headline misses the bar (family, G, rate, sd, contests a scenario, unequal, ties):\n"
        text += "\n".join(f"- {s}: coverage {r['coverage']:.3f}, below {r['below']:.3f}, above {r['above']:.3f}"
                          for s, r in failing)
    print(text)
    print(f"\n{time.perf_counter() - start:.0f} s")
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
