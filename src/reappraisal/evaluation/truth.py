"""The truth of the demo's estimands: the panel's expected verdict between two answer distributions. Pure.

On the demo, the held-out judge is a panel of simulated raters reading each
answer's gold quality (:mod:`reappraisal.data.demo_gold`), so the expected
score of a contest between two texts is known in closed form: with ``n``
raters, each of a rater profile k drawn with its share π_k and reading the
answers' qualities for that profile, each preferring A with probability
``p = Σ_k π_k·Φ(m·a·(q_A,k − q_B,k) / (√2·σ))``,
a contest order scores 1 when a majority prefers A, 0.5 on equal votes and 0
otherwise, and the two orders are read by independent panels alike, so a
contest's expected score is :func:`contest_score` of the two qualities.

The estimand of a win-rate row is the equally weighted mean over scenarios of
the expected contest score of a fresh system answer against the opponent
(:mod:`reappraisal.stats.headline`). Its truth here is conditional on these
scenarios (the headline interval targets a population of scenarios), and it
is estimated by Monte Carlo from many fresh answers per scenario
(:func:`pair_truth`): for a fixed opponent (answers in the data) the
expectation over the opponent's answers is exact and the standard error comes
from the system's draws; for a generated opponent (another system) both sides
are draws, and the standard error is the two-sample U-statistic's.
:func:`combined_truth` is the truth of a weighted sum of systems' win rates
against one opponent (a difference, a pooled arm); against a generated
opponent every system reads the same opponent draws, and its standard error
counts those shared draws once.

:func:`best_of_truth` is the truth of a best-of-``k`` system that picks by gold
(an oracle that reads the truth): the maximum of ``k`` draws from the
system's empirical gold distribution, whose distribution is exact given the
draws; its standard error is a bootstrap over the draws.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
from scipy.special import ndtr
from scipy.stats import binom


@dataclass(frozen=True)
class PanelModel:
    """How the panel reads a contest: ``raters`` raters, each with ``slope`` = m·a / (√2·σ) per unit of gold gap,
    each of a rater profile drawn with probability ``shares`` (one profile: every rater reads alike)."""

    raters: int
    slope: float
    shares: tuple[float, ...] = (1.0,)

    @classmethod
    def from_rating_model(cls, raters: int, multiplier: float, loading: float, reading_sd: float,
                          shares: Sequence[float] = (1.0,)) -> "PanelModel":
        return cls(raters=int(raters), slope=multiplier * loading / (math.sqrt(2.0) * reading_sd),
                   shares=tuple(float(x) for x in shares))


def profile_array(q) -> np.ndarray:
    """Qualities with a trailing profile axis: a number or a 1-D array of answers gets one (read alike by every
    profile); a 2-D array is (answers, profiles) already."""
    q = np.asarray(q, dtype=float)
    return q[..., None] if q.ndim < 2 else q


def gold_of(q: np.ndarray, panel: PanelModel) -> np.ndarray:
    """The share-weighted mean over the profile axis (the world's gold) of :func:`profile_array` qualities."""
    q = profile_array(q)
    return q[..., 0] if q.shape[-1] == 1 else q @ np.asarray(panel.shares)


def contest_score(q_a, q_b, panel: PanelModel) -> np.ndarray:
    """Expected score of A against B (majority 1, equal votes 0.5), elementwise over broadcast arrays.

    ``q_a``, ``q_b``: numbers, or arrays whose last axis is the panel's profiles (length ``len(shares)``, or 1:
    read alike by every profile). A rater prefers A with probability Σ share·Φ(slope·(q_A − q_B)) over the
    profiles; raters are independent.
    """
    d = np.asarray(q_a, dtype=float) - np.asarray(q_b, dtype=float)
    if d.ndim == 0:
        d = d[None]
    p = (ndtr(panel.slope * d) * np.asarray(panel.shares)).sum(axis=-1)
    n = panel.raters
    wins = binom.sf(n // 2, n, p)  # P(votes for A > n/2)
    ties = binom.pmf(n // 2, n, p) if n % 2 == 0 else 0.0
    out = wins + 0.5 * ties
    return out if np.ndim(q_a) or np.ndim(q_b) else float(np.squeeze(out))


@dataclass(frozen=True)
class Truth:
    """A truth and its Monte Carlo standard error, with the per-scenario truths it averages."""

    value: float
    se: float
    per_scenario: Mapping[str, float]


@dataclass(frozen=True)
class ContestMeans:
    """Per scenario, a system's expected contest score against an opponent, as the U-statistic needs it:
    ``rows[s]`` the mean over the opponent's answers of each system answer's score, ``columns[s]`` the mean
    over the system's answers of each opponent answer's score."""

    rows: Mapping[str, np.ndarray]
    columns: Mapping[str, np.ndarray]


def contest_means(system: Mapping[str, np.ndarray], opponent: Mapping[str, np.ndarray],
                  panel: PanelModel) -> ContestMeans:
    """Every system answer against every opponent answer on the scenarios both sides answer."""
    scenarios = sorted(set(system) & set(opponent))
    if not scenarios:
        raise ValueError("no scenario is answered by both sides")
    rows, columns = {}, {}
    for s in scenarios:
        x, y = profile_array(system[s]), profile_array(opponent[s])
        scores = contest_score(x[:, None, :], y[None, :, :], panel)
        rows[s], columns[s] = scores.mean(axis=1), scores.mean(axis=0)
    return ContestMeans(rows, columns)


def _mean_variance(values: np.ndarray) -> float:
    return float(values.var(ddof=1) / len(values)) if len(values) > 1 else 0.0


def pair_truth(system: Mapping[str, np.ndarray], opponent: Mapping[str, np.ndarray], panel: PanelModel, *,
               opponent_is_draw: bool) -> Truth:
    """Mean over the scenarios both sides answer of E[contest_score(system answer, opponent answer)].

    ``system`` / ``opponent``: scenario id -> the gold qualities of the answers.
    ``opponent_is_draw``: the opponent's answers are fresh draws too (another
    system), so their sampling error enters the standard error.
    """
    return truth_of(contest_means(system, opponent, panel), opponent_is_draw=opponent_is_draw)


def truth_of(means: ContestMeans, *, opponent_is_draw: bool) -> Truth:
    """:func:`pair_truth` from the contest means."""
    return combined_truth([(1.0, means)], opponent_is_draw=opponent_is_draw)


def combined_truth(terms: Sequence[tuple[float, ContestMeans]], *, opponent_is_draw: bool) -> Truth:
    """Truth of Σ w·(a system's win rate) against one opponent whose answers every system reads (a difference:
    weights 1, −1; a pooled arm: 1/M per seed), on the scenarios every system answers.

    The systems' draws are independent, so their terms add with weight w²; the opponent's draws, when they are
    draws, are shared, so their term is the variance of Σ w·(column means): win rates that move together with
    the opponent's luck cancel it in a difference and keep it in a mean, where treating the systems as
    independent would overstate the first error and understate the second.
    """
    merged: dict[int, list] = {}  # a system named twice (a pooled arm against one of its seeds) is one term
    for w, m in terms:
        merged.setdefault(id(m), [0.0, m])[0] += w
    terms = [(w, m) for w, m in merged.values() if w != 0.0]
    if not terms:
        raise ValueError("the weights cancel: nothing to estimate")
    scenarios = sorted(set.intersection(*(set(m.rows) for _, m in terms)))
    if not scenarios:
        raise ValueError("no scenario is answered by every system")
    values, variances = {}, []
    for s in scenarios:
        values[s] = float(sum(w * m.rows[s].mean() for w, m in terms))
        var = sum(w * w * _mean_variance(m.rows[s]) for w, m in terms)
        if opponent_is_draw:
            var += _mean_variance(sum(w * m.columns[s] for w, m in terms))
        variances.append(var)
    return Truth(value=float(np.mean(list(values.values()))),
                 se=float(math.sqrt(sum(variances)) / len(scenarios)), per_scenario=values)


def max_of_k_weights(n: int, k: int) -> np.ndarray:
    """P(the maximum of ``k`` draws with replacement from ``n`` sorted values is the i-th): (i/n)^k − ((i−1)/n)^k."""
    i = np.arange(1, n + 1, dtype=float)
    return (i / n) ** k - ((i - 1) / n) ** k


def best_of_truth(system: Mapping[str, np.ndarray], opponent: Mapping[str, np.ndarray], panel: PanelModel, *,
                  k: int, n_bootstrap: int = 200, seed: int = 0) -> Truth:
    """Truth of best-of-``k`` by gold from ``system``'s draws against a fixed ``opponent`` (see module doc)."""
    scenarios = sorted(set(system) & set(opponent))
    if not scenarios:
        raise ValueError("no scenario is answered by both sides")
    rng = np.random.default_rng(seed)

    def value(draws: Mapping[str, np.ndarray]) -> dict[str, float]:
        out = {}
        for s in scenarios:
            x = profile_array(draws[s])
            x = x[np.argsort(gold_of(x, panel), kind="stable")]  # ascending gold: the oracle's pick is the top
            against = contest_score(x[:, None, :], profile_array(opponent[s])[None, :, :], panel).mean(axis=1)
            out[s] = float(max_of_k_weights(len(x), k) @ against)
        return out

    point = value(system)
    boots = [np.mean(list(value({s: profile_array(system[s])[rng.integers(0, len(system[s]), len(system[s]))]
                                 for s in scenarios}).values()))
             for _ in range(n_bootstrap)]
    return Truth(value=float(np.mean(list(point.values()))), se=float(np.std(boots, ddof=1)), per_scenario=point)
