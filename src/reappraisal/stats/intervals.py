"""Confidence intervals for win rates, and how much clustering costs.

Units: a win rate is a mean of contest scores in [0, 1] (ties count 0.5).
Clusters are scenarios; a scenario mean pools all its contests across runs.
Every ``*_interval`` function returns ``(low, high)``; arrays broadcast, so
many datasets can be handled in one call (the last axis holds scenarios
where a function takes scenario means). Confidence is two-sided, 0.95 by
default. Non-finite inputs (NaN, ±inf) and rates outside [0, 1] are refused
with a ``ValueError``: an interval outside [0, 1] must never be produced
silently.

The headline interval is :func:`cluster_korn_graubard_interval`: its
estimand is the equally weighted mean of the scenario rates (the expected
win rate on a scenario drawn from the scenario population). It is the
Korn-Graubard interval (Clopper-Pearson at the effective number of
contests, df-adjusted for G scenarios) with that effective number at most
4 contests a scenario where the estimate lies within 0.1 of a bound, a cap
that grows with the square of the distance beyond (16 at 0.2, 36 at 0.3):
near a bound, G scenarios most often miss the population's far tail and their
spread understates the variance; far from it, the spread is all the data
need, and the cap, continuous in the data, stops binding. Chosen on a grid of 12,960 simulated
settings (win rates 0.01-0.99, G 4-12, 4-200 contests a scenario, equal and
unequal, ties 0-20 %, Beta and logit-normal scenario rates with sd up to 0.2)
and checked on 6,120 held-out ones (``benchmarks/headline_regimes.py``, the
table in ``benchmarks/README_stats.md``). The jackknife intervals it
replaced clip every rate at 0.5/n and fail near a bound with few contests.
:func:`cluster_clopper_pearson_interval` is the distribution-free bound.

:class:`Interval` is the labelled form used in reports: every interval
carries the text of the assumption it rests on (see :data:`ASSUMPTIONS`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from scipy import stats

#: The headline's stretch: the jackknife runs on sinh(λ·logit)/λ with this λ (chosen by the coverage table,
#: ``benchmarks/README_stats.md``).
HEADLINE_STRETCH = 0.5

#: Within this distance of a bound the headline's effective number of contests is at most
#: :data:`HEADLINE_CONTESTS_PER_SCENARIO_NEAR_BOUND` a scenario (see :func:`cluster_korn_graubard_interval`;
#: chosen by ``benchmarks/headline_regimes.py``).
HEADLINE_NEAR_BOUND = 0.1
#: The cap within :data:`HEADLINE_NEAR_BOUND` of a bound, in contests per scenario.
HEADLINE_CONTESTS_PER_SCENARIO_NEAR_BOUND = 4.0
#: Beyond it the cap grows as (distance / HEADLINE_NEAR_BOUND) to this power: continuous in the estimate, 4x at
#: 0.2, 16x at 0.4, so that it stops binding where the scenarios' spread is all the data need.
HEADLINE_CAP_GROWTH = 2.0

ASSUMPTIONS = {
    "cluster_korn_graubard": (
        "scenarios are independent draws: Clopper-Pearson at the effective number of contests "
        "(estimate x (1 - estimate) / cluster variance of the mean of scenario rates, at most the "
        "contests scored, and at most 4 a scenario within 0.1 of a bound, a cap that grows as the square of "
        "the distance beyond it: 16 a scenario at 0.2, 36 at 0.3), scaled by (z / t_{G-1})^2 (Korn & Graubard 1998); "
        "the headline interval; coverage and tails in simulation at win rates 0.01-0.99, G 4-12, 4-200 "
        "contests a scenario, sd up to 0.2: benchmarks/README_stats.md"
    ),
    "cluster_clopper_pearson": (
        "distribution-free: Clopper-Pearson of G x estimate successes in G trials, valid for any "
        "distribution of scenario rates in [0, 1]; wide"
    ),
    "iid_wilson": (
        "ignores clustering: Wilson score interval that treats every contest as an "
        "independent trial; too narrow when scenarios differ"
    ),
    "cluster_logit_jackknife": (
        "scenarios are independent draws: delete-one-scenario jackknife (Tukey pseudo-values) "
        "of the logit of the mean scenario rate, t with G-1 df, back-transformed; keeps the "
        "[0, 1] bound; sensitivity column: lies wholly above the truth too often when a few "
        "scenarios are far below the rest; when every scenario has the same rate, the Wilson "
        "interval of the pooled contests"
    ),
    "cluster_stretched_logit_jackknife": (
        "scenarios are independent draws: delete-one-scenario jackknife (Tukey pseudo-values) of "
        f"sinh({HEADLINE_STRETCH:g} logit) of the mean scenario rate, t with G-1 df, back-transformed; keeps the [0, 1] "
        "bound and reaches further toward 1/2 near a bound, where six scenarios most often miss the "
        "population's low tail; the headline interval; when every scenario has the same rate, the "
        "Wilson interval of the pooled contests"
    ),
    "cluster_t": (
        "scenarios are independent draws with roughly normal means: t interval on the "
        "G scenario means (runs pooled within each scenario), G-1 df; under-covers near the "
        "bounds at small G (about 0.91 at win rate 0.87, sd 0.1, G = 6)"
    ),
    "percentile_bootstrap": (
        "resamples whole scenarios with replacement (exact enumeration for G <= 8); "
        "under-covers at small G (about 0.85-0.87 at G = 6)"
    ),
    "wild_cluster_bootstrap": (
        "sensitivity check: wild cluster bootstrap-t, Webb 6-point weights on scenario "
        "residuals (unrestricted), CR1 standard error; under-covers near the bounds at small G"
    ),
    "paired_cluster_t": (
        "scenarios are independent draws with roughly normal differences: t interval on "
        "the G per-scenario differences (runs pooled), G-1 df"
    ),
}


@dataclass(frozen=True)
class Interval:
    """A labelled two-sided confidence interval for a rate in [0, 1]."""

    method: str
    estimate: float
    low: float
    high: float
    confidence: float
    assumption: str

    @classmethod
    def labelled(cls, method: str, estimate, low, high, confidence: float) -> "Interval":
        """Build an interval whose assumption text is ``ASSUMPTIONS[method]``."""
        return cls(
            method, float(estimate), float(low), float(high), float(confidence), ASSUMPTIONS[method]
        )

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    def contains(self, value: float) -> bool:
        return bool(self.low <= value <= self.high)


def _check_confidence(confidence: float) -> float:
    confidence = float(confidence)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    return confidence


def _scalar_or_array(x):
    x = np.asarray(x, dtype=float)
    return float(x) if x.ndim == 0 else x


def _require_finite(what: str, **arrays) -> None:
    for name, value in arrays.items():
        value = np.asarray(value, dtype=float)
        if np.isnan(value).any():
            raise ValueError(f"{what}: {name} must not be NaN")
        if np.isinf(value).any():
            raise ValueError(f"{what}: {name} must be finite (got inf)")


def wilson_interval(k, n, confidence: float = 0.95):
    """Wilson score interval for ``k`` successes in ``n`` trials.

    ``k`` may be fractional (ties count 0.5 win), 0 <= k <= n, n > 0; both
    broadcast. Centre (p + z²/2n)/(1 + z²/n), half-width
    z·sqrt(p(1−p)/n + z²/4n²)/(1 + z²/n) with p = k/n and z the two-sided
    normal quantile; bounds clipped to [0, 1]. Equals statsmodels'
    ``proportion_confint(k, n, method="wilson")``.

    Assumes n independent trials: with clustered contests it is too narrow.
    """
    confidence = _check_confidence(confidence)
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    _require_finite("wilson_interval", k=k, n=n)
    if (n <= 0).any():
        raise ValueError("wilson_interval: n must be positive")
    if (k < 0).any() or (k > n).any():
        raise ValueError("wilson_interval: k must lie in [0, n]")
    z = stats.norm.isf((1.0 - confidence) / 2.0)
    p = k / n
    denom = 1.0 + z**2 / n
    centre = (p + z**2 / (2.0 * n)) / denom
    half = z * np.sqrt(p * (1.0 - p) / n + z**2 / (4.0 * n**2)) / denom
    # k = 0 and k = n give bounds of exactly 0 and 1 (rounding would leave ~1e-17)
    low = np.where(k == 0, 0.0, np.clip(centre - half, 0.0, 1.0))
    high = np.where(k == n, 1.0, np.clip(centre + half, 0.0, 1.0))
    return _scalar_or_array(low), _scalar_or_array(high)


def _scenario_matrix(scenario_means, minimum: int, what: str, bounds=(0.0, 1.0)) -> np.ndarray:
    means = np.asarray(scenario_means, dtype=float)
    if means.ndim == 0:
        raise ValueError(f"{what}: expected an array of scenario means, got a scalar")
    if np.isnan(means).any():
        raise ValueError(
            f"{what}: scenario means contain NaN (a scenario whose contests are all errors "
            "has no mean; leave it out and report it)"
        )
    _require_finite(what, scenario_means=means)
    lo, hi = bounds
    if (means < lo).any() or (means > hi).any():
        raise ValueError(f"{what}: scenario means must lie in [{lo:g}, {hi:g}]")
    if means.shape[-1] < minimum:
        raise ValueError(
            f"{what} needs at least {minimum} scenarios (clusters), got G = {means.shape[-1]}"
        )
    return means


def cluster_t_interval(scenario_means, confidence: float = 0.95, *, bounds=(0.0, 1.0)):
    """t interval on the mean of G scenario means, G − 1 degrees of freedom.

    ``scenario_means`` has scenarios on the last axis (leading axes are
    independent datasets); each entry is the mean score of all contests of
    that scenario, all runs pooled. Estimate = unweighted mean of the scenario
    means; half-width = t_{G−1} · sd(means, ddof=1) / sqrt(G); bounds clipped
    to ``bounds`` ([0, 1]: a rate cannot leave it; pass (−1, 1) for a
    difference of rates). When all scenario means are equal the interval
    collapses to that value.

    Raises ``ValueError`` when G < 2 or a mean is NaN.
    """
    confidence = _check_confidence(confidence)
    means = _scenario_matrix(scenario_means, 2, "cluster_t_interval", bounds)
    g = means.shape[-1]
    centre = means.mean(axis=-1)
    se = means.std(axis=-1, ddof=1) / np.sqrt(g)
    t = stats.t.ppf(0.5 + confidence / 2.0, df=g - 1)
    lo, hi = bounds
    return _scalar_or_array(np.clip(centre - t * se, lo, hi)), _scalar_or_array(
        np.clip(centre + t * se, lo, hi)
    )


def _logit(x):
    return np.log(x) - np.log1p(-x)


def _expit(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # overflow-free logistic


def cluster_logit_jackknife_interval(scenario_means, n_contests, confidence: float = 0.95):
    """Logit-scale jackknife of the mean of G scenario rates (the headline's sensitivity column).

    ``scenario_means``: (..., G) mean score of each scenario (all runs pooled),
    in [0, 1]; ``n_contests``: scored contests behind them (scalar or one per
    dataset), used only to keep logits finite: every rate is clipped to
    [ε, 1 − ε] with ε = 0.5 / n_contests before the transform.

    With θ̂ the mean of the scenario means and θ̂₋ᵢ the mean without scenario
    i, the Tukey pseudo-values Pᵢ = G·logit(θ̂) − (G − 1)·logit(θ̂₋ᵢ) give the
    interval expit(mean P ± t_{G−1}·sd(P)/√G). The jackknife of the logit
    (a) keeps both bounds inside (0, 1), (b) widens the interval on the side
    away from the nearer bound, and (c) removes the first-order bias of
    logit(θ̂) (Jensen). When scenario rates are skewed toward the middle
    (a logit-normal spread near 0.87, a few scenarios far below the rest) it
    lies wholly above the truth more often than 2.5 % at G = 6: the headline
    is :func:`cluster_stretched_logit_jackknife_interval`.
    When all scenario means are equal (e.g. every contest lost) the pseudo-values carry
    no spread, and a jackknife interval would collapse to a point, claiming
    certainty that n contests cannot give: the interval is then the Wilson
    interval of θ̂·n in n, the within-scenario binomial uncertainty that is
    all that is left (the sensitivity intervals, cluster t and bootstraps,
    still collapse and say so by their width). The interval always contains
    θ̂: near 0 or 1, where the clip dominates the pseudo-values, a bound the
    bias correction pushed past θ̂ is moved to θ̂.

    Raises ``ValueError`` when G < 2, a mean is NaN/inf or outside [0, 1],
    or n_contests < 1.
    """
    return _jackknife_interval(scenario_means, n_contests, confidence, 0.0, "cluster_logit_jackknife_interval")


def cluster_stretched_logit_jackknife_interval(scenario_means, n_contests, confidence: float = 0.95,
                                               stretch: float = HEADLINE_STRETCH):
    """Headline interval for the mean of G scenario rates: jackknife on a stretched logit.

    As :func:`cluster_logit_jackknife_interval`, on the scale
    h(θ) = sinh(λ·logit θ)/λ (λ = ``stretch``; λ → 0 is the logit): the same
    pseudo-values, t with G − 1 df and back-transform, the same clip, Wilson
    fallback and containment of θ̂. h is odd and steeper than the logit
    toward both bounds, so near a bound the interval reaches further toward
    1/2, where a sample of six scenarios most often misses the population's
    tail (the few scenarios far below the rest); at 1/2 it is the logit
    jackknife. With λ = 0.5 coverage is >= 0.93 with each tail <= 0.04 under
    Beta and logit-normal scenario rates at win rates 0.5-0.95, sd 0.05-0.15,
    G = 6 and 12, except at mean 0.95 / sd 0.15 (coverage 0.78-0.91, which
    no interval short of a distribution-free one reaches); the table is in ``benchmarks/README_stats.md``.
    """
    return _jackknife_interval(scenario_means, n_contests, confidence, float(stretch),
                               "cluster_stretched_logit_jackknife_interval")


def _jackknife_interval(scenario_means, n_contests, confidence: float, stretch: float, what: str):
    confidence = _check_confidence(confidence)
    means = _scenario_matrix(scenario_means, 2, what)
    n = np.asarray(n_contests, dtype=float)
    _require_finite(what, n_contests=n)
    if (n < 1).any():
        raise ValueError(f"{what}: n_contests must be at least 1")
    if not np.isfinite(stretch) or stretch < 0:
        raise ValueError(f"{what}: stretch must be a finite number >= 0, got {stretch}")

    def scale(rate):
        z = _logit(np.clip(rate, eps, 1.0 - eps))
        return z if stretch == 0 else np.sinh(stretch * z) / stretch

    def unscale(value):
        return _expit(value if stretch == 0 else np.arcsinh(stretch * value) / stretch)

    g = means.shape[-1]
    eps = (0.5 / n)[..., None]
    theta = means.mean(axis=-1, keepdims=True)
    leave_one_out = (means.sum(axis=-1, keepdims=True) - means) / (g - 1)
    pseudo = g * scale(theta) - (g - 1) * scale(leave_one_out)
    centre = pseudo.mean(axis=-1)
    se = pseudo.std(axis=-1, ddof=1) / np.sqrt(g)
    t = stats.t.ppf(0.5 + confidence / 2.0, df=g - 1)
    flat = np.ptp(means, axis=-1) == 0
    theta = theta[..., 0]
    # Near 0 or 1 the leave-one-out means hit the clip and the bias correction can push the whole
    # interval past the estimate (e.g. rates [0, 0, 0, 0.04, 0, 0] gave [0.002, 0.005] around 0.007):
    # an interval always contains its own estimate, so the violated bound is moved to it.
    flat_low, flat_high = wilson_interval(theta * n, n * np.ones_like(theta), confidence)
    low = np.minimum(np.where(flat, flat_low, unscale(centre - t * se)), theta)
    high = np.maximum(np.where(flat, flat_high, unscale(centre + t * se)), theta)
    return _scalar_or_array(low), _scalar_or_array(high)


def _clopper_pearson(successes, trials, confidence: float):
    """Clopper-Pearson bounds of ``successes`` (fractional allowed) in ``trials`` (> 0, fractional allowed)."""
    alpha = 1.0 - confidence
    x, m = np.broadcast_arrays(np.asarray(successes, dtype=float), np.asarray(trials, dtype=float))
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(x > 0, stats.beta.ppf(alpha / 2, np.maximum(x, 1e-300), m - x + 1), 0.0)
        high = np.where(x < m, stats.beta.ppf(1 - alpha / 2, x + 1, np.maximum(m - x, 1e-300)), 1.0)
    return low, high


def cluster_korn_graubard_interval(scenario_means, n_contests, confidence: float = 0.95, *,
                                   near_bound: float = HEADLINE_NEAR_BOUND,
                                   contests_per_scenario_near_bound: float = HEADLINE_CONTESTS_PER_SCENARIO_NEAR_BOUND,
                                   cap_growth: float = HEADLINE_CAP_GROWTH):
    """Headline interval for the mean of G scenario rates: Korn-Graubard with a cap that relaxes away from a bound.

    ``scenario_means``: (..., G) mean score of each scenario (all runs pooled), in [0, 1];
    ``n_contests``: scored contests behind them (scalar or one per dataset).

    With θ̂ the mean of the scenario means and v = var(means, ddof=1)/G its cluster variance, the
    effective number of contests is n_eff = θ̂(1 − θ̂)/v, at most ``n_contests`` (its value when
    scenarios do not differ, or when v = 0), and at most G·c·max(1, d/δ)^k with d = min(θ̂, 1 − θ̂) the
    estimate's distance from the nearer bound, δ = ``near_bound``, c = ``contests_per_scenario_near_bound``
    and k = ``cap_growth`` (k = 0 with δ ≥ 0.5: the cap everywhere; c = inf: uncapped Korn-Graubard). It is
    shrunk for the G − 1 degrees of freedom behind v: n* = n_eff·(z/t_{G−1})². The interval is the
    Clopper-Pearson interval of θ̂·n* successes in n* trials (beta quantiles, so neither need be whole): inside
    [0, 1], asymmetric, wider toward 1/2, and strictly around θ̂ whenever 0 < θ̂ < 1 (never a point, never a
    bound at a nonzero estimate). Every piece is continuous in the scenario means, so one more win never makes
    the interval jump.

    The cap encodes what simulation shows (``benchmarks/headline_regimes.py``): near a bound a sample of G
    scenarios usually misses the scenario population's far tail, so the scenarios' spread understates the
    variance and the uncapped interval lies wholly on the bound's side of the truth too often, most of all
    with many contests a scenario. The risk fades with the distance from the bound, and so does the cap: at
    0.2 it is 16 contests a scenario, at 0.3 36, so a result far from the bound is read from its own spread
    (the model card's 0.872 over 6 x 120 contests, spread 0.775-0.958: [0.666, 0.974]).

    Raises ``ValueError`` when G < 2, a mean is NaN/inf or outside [0, 1], or n_contests < 1.
    """
    confidence = _check_confidence(confidence)
    what = "cluster_korn_graubard_interval"
    means = _scenario_matrix(scenario_means, 2, what)
    n = np.asarray(n_contests, dtype=float)
    _require_finite(what, n_contests=n)
    if (n < 1).any():
        raise ValueError(f"{what}: n_contests must be at least 1")
    g = means.shape[-1]
    theta = means.mean(axis=-1)
    variance = means.var(axis=-1, ddof=1) / g
    spread = variance > 0
    n_eff = np.where(spread, theta * (1.0 - theta) / np.where(spread, variance, 1.0), np.inf)
    n_eff = np.minimum(n_eff, n)
    distance = np.minimum(theta, 1.0 - theta)
    growth = np.maximum(1.0, distance / near_bound) ** cap_growth if near_bound > 0 else np.inf
    n_eff = np.minimum(n_eff, contests_per_scenario_near_bound * g * growth)
    n_star = n_eff * (stats.norm.isf((1.0 - confidence) / 2.0) / stats.t.isf((1.0 - confidence) / 2.0, df=g - 1)) ** 2
    low, high = _clopper_pearson(theta * n_star, n_star, confidence)
    return _scalar_or_array(low), _scalar_or_array(high)


def cluster_clopper_pearson_interval(scenario_means, confidence: float = 0.95):
    """Distribution-free interval for the mean of G scenario rates: Clopper-Pearson of G·θ̂ in G.

    Valid (conservative) for any distribution of scenario rates on [0, 1]: a rate's distribution with
    a given mean is most spread when it is two-valued {0, 1}, where the sum of G rates is binomial.
    Wide (about 0.46 above an estimate of 0 at G = 6): the interval to fall back on where no model of
    the scenario rates can be trusted.
    """
    confidence = _check_confidence(confidence)
    means = _scenario_matrix(scenario_means, 2, "cluster_clopper_pearson_interval")
    g = means.shape[-1]
    low, high = _clopper_pearson(means.sum(axis=-1), float(g), confidence)
    return _scalar_or_array(low), _scalar_or_array(high)


@dataclass(frozen=True)
class DesignEffect:
    """How much scenario clustering inflates the variance of the win rate.

    Both variances are of the same estimator, the equally weighted mean of
    the G scenario means θ̂ = (1/G) Σ_g m_g (the headline estimand):

    - cluster variance: var(m_g, ddof=1) / G (scenarios as independent draws);
    - iid variance: s² · Σ_g (1/n_g) / G², what θ̂'s variance would be if every
      contest were an independent trial with the pooled score variance s²
      (ddof=1) — with equal scenario sizes this is s² / n.

    ``design_effect`` = cluster ÷ iid variance. ``effective_n`` = s² ÷ cluster
    variance: the number of independent contests whose plain mean would be
    as precise as θ̂ (= n ÷ design_effect when scenario sizes are equal).
    Both are NaN when contest scores have no variance. A noisy estimate at
    small G; it can fall below 1 by chance.
    """

    design_effect: float
    effective_n: float
    n: int
    n_scenarios: int

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def design_effect(scores, scenarios) -> DesignEffect:
    """Design effect and effective n of scored contests clustered by scenario.

    ``scores``: contest scores (0, 0.5, 1; no NaN — drop error contests
    first); ``scenarios``: the scenario label of each contest. Scenario means
    pool every contest of a scenario. Needs at least 2 scenarios. See
    :class:`DesignEffect` for the definitions (one estimator throughout, so
    a tiny scenario inflates numerator and denominator alike).
    """
    scores = np.asarray(scores, dtype=float)
    labels = np.asarray(scenarios)
    if scores.ndim != 1 or labels.shape != scores.shape:
        raise ValueError("design_effect: scores and scenarios must be 1-d and of equal length")
    if scores.size == 0:
        raise ValueError("design_effect: no scored contests")
    if np.isnan(scores).any():
        raise ValueError("design_effect: scores contain NaN; drop error contests first")
    _require_finite("design_effect", scores=scores)
    if (scores < 0).any() or (scores > 1).any():
        raise ValueError("design_effect: contest scores must lie in [0, 1]")
    _, codes = np.unique(labels, return_inverse=True)
    sizes = np.bincount(codes)
    means = np.bincount(codes, weights=scores) / sizes
    g, n = sizes.size, scores.size
    _scenario_matrix(means, 2, "design_effect")
    score_var = scores.var(ddof=1) if n > 1 else np.nan
    var_iid = score_var * (1.0 / sizes).sum() / g**2
    var_cluster = means.var(ddof=1) / g
    if not var_iid > 0:
        return DesignEffect(np.nan, np.nan, n, g)
    deff = var_cluster / var_iid
    effective_n = score_var / var_cluster if var_cluster > 0 else np.inf
    return DesignEffect(float(deff), float(effective_n), n, g)
