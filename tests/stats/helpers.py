"""Builders of small judgments/contests tables and simulated clustered data."""

from __future__ import annotations

import numpy as np
import pandas as pd

# verdict pair (AB, BA) that yields each model score; 0.5 alternates split / tie
_VERDICTS_FOR_SCORE = {1.0: ("A", "B"), 0.0: ("B", "A")}
_HALF_VERDICTS = [("A", "A"), ("tie", "tie"), ("B", "B"), ("tie", "A")]


def judgments_table(rows, *, judge="judge-1", model="policy", opponent="gpt4") -> pd.DataFrame:
    """Long judgments from (run, contest_id, vignette_id, verdict_ab, verdict_ba) tuples."""
    records = []
    for run, contest_id, vignette_id, verdict_ab, verdict_ba in rows:
        for order, verdict in (("AB", verdict_ab), ("BA", verdict_ba)):
            records.append(
                {
                    "run": run,
                    "judge": judge,
                    "contest_id": contest_id,
                    "vignette_id": vignette_id,
                    "model": model,
                    "opponent": opponent,
                    "order": order,
                    "verdict": verdict,
                }
            )
    return pd.DataFrame.from_records(records)


def judgments_from_scores(scores: pd.DataFrame, **names) -> pd.DataFrame:
    """Judgments whose contests score as ``scores`` (columns run, vignette_id,
    score; NaN = an error verdict). Half scores cycle through split and tie
    verdict patterns."""
    rows = []
    for i, (run, vignette, score) in enumerate(scores[["run", "vignette_id", "score"]].itertuples(index=False)):
        if np.isnan(score):
            ab, ba = "error", "B"
        elif score == 0.5:
            ab, ba = _HALF_VERDICTS[i % len(_HALF_VERDICTS)]
        else:
            ab, ba = _VERDICTS_FOR_SCORE[float(score)]
        rows.append((run, f"c{i:05d}", vignette, ab, ba))
    return judgments_table(rows, **names)


#: The families of true scenario rates the coverage simulations draw from.
FAMILIES = ("beta", "logit_normal")
_HERMITE = np.polynomial.hermite_e.hermegauss(120)  # nodes and weights for E[f(Z)], Z ~ N(0, 1)


def logit_normal_moments(mu: float, sigma: float) -> tuple[float, float]:
    """Mean and sd of expit(mu + sigma Z), Z ~ N(0, 1) (Gauss-Hermite quadrature)."""
    nodes, weights = _HERMITE
    p = 1.0 / (1.0 + np.exp(-(mu + sigma * nodes)))
    w = weights / weights.sum()
    mean = float(w @ p)
    return mean, float(np.sqrt(max(w @ p**2 - mean**2, 0.0)))


def logit_normal_parameters(mean: float, spread: float) -> tuple[float, float]:
    """(mu, sigma) of the logit-normal whose mean and sd on the probability scale are ``mean`` and ``spread``."""
    from scipy.optimize import brentq

    def mu_for(sigma):
        return brentq(lambda mu: logit_normal_moments(mu, sigma)[0] - mean, -200, 200, xtol=1e-13)

    sigma = brentq(lambda s: logit_normal_moments(mu_for(s), s)[1] - spread, 1e-6, 12, xtol=1e-13)
    return mu_for(sigma), sigma


def scenario_rates(rng, n_datasets, n_scenarios, mean, spread, family="beta"):
    """True win rates of scenarios with the given mean and sd ``spread`` on the probability scale (all equal to
    ``mean`` when spread is 0): ``beta`` (skewed toward the nearer bound's far side only mildly) or
    ``logit_normal`` (expit of a normal: near a high mean, a few scenarios far below the rest)."""
    if spread == 0:
        return np.full((n_datasets, n_scenarios), float(mean))
    if family == "logit_normal":
        mu, sigma = logit_normal_parameters(mean, spread)
        return 1.0 / (1.0 + np.exp(-(mu + sigma * rng.standard_normal((n_datasets, n_scenarios)))))
    if family != "beta":
        raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
    kappa = mean * (1 - mean) / spread**2 - 1
    return rng.beta(mean * kappa, (1 - mean) * kappa, size=(n_datasets, n_scenarios))


def simulate_clustered(
    rng, n_datasets, *, n_scenarios=6, n_runs=3, per_cell=40, mean=0.75, spread=0.1, tie_share=0.3, family="beta"
):
    """Simulated (sums, sizes) of contests with ties, scenario-clustered.

    Each dataset: G scenarios with true rates p_g (mean ``mean``, sd
    ``spread``, drawn from ``family``: :func:`scenario_rates`); in each of ``n_runs`` runs each scenario gets ``per_cell``
    contests scored 1 / 0.5 / 0 with P(0.5) = tie_share·2·min(p, 1−p) and
    E[score] = p. Runs are pooled inside scenarios. Returns sums and sizes of
    shape (n_datasets, G).
    """
    p = scenario_rates(rng, n_datasets, n_scenarios, mean, spread, family)
    tie = tie_share * 2 * np.minimum(p, 1 - p)
    probs = np.clip(np.stack([p - tie / 2, tie, 1 - p - tie / 2], axis=-1), 0.0, 1.0)
    probs = np.broadcast_to(probs[:, :, None, :], (n_datasets, n_scenarios, n_runs, 3))
    counts = rng.multinomial(per_cell, probs).sum(axis=2)
    sums = counts[..., 0] + 0.5 * counts[..., 1]
    sizes = np.full(sums.shape, float(n_runs * per_cell))
    return sums, sizes


def simulate_regime(rng, n_datasets, *, n_scenarios, mean, spread, family="beta", per_scenario=40, unequal=False,
                    tie_share=0.0):
    """Simulated scenario means and scored-contest totals over the whole regime the pipeline produces.

    G scenarios with true rates from :func:`scenario_rates`; scenario g gets ``per_scenario`` contests, or, when
    ``unequal``, round(per_scenario x 0.4 ... 1.6) spread evenly across scenarios (at least 2). A contest scores
    0.5 with probability min(tie_share, 2·min(p, 1 − p)), else 1 or 0, with E[score] = p. Returns (means, n):
    (n_datasets, G) scenario means and the (n_datasets,) total contests.
    """
    p = scenario_rates(rng, n_datasets, n_scenarios, mean, spread, family)
    tie = np.minimum(tie_share, 2 * np.minimum(p, 1 - p))
    probs = np.clip(np.stack([p - tie / 2, tie, 1 - p - tie / 2], axis=-1), 0.0, 1.0)
    probs /= probs.sum(axis=-1, keepdims=True)
    if unequal:
        sizes = np.maximum(2, np.round(per_scenario * np.linspace(0.4, 1.6, n_scenarios))).astype(int)
    else:
        sizes = np.full(n_scenarios, per_scenario)
    sizes = np.broadcast_to(sizes, (n_datasets, n_scenarios))
    counts = rng.multinomial(sizes, probs)
    means = (counts[..., 0] + 0.5 * counts[..., 1]) / sizes
    return means, sizes.sum(axis=1).astype(float)
