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
(uncapped), ``wilson_effective_n`` (Wilson at Korn-Graubard's effective number of contests),
``korn_graubard_cap{c}_near{d}_grow{k}`` (the effective number of contests at most c·max(1, distance/d)^k a scenario,
the distance being the estimate's from the nearer bound; ``_grow0`` with d = 1.0: the cap c everywhere),
``korn_graubard_step{c}_near{d}`` (the earlier rule: at most c a scenario within d of a bound, none beyond),
``cluster_clopper_pearson`` (distribution-free). The headline is ``korn_graubard_cap4_near0.1_grow2``
(:func:`reappraisal.stats.cluster_korn_graubard_interval`).

Width: each candidate's median width over the uncapped Korn-Graubard's in the same setting, reported where
Korn-Graubard meets the bar (``--csv FILE`` writes every setting's coverage, tails, widths and ratio:
``benchmarks/headline_regimes_tuning.csv`` and ``benchmarks/headline_regimes_holdout.csv``).

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
from reappraisal.stats.simulation import largest_spread
from tests.stats.helpers import FAMILIES, logit_normal_parameters, simulate_regime

GRIDS = {
    "tuning": {"seed": 1, "means": (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99),
               "spreads": (0.02, 0.05, 0.1, 0.2), "scenarios": (4, 6, 7, 12), "per_scenario": (4, 6, 12, 40, 120, 200)},
    "holdout": {"seed": 2, "means": (0.015, 0.03, 0.07, 0.15, 0.25, 0.4, 0.6, 0.75, 0.85, 0.93, 0.97, 0.985),
                "spreads": (0.03, 0.075, 0.15), "scenarios": (5, 8, 10), "per_scenario": (5, 9, 24, 80, 160)},
}
TIES = (0.0, 0.1, 0.2)
HEADLINE = "korn_graubard_cap4_near0.1_grow2"


def _kg(cap, near, growth):
    return lambda means, n: cluster_korn_graubard_interval(means, n, near_bound=near, contests_per_scenario_near_bound=cap,
                                                           cap_growth=growth)


def _kg_step(cap, near):
    """The earlier rule: the cap within ``near`` of a bound and none beyond (a jump at the edge)."""
    def interval(means, n):
        theta = means.mean(axis=-1)
        inside = np.minimum(theta, 1 - theta) < near
        capped = cluster_korn_graubard_interval(means, n, near_bound=1.0, contests_per_scenario_near_bound=cap,
                                                cap_growth=0.0)
        free = cluster_korn_graubard_interval(means, n, near_bound=1.0, contests_per_scenario_near_bound=np.inf)
        return tuple(np.where(inside, c, f) for c, f in zip(capped, free))
    return interval


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
    "korn_graubard": _kg(np.inf, 1.0, 0.0),
    "korn_graubard_cap4_near1.0_grow0": _kg(4.0, 1.0, 0.0),
    **{f"korn_graubard_cap4_near0.1_grow{k}": _kg(4.0, 0.1, float(k)) for k in (2, 3)},
    "korn_graubard_step4_near0.2": _kg_step(4.0, 0.2),
    "cluster_clopper_pearson": lambda means, n: cluster_clopper_pearson_interval(means),
}


@functools.lru_cache(maxsize=None)
def feasible(family: str, mean: float, spread: float) -> bool:
    """Below 0.95 of the largest sd a rate in [0, 1] with this mean can have, and (logit-normal) solvable."""
    if spread >= largest_spread(mean):
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


def _distance(s) -> float:
    return min(s[2], 1 - s[2])


REGIMES = {
    "all": lambda s: True,
    "<= 12 a scenario, within 0.1 of a bound": lambda s: _distance(s) <= 0.1 and s[4] <= 12,
    "> 12 a scenario, within 0.1 of a bound": lambda s: _distance(s) <= 0.1 and s[4] > 12,
    "rates 0.15-0.85": lambda s: _distance(s) > 0.1,
    "<= 12 a scenario, 0.15-0.25 from a bound": lambda s: 0.1 < _distance(s) <= 0.25 and s[4] <= 12,
    "> 12 a scenario, 0.15-0.25 from a bound": lambda s: 0.1 < _distance(s) <= 0.25 and s[4] > 12,
    "rates 0.3-0.7": lambda s: _distance(s) > 0.25,
}
BASELINE = "korn_graubard"
#: The width bar: where uncapped Korn-Graubard meets the coverage bar, a median width at most this many times its.
WIDTH_RATIO_BAR = 1.25


def width_ratio(result: dict, name: str) -> float:
    return result[name]["width"] / result[BASELINE]["width"] if result[BASELINE]["width"] > 0 else float("inf")


def markdown(results: dict, candidates) -> str:
    lines = ["| candidate | regime | settings failing | min coverage | max tail | median width | share wider than 0.5 "
             f"| settings where KG meets the bar | median width / KG's there | share of them over {WIDTH_RATIO_BAR:g}x |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name in candidates:
        for regime, member in REGIMES.items():
            keys = [s for s in results if member(s)]
            rows = [results[s][name] for s in keys]
            if not rows:
                continue
            mark = " (headline)" if name == HEADLINE else ""
            ratio = ""
            if BASELINE in results[keys[0]]:
                ratios = np.array([width_ratio(results[s], name) for s in keys if not fails(results[s][BASELINE])])
                ratio = (f"{ratios.size} | {np.median(ratios):.2f} | {np.mean(ratios > WIDTH_RATIO_BAR):.2f}"
                         if ratios.size else "0 | — | —")
            lines.append(f"| {name}{mark} | {regime} | {sum(map(fails, rows))} of {len(rows)} | "
                         f"{min(r['coverage'] for r in rows):.3f} | {max(max(r['below'], r['above']) for r in rows):.3f} | "
                         f"{np.median([r['width'] for r in rows]):.3f} | {np.mean([r['wide'] for r in rows]):.2f} | {ratio} |")
    return "\n".join(lines)


def write_csv(path: Path, results: dict) -> None:
    """One row per setting: the headline's coverage, tails and median width beside uncapped Korn-Graubard's."""
    rows = ["family,scenarios,rate,sd,contests_per_scenario,unequal,ties,coverage,below,above,median_width,"
            "korn_graubard_coverage,korn_graubard_passes,korn_graubard_median_width,width_ratio"]
    for s, r in results.items():
        h, kg = r[HEADLINE], r[BASELINE]
        rows.append(",".join(map(str, s)) + f",{h['coverage']:.4f},{h['below']:.4f},{h['above']:.4f},{h['width']:.4f},"
                    f"{kg['coverage']:.4f},{str(not fails(kg)).lower()},{kg['width']:.4f},{width_ratio(r, HEADLINE):.3f}")
    path.write_text("\n".join(rows) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", choices=list(GRIDS), default="tuning")
    ap.add_argument("--datasets", type=int, default=1500, help="simulated datasets per setting")
    ap.add_argument("--candidates", nargs="+", default=["stretched_logit_jackknife", "korn_graubard",
                                                        "korn_graubard_step4_near0.2", "korn_graubard_cap4_near0.1_grow3",
                                                        HEADLINE, "cluster_clopper_pearson"],
                    choices=list(CANDIDATES))
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--csv", type=Path, default=None, help="every setting's figures for the headline beside uncapped Korn-Graubard (both must be among the candidates)")
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
    if args.csv:
        write_csv(args.csv, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
