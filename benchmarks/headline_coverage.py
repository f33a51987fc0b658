"""Which interval should the headline carry? Coverage, each tail and mean width of candidate intervals for the mean
of G scenario win rates, on simulated clustered contests, under two families of scenario rates.

Settings: scenario rates Beta or logit-normal (mean and sd matched on the probability scale), win rates 0.5, 0.75,
0.87 and 0.95, between-scenario sd 0.05, 0.10 and 0.15, G = 6 and 12 scenarios, 3 runs x 40 contests per scenario
with ties (``tests.stats.helpers.simulate_clustered``). The truth is the population's mean rate (the headline
estimand). "above" is the share of intervals wholly above the truth (they overclaim), "below" wholly below.

Candidates (all on the G scenario means, runs pooled):

- ``logit_jackknife``: delete-one-scenario jackknife of logit(mean), t with G - 1 df (the headline before);
- ``johnson_logit_jackknife``: the same pseudo-values with Johnson's (1978) skewness-corrected t;
- ``bootstrap_t_logit``: studentized cluster bootstrap of the logit jackknife (exact enumeration at G = 6,
  999 draws at G = 12);
- ``korn_graubard``: Clopper-Pearson at the effective number of contests n / deff, df-adjusted by
  (z / t_{G-1})^2 (Korn & Graubard 1998, the survey interval for a proportion from few clusters);
- ``cluster_t``: t on the scenario means (for reference).

``python benchmarks/headline_coverage.py [--datasets 4000] [--out benchmarks/headline_coverage.md]`` prints (and
writes) the table; the chosen interval's own test is ``tests/stats/test_coverage.py``.
"""

from __future__ import annotations

import argparse
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

from reappraisal.stats import cluster_logit_jackknife_interval, cluster_t_interval
from reappraisal.stats.intervals import cluster_stretched_logit_jackknife_interval
from reappraisal.stats.bootstrap import exact_resample_counts
from tests.stats.helpers import FAMILIES, simulate_clustered

MEANS = (0.5, 0.75, 0.87, 0.95)
SPREADS = (0.05, 0.10, 0.15)
SCENARIOS = (6, 12)
SEED = 2024
#: Settings no candidate was chosen on (``--holdout``): other win rates (one below 1/2), spreads and G, another seed.
HOLDOUT = {"means": (0.2, 0.65, 0.92), "spreads": (0.075, 0.125), "scenarios": (8, 10), "seed": 7}
CONFIDENCE = 0.95


def _logit(x):
    return np.log(x) - np.log1p(-x)


def _expit(x):
    return 1.0 / (1.0 + np.exp(-x))


def _pseudo(means, eps):
    """Tukey pseudo-values of logit(mean of means), (..., G), and the clip (..., 1) used."""
    g = means.shape[-1]
    theta = means.mean(axis=-1, keepdims=True)
    loo = (means.sum(axis=-1, keepdims=True) - means) / (g - 1)
    return g * _logit(np.clip(theta, eps, 1 - eps)) - (g - 1) * _logit(np.clip(loo, eps, 1 - eps))


def korn_graubard_interval(scenario_means, n_contests, confidence: float = 0.95):
    """Korn-Graubard (1998) interval of the mean of G scenario rates: Clopper-Pearson at an effective size.

    With θ̂ the mean of the scenario means and v = s²/G its cluster variance (s² the sample variance of the
    scenario means), the effective number of contests is n_eff = θ̂(1 − θ̂)/v (at most ``n_contests``, its
    value when the scenarios do not differ), shrunk for the few clusters behind v:
    n* = n_eff·(z_{1−α/2}/t_{G−1, 1−α/2})². The interval is the Clopper-Pearson interval of θ̂·n* successes
    in n* trials (Beta quantiles, so n* need not be whole): asymmetric, wider toward 1/2, never outside
    [0, 1], never a point.
    """
    confidence = float(confidence)
    means = np.asarray(scenario_means, dtype=float)
    n = np.asarray(n_contests, dtype=float)
    g = means.shape[-1]
    theta = means.mean(axis=-1)
    variance = means.var(axis=-1, ddof=1) / g
    binomial = theta * (1.0 - theta)
    n_eff = np.where(variance > 0, binomial / np.where(variance > 0, variance, 1.0), np.inf)
    n_eff = np.minimum(n_eff, n)
    alpha = 1.0 - confidence
    n_star = n_eff * (stats.norm.ppf(1 - alpha / 2) / stats.t.ppf(1 - alpha / 2, df=g - 1)) ** 2
    x = theta * n_star
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(x > 0, stats.beta.ppf(alpha / 2, np.maximum(x, 1e-300), n_star - x + 1), 0.0)
        high = np.where(x < n_star, stats.beta.ppf(1 - alpha / 2, x + 1, np.maximum(n_star - x, 1e-300)), 1.0)
    return np.minimum(low, theta), np.maximum(high, theta)


def johnson_logit_jackknife(means, n, confidence=CONFIDENCE):
    g = means.shape[-1]
    pseudo = _pseudo(means, (0.5 / n)[:, None])
    centre, sd = pseudo.mean(-1), pseudo.std(-1, ddof=1)
    third = ((pseudo - centre[:, None]) ** 3).mean(-1)
    shift = np.where(sd > 0, third / (6 * np.maximum(sd, 1e-300) ** 2 * g), 0.0)
    t = stats.t.ppf(0.5 + confidence / 2, g - 1)
    low, high = _expit(centre + shift - t * sd / np.sqrt(g)), _expit(centre + shift + t * sd / np.sqrt(g))
    return _with_flat_fallback(means, n, low, high, confidence)


def _with_flat_fallback(means, n, low, high, confidence):
    """Like the headline: no spread at all -> the Wilson interval; the estimate always inside."""
    from reappraisal.stats import wilson_interval

    theta = means.mean(-1)
    flat = np.ptp(means, axis=-1) == 0
    w_low, w_high = wilson_interval(theta * n, n, confidence)
    return (np.minimum(np.where(flat, w_low, low), theta), np.maximum(np.where(flat, w_high, high), theta))


def bootstrap_t_logit(means, n, confidence=CONFIDENCE, seed=SEED, draws=999):
    g = means.shape[-1]
    if g <= 8:
        counts, probs = exact_resample_counts(g)
    else:
        counts = np.random.default_rng(seed).multinomial(g, np.full(g, 1 / g), size=draws).astype(float)
        probs = np.full(draws, 1 / draws)
    eps = (0.5 / n)[:, None]
    pseudo = _pseudo(means, eps)
    centre, se = pseudo.mean(-1), pseudo.std(-1, ddof=1) / np.sqrt(g)
    lows, highs = [], []
    for start in range(0, len(means), 250):
        m, e = means[start:start + 250], eps[start:start + 250, :, None]
        total = m @ counts.T  # (D, K): sum over the resample
        theta = total / g
        loo = (total[..., None] - m[:, None, :]) / (g - 1)  # (D, K, G): one copy of g left out
        p = g * _logit(np.clip(theta, e[..., 0], 1 - e[..., 0]))[..., None] - (g - 1) * _logit(np.clip(loo, e, 1 - e))
        c = counts[None]
        p_mean = (c * p).sum(-1) / g
        p_se = np.sqrt((c * (p - p_mean[..., None]) ** 2).sum(-1) / (g - 1) / g)
        diff = p_mean - centre[start:start + 250, None]
        tstar = np.where(p_se > 0, diff / np.where(p_se > 0, p_se, 1.0), np.where(diff == 0, 0.0, np.sign(diff) * np.inf))
        from reappraisal.stats.bootstrap import weighted_quantile

        q_lo, q_hi = weighted_quantile(tstar, probs, [0.5 - confidence / 2, 0.5 + confidence / 2])
        lows.append(centre[start:start + 250] - q_hi * se[start:start + 250])
        highs.append(centre[start:start + 250] - q_lo * se[start:start + 250])
    low, high = _expit(np.concatenate(lows)), _expit(np.concatenate(highs))
    return _with_flat_fallback(means, n, low, high, confidence)


def transformed_jackknife(means, n, confidence=CONFIDENCE, *, lam=0.0, df_drop=1, toward_middle=None):
    """Jackknife on g = sinh(lam * logit) / lam (logit at lam = 0), t with G - df_drop df; ``toward_middle``: the
    tail probability on the side toward 1/2 (the rest of alpha on the side toward the nearer bound)."""
    g = means.shape[-1]
    eps = (0.5 / n)[:, None]

    def f(x):
        z = _logit(np.clip(x, eps, 1 - eps))
        return z if lam == 0 else np.sinh(lam * z) / lam

    def f_inv(y):
        return _expit(y if lam == 0 else np.arcsinh(lam * y) / lam)

    theta = means.mean(-1, keepdims=True)
    loo = (means.sum(-1, keepdims=True) - means) / (g - 1)
    pseudo = g * f(theta) - (g - 1) * f(loo)
    centre, se = pseudo.mean(-1), pseudo.std(-1, ddof=1) / np.sqrt(g)
    alpha = 1 - confidence
    a_mid = alpha / 2 if toward_middle is None else toward_middle
    a_bound = alpha - a_mid
    high_side = theta[:, 0] >= 0.5  # the side toward 1/2 is the lower one
    a_low = np.where(high_side, a_mid, a_bound)
    a_high = np.where(high_side, a_bound, a_mid)
    t_low, t_high = stats.t.ppf(1 - a_low, g - df_drop), stats.t.ppf(1 - a_high, g - df_drop)
    return _with_flat_fallback(means, n, f_inv(centre - t_low * se), f_inv(centre + t_high * se), confidence)


def cluster_clopper_pearson(means, n, confidence=CONFIDENCE):
    """Clopper-Pearson on the G scenario means as G trials: distribution-free for rates in [0, 1], and wide."""
    g = means.shape[-1]
    x = means.sum(-1)
    alpha = 1 - confidence
    low = np.where(x > 0, stats.beta.ppf(alpha / 2, np.maximum(x, 1e-300), g - x + 1), 0.0)
    high = np.where(x < g, stats.beta.ppf(1 - alpha / 2, x + 1, np.maximum(g - x, 1e-300)), 1.0)
    return low, high


CANDIDATES = {
    "logit_jackknife": partial(cluster_logit_jackknife_interval, confidence=CONFIDENCE),
    "johnson_logit_jackknife": johnson_logit_jackknife,
    "bootstrap_t_logit": bootstrap_t_logit,
    "korn_graubard": korn_graubard_interval,
    "cluster_t": lambda m, n: cluster_t_interval(m, CONFIDENCE),
    "logit_jackknife_df_g2": partial(transformed_jackknife, df_drop=2),
    "logit_jackknife_tails_1_4": partial(transformed_jackknife, toward_middle=0.01),
    **{f"stretched_logit_{lam}": partial(cluster_stretched_logit_jackknife_interval, confidence=CONFIDENCE,
                                         stretch=lam) for lam in (0.25, 0.35, 0.5, 1.0)},
    "cluster_clopper_pearson": cluster_clopper_pearson,
}
#: The candidates shown setting by setting (the summary lists all).
DETAIL = ("logit_jackknife", "stretched_logit_0.5", "cluster_clopper_pearson")


def setting_rows(family, mean, spread, g, n_datasets, candidates, seed=SEED):
    rng = np.random.default_rng([seed, FAMILIES.index(family), int(round(mean * 1000)), int(round(spread * 1000)), g])
    sums, sizes = simulate_clustered(rng, n_datasets, n_scenarios=g, mean=mean, spread=spread, family=family)
    means, n = sums / sizes, sizes.sum(axis=1)
    out = {}
    for name in candidates:
        low, high = CANDIDATES[name](means, n)
        out[name] = {"coverage": float(np.mean((low <= mean) & (mean <= high))), "above": float(np.mean(low > mean)),
                     "below": float(np.mean(high < mean)), "width": float(np.mean(high - low))}
    return out


def markdown(results, candidates) -> str:
    detail = [c for c in DETAIL if c in candidates] or list(candidates)
    head = "| family | G | win rate | sd | " + " | ".join(detail) + " |"
    lines = [head, "|---|---|---|---|" + "---|" * len(detail)]
    for (family, g, mean, spread), row in results.items():
        cells = [f"{row[c]['coverage']:.3f} ({row[c]['below']:.3f}/{row[c]['above']:.3f}) {row[c]['width']:.3f}"
                 for c in detail]
        lines.append(f"| {family} | {g} | {mean} | {spread} | " + " | ".join(cells) + " |")
    summary = ["", "| candidate | min coverage | max below | max above | settings failing (cov < 0.93 or a tail > 0.04) "
               "| mean width at 0.87 / sd 0.10 / G 6 (Beta, logit-normal) |", "|---|---|---|---|---|---|"]
    for c in candidates:
        rows = [r[c] for r in results.values()]
        failing = sum(r["coverage"] < 0.93 or r["above"] > 0.04 or r["below"] > 0.04 for r in rows)
        card = [results.get((f, 6, 0.87, 0.10), {}).get(c, {}).get("width") for f in FAMILIES]
        summary.append(f"| {c} | {min(r['coverage'] for r in rows):.3f} | {max(r['below'] for r in rows):.3f} | "
                       f"{max(r['above'] for r in rows):.3f} | {failing} of {len(rows)} | "
                       + ", ".join("-" if w is None else f"{w:.3f}" for w in card) + " |")
    return "\n".join(lines + summary)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", type=int, default=4000, help="simulated datasets per setting")
    ap.add_argument("--candidates", nargs="+", default=list(CANDIDATES), choices=list(CANDIDATES))
    ap.add_argument("--holdout", action="store_true", help="the held-out settings (HOLDOUT) instead of the grid")
    ap.add_argument("--out", type=Path, default=None, help="also write the Markdown table here")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    grid = HOLDOUT if args.holdout else {"means": MEANS, "spreads": SPREADS, "scenarios": SCENARIOS, "seed": SEED}
    results = {}
    for family in FAMILIES:
        for g in grid["scenarios"]:
            for mean in grid["means"]:
                for spread in grid["spreads"]:
                    results[(family, g, mean, spread)] = setting_rows(family, mean, spread, g, args.datasets,
                                                                      args.candidates, grid["seed"])
    text = (f"coverage (share wholly below / wholly above the truth) mean width; {args.datasets} datasets per "
            f"setting, seed {grid['seed']}, {CONFIDENCE:.0%} intervals\n\n" + markdown(results, args.candidates))
    print(text)
    print(f"\n{time.perf_counter() - start:.0f} s")
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
