"""Confidence intervals for win rates, and how much clustering costs.

Units: a win rate is a mean of contest scores in [0, 1] (ties count 0.5).
Clusters are scenarios; a scenario mean pools all its contests across runs.
Every ``*_interval`` function returns ``(low, high)``; arrays broadcast, so
many datasets can be handled in one call (the last axis holds scenarios
where a function takes scenario means). Confidence is two-sided, 0.95 by
default.

:class:`Interval` is the labelled form used in reports: every interval
carries the text of the assumption it rests on (see :data:`ASSUMPTIONS`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from scipy import stats

ASSUMPTIONS = {
    "iid_wilson": (
        "ignores clustering: Wilson score interval that treats every contest as an "
        "independent trial; too narrow when scenarios differ"
    ),
    "cluster_t": (
        "scenarios are independent draws with roughly normal means: t interval on the "
        "G scenario means (runs pooled within each scenario), G-1 df; the honest headline"
    ),
    "percentile_bootstrap": (
        "resamples whole scenarios with replacement (exact enumeration for G <= 8); "
        "under-covers at small G (about 0.85-0.87 at G = 6)"
    ),
    "wild_cluster_bootstrap": (
        "sensitivity check: wild cluster bootstrap-t, Webb 6-point weights on scenario "
        "residual sums (unrestricted), CR1 standard error"
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
    if np.isnan(k).any() or np.isnan(n).any():
        raise ValueError("wilson_interval: k and n must not be NaN")
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


def _scenario_matrix(scenario_means, minimum: int, what: str) -> np.ndarray:
    means = np.asarray(scenario_means, dtype=float)
    if means.ndim == 0:
        raise ValueError(f"{what}: expected an array of scenario means, got a scalar")
    if np.isnan(means).any():
        raise ValueError(
            f"{what}: scenario means contain NaN (a scenario whose contests are all errors "
            "has no mean; leave it out and report it)"
        )
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
    means = _scenario_matrix(scenario_means, 2, "cluster_t_interval")
    g = means.shape[-1]
    centre = means.mean(axis=-1)
    se = means.std(axis=-1, ddof=1) / np.sqrt(g)
    t = stats.t.ppf(0.5 + confidence / 2.0, df=g - 1)
    lo, hi = bounds
    return _scalar_or_array(np.clip(centre - t * se, lo, hi)), _scalar_or_array(
        np.clip(centre + t * se, lo, hi)
    )


@dataclass(frozen=True)
class DesignEffect:
    """How much scenario clustering inflates the variance of the win rate.

    ``design_effect`` = (cluster variance of the mean: var of scenario means /
    G) ÷ (iid variance: var of contest scores / n). ``effective_n`` = n ÷
    design_effect: the number of independent contests the data are worth.
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
    pool every contest of a scenario. Needs at least 2 scenarios.
    """
    scores = np.asarray(scores, dtype=float)
    labels = np.asarray(scenarios)
    if scores.ndim != 1 or labels.shape != scores.shape:
        raise ValueError("design_effect: scores and scenarios must be 1-d and of equal length")
    if scores.size == 0:
        raise ValueError("design_effect: no scored contests")
    if np.isnan(scores).any():
        raise ValueError("design_effect: scores contain NaN; drop error contests first")
    _, codes = np.unique(labels, return_inverse=True)
    sizes = np.bincount(codes)
    means = np.bincount(codes, weights=scores) / sizes
    g, n = sizes.size, scores.size
    _scenario_matrix(means, 2, "design_effect")
    var_iid = scores.var(ddof=1) / n if n > 1 else np.nan
    var_cluster = means.var(ddof=1) / g
    if not var_iid > 0:
        return DesignEffect(np.nan, np.nan, n, g)
    deff = var_cluster / var_iid
    effective_n = n / deff if deff > 0 else np.inf
    return DesignEffect(float(deff), float(effective_n), n, g)
