"""Simulated scenario win rates and contests: the worlds the intervals' coverage and the rules' power are measured on.

Pure numpy. Scenario rates come from a family with a given mean and sd on the probability scale (Beta, or
logit-normal: near a high mean, a few scenarios far below the rest); each scenario's contests score 1, 0.5 (a
tie) or 0 with expectation its rate; runs are pooled inside a scenario, so a scenario's contests are its runs'
answers added up (two orders of one contest are one contest).
"""

from __future__ import annotations

import functools

import numpy as np

#: The families of true scenario rates.
FAMILIES = ("beta", "logit_normal")
_HERMITE = np.polynomial.hermite_e.hermegauss(120)  # nodes and weights for E[f(Z)], Z ~ N(0, 1)


def logit_normal_moments(mu: float, sigma: float) -> tuple[float, float]:
    """Mean and sd of expit(mu + sigma Z), Z ~ N(0, 1) (Gauss-Hermite quadrature)."""
    nodes, weights = _HERMITE
    p = 1.0 / (1.0 + np.exp(-(mu + sigma * nodes)))
    w = weights / weights.sum()
    mean = float(w @ p)
    return mean, float(np.sqrt(max(w @ p**2 - mean**2, 0.0)))


@functools.lru_cache(maxsize=4096)
def logit_normal_parameters(mean: float, spread: float) -> tuple[float, float]:
    """(mu, sigma) of the logit-normal whose mean and sd on the probability scale are ``mean`` and ``spread``."""
    from scipy.optimize import brentq

    def mu_for(sigma):
        return brentq(lambda mu: logit_normal_moments(mu, sigma)[0] - mean, -200, 200, xtol=1e-13)

    sigma = brentq(lambda s: logit_normal_moments(mu_for(s), s)[1] - spread, 1e-6, 12, xtol=1e-13)
    return mu_for(sigma), sigma


def largest_spread(mean: float, share: float = 0.95) -> float:
    """``share`` of the largest sd a rate in [0, 1] with this mean can have (sqrt(mean (1 - mean)))."""
    return share * float(np.sqrt(mean * (1.0 - mean)))


def scenario_rates(rng, n_datasets, n_scenarios, mean, spread, family="beta"):
    """True win rates of scenarios with the given mean and sd ``spread`` on the probability scale (all equal to
    ``mean`` when spread is 0), shape (n_datasets, n_scenarios): ``beta`` or ``logit_normal`` (expit of a
    normal: near a high mean, a few scenarios far below the rest)."""
    if spread == 0:
        return np.full((n_datasets, n_scenarios), float(mean))
    if family == "logit_normal":
        mu, sigma = logit_normal_parameters(float(mean), float(spread))
        return 1.0 / (1.0 + np.exp(-(mu + sigma * rng.standard_normal((n_datasets, n_scenarios)))))
    if family != "beta":
        raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
    kappa = mean * (1 - mean) / spread**2 - 1
    return rng.beta(mean * kappa, (1 - mean) * kappa, size=(n_datasets, n_scenarios))


def scenario_means_from_rates(rng, rates, sizes, tie_share=0.0):
    """Observed scenario means of contests drawn at ``rates`` (..., G) with ``sizes`` contests each (broadcast): a
    contest scores 0.5 with probability min(tie_share, 2 min(p, 1 - p)), else 1 or 0, with E[score] = p."""
    p = np.asarray(rates, dtype=float)
    tie = np.minimum(tie_share, 2 * np.minimum(p, 1 - p))
    probs = np.clip(np.stack([p - tie / 2, tie, 1 - p - tie / 2], axis=-1), 0.0, 1.0)
    probs /= probs.sum(axis=-1, keepdims=True)
    sizes = np.broadcast_to(np.asarray(sizes), p.shape)
    counts = rng.multinomial(sizes, probs)
    return (counts[..., 0] + 0.5 * counts[..., 1]) / sizes
