"""Cluster bootstraps over scenarios, vectorized (no Python loop over replicates).

Input everywhere: ``cluster_sums`` (sum of contest scores per scenario,
i.e. fractional wins) and ``cluster_sizes`` (scored contests per scenario,
> 0), scenarios on the last axis; leading axes are independent datasets and
are handled in one call. The statistic is the ratio Σ sums / Σ sizes: the
pooled win rate, or — with ``cluster_sums`` = the scenario means and
``cluster_sizes`` = 1 — the equally weighted mean of scenario rates (what the
headline row uses, so every interval in it has one estimand). Sums must lie in
[0, size] and be finite; anything else is refused.

Percentile cluster bootstrap. A replicate draws G scenarios with
replacement; it is fully described by the count vector c (how often each
scenario was drawn, c ~ Multinomial(G, 1/G)), and its statistic is
(c · sums) / (c · sizes). B replicates are a (B, G) count matrix C and
``(C @ sums) / (C @ sizes)``. For G <= 8 all C(2G−1, G) distinct count
vectors (462 at G = 6) are enumerated with their multinomial probabilities
G! / (Π c_g! · G^G), which gives the exact bootstrap distribution instead of a
Monte Carlo approximation. Quantiles are inverted-CDF (weighted) quantiles.
The percentile interval under-covers at small G (about 0.85–0.87 at G = 6):
label it so.

Wild cluster bootstrap (sensitivity check). Model: score = θ + u, residuals
summed per scenario e_g = sums_g − sizes_g·θ̂. A replicate multiplies every
contest residual of scenario g by one weight w_g drawn from Webb's 6-point
distribution {±sqrt(1/2), ±1, ±sqrt(3/2)} (probability 1/6 each), so
θ* − θ̂ = Σ w_g e_g / N. Statistic: the studentized t* = (θ* − θ̂)/se*, with
se* the CR1 cluster-robust standard error
sqrt(G/(G−1) · Σ_g e*_g²) / N recomputed from the replicate's own residuals.
The interval (unrestricted residuals, bootstrap-t) is
[θ̂ − q_{1−α/2}(t*)·se, θ̂ − q_{α/2}(t*)·se]. The test of H0: θ = θ0 uses
restricted residuals (computed under θ0) and p = P(|t*| >= |t|). When
6^G <= the number of draws asked for, all 6^G weight vectors are enumerated
exactly.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np
from scipy.special import gammaln

MAX_EXACT_SCENARIOS = 8

WEBB_WEIGHTS = np.array(
    [-np.sqrt(1.5), -1.0, -np.sqrt(0.5), np.sqrt(0.5), 1.0, np.sqrt(1.5)]
)

_CHUNK_ELEMENTS = 4_000_000  # bounds memory of one (draws, G) block


def _check_confidence(confidence: float) -> float:
    confidence = float(confidence)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence}")
    return confidence


def _check_clusters(cluster_sums, cluster_sizes, what: str) -> tuple[np.ndarray, np.ndarray]:
    sums = np.asarray(cluster_sums, dtype=float)
    sizes = np.asarray(cluster_sizes, dtype=float)
    if sums.ndim == 0 or sizes.ndim == 0:
        raise ValueError(f"{what}: expected arrays with one entry per scenario")
    try:
        sums, sizes = np.broadcast_arrays(sums, sizes)
    except ValueError as exc:
        raise ValueError(f"{what}: cluster_sums and cluster_sizes do not match in shape") from exc
    if np.isnan(sums).any() or np.isnan(sizes).any():
        raise ValueError(f"{what}: cluster sums/sizes contain NaN")
    if np.isinf(sums).any() or np.isinf(sizes).any():
        raise ValueError(f"{what}: cluster sums/sizes must be finite (got inf)")
    if (sizes <= 0).any():
        raise ValueError(
            f"{what}: every scenario needs at least one scored contest (size > 0); "
            "leave out scenarios whose contests are all errors and report them"
        )
    if (sums < 0).any():
        raise ValueError(f"{what}: cluster sums (fractional wins) must not be negative")
    if (sums > sizes * (1.0 + 1e-12)).any():
        raise ValueError(
            f"{what}: a cluster sum exceeds its size (more wins than scored contests); "
            "sums must lie in [0, size]"
        )
    if sums.shape[-1] < 2:
        raise ValueError(f"{what} needs at least 2 scenarios (clusters), got G = {sums.shape[-1]}")
    return sums, sizes


def _rng(seed) -> np.random.Generator:
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def _scalar_or_array(x):
    x = np.asarray(x, dtype=float)
    return float(x) if x.ndim == 0 else x


def weighted_quantile(values, weights, probs):
    """Inverted-CDF quantiles of a discrete distribution along the last axis.

    ``values``: (..., M) atoms; ``weights``: (M,) or (..., M), non-negative,
    summing to 1 along the last axis; ``probs``: sequence of probabilities.
    For each p returns the smallest atom v with P(X <= v) >= p. Output has
    shape (len(probs), ...). With equal weights 1/M this is
    ``np.quantile(values, p, method="inverted_cdf")``.
    """
    values = np.asarray(values, dtype=float)
    weights = np.broadcast_to(np.asarray(weights, dtype=float), values.shape)
    order = np.argsort(values, axis=-1, kind="stable")
    sorted_values = np.take_along_axis(values, order, axis=-1)
    cumulative = np.cumsum(np.take_along_axis(weights, order, axis=-1), axis=-1)
    total = cumulative[..., -1:]
    out = []
    for p in np.atleast_1d(probs):
        # relative tolerance so an exact p (e.g. 0.5 of 462 equal atoms) is not missed by rounding
        reached = cumulative >= (p - 1e-12) * total
        index = reached.argmax(axis=-1)
        out.append(np.take_along_axis(sorted_values, index[..., None], axis=-1)[..., 0])
    return np.stack(out)


# ---------------------------------------------------------------- percentile


@functools.lru_cache(maxsize=MAX_EXACT_SCENARIOS + 1)
def exact_resample_counts(n_scenarios: int) -> tuple[np.ndarray, np.ndarray]:
    """Every distinct cluster resample of G scenarios and its probability.

    Returns ``(counts, probs)``: counts is (C(2G−1, G), G) — each row how
    often each scenario is drawn, rows summing to G — and probs the
    multinomial probabilities G! / (Π c_g! · G^G), summing to 1. Read-only.
    """
    g = int(n_scenarios)
    if not 1 <= g <= MAX_EXACT_SCENARIOS:
        raise ValueError(f"exact enumeration is limited to G <= {MAX_EXACT_SCENARIOS}, got G = {g}")
    # stars and bars: choose the positions of G-1 bars among 2G-1 slots
    bars = np.array(list(itertools.combinations(range(2 * g - 1), g - 1)), dtype=int)
    bars = bars.reshape(math.comb(2 * g - 1, g - 1), g - 1)
    edges = np.concatenate(
        [np.full((len(bars), 1), -1), bars, np.full((len(bars), 1), 2 * g - 1)], axis=1
    )
    counts = (np.diff(edges, axis=1) - 1).astype(float)
    log_prob = gammaln(g + 1) - gammaln(counts + 1).sum(axis=1) - g * np.log(g)
    probs = np.exp(log_prob)
    probs /= probs.sum()
    counts.setflags(write=False)
    probs.setflags(write=False)
    return counts, probs


def exact_cluster_bootstrap(cluster_sums, cluster_sizes) -> tuple[np.ndarray, np.ndarray]:
    """Exact percentile-bootstrap distribution of the pooled rate (G <= 8).

    Returns ``(values, probs)``: values (..., M) is the pooled rate of every
    distinct resample, probs (M,) its probability.
    """
    sums, sizes = _check_clusters(cluster_sums, cluster_sizes, "exact_cluster_bootstrap")
    counts, probs = exact_resample_counts(sums.shape[-1])
    return (sums @ counts.T) / (sizes @ counts.T), probs


def cluster_bootstrap_draws(
    cluster_sums, cluster_sizes, n_draws: int = 100_000, *, seed=0
) -> np.ndarray:
    """Monte Carlo percentile-bootstrap replicates of the pooled rate.

    Draws a (B, G) matrix C of Multinomial(G, 1/G) counts (in blocks that
    bound memory) and returns ``(C @ sums) / (C @ sizes)`` with shape
    (..., B). ``seed``: int, None or a ``numpy.random.Generator``.
    """
    sums, sizes = _check_clusters(cluster_sums, cluster_sizes, "cluster_bootstrap_draws")
    if int(n_draws) < 1:
        raise ValueError("cluster_bootstrap_draws: n_draws must be positive")
    n_draws = int(n_draws)
    rng = _rng(seed)
    g = sums.shape[-1]
    uniform = np.full(g, 1.0 / g)
    block = max(1, _CHUNK_ELEMENTS // g)
    pieces = []
    for start in range(0, n_draws, block):  # loops over memory blocks, not replicates
        counts = rng.multinomial(g, uniform, size=min(block, n_draws - start)).astype(float)
        pieces.append((sums @ counts.T) / (sizes @ counts.T))
    return np.concatenate(pieces, axis=-1)


def percentile_cluster_bootstrap_interval(
    cluster_sums,
    cluster_sizes,
    confidence: float = 0.95,
    *,
    n_draws: int = 100_000,
    seed=0,
    exact: bool | None = None,
):
    """Percentile cluster-bootstrap interval ``(low, high)`` for the pooled rate.

    ``exact=None`` enumerates every resample when G <= 8 and otherwise draws
    ``n_draws`` Monte Carlo replicates; ``exact=True`` insists on
    enumeration. Under-covers at small G.
    """
    confidence = _check_confidence(confidence)
    what = "percentile_cluster_bootstrap_interval"
    sums, sizes = _check_clusters(cluster_sums, cluster_sizes, what)
    g = sums.shape[-1]
    if exact is None:
        exact = g <= MAX_EXACT_SCENARIOS
    alpha = 1.0 - confidence
    if exact:
        values, probs = exact_cluster_bootstrap(sums, sizes)
    else:
        values = cluster_bootstrap_draws(sums, sizes, n_draws, seed=seed)
        probs = np.full(values.shape[-1], 1.0 / values.shape[-1])
    low, high = weighted_quantile(values, probs, [alpha / 2.0, 1.0 - alpha / 2.0])
    return _scalar_or_array(low), _scalar_or_array(high)


# ---------------------------------------------------------------------- wild


def webb_weight_matrix(
    n_scenarios: int, n_draws: int = 100_000, *, seed=0, exact: bool | None = None
):
    """Webb 6-point weights, one per scenario and replicate.

    Returns ``(weights, probs)``: weights (M, G) and probs (M,). With
    ``exact=None`` all 6^G vectors are enumerated (probs 6^−G) when
    6^G <= ``n_draws``; otherwise ``n_draws`` vectors are drawn.
    """
    g = int(n_scenarios)
    if exact is None:
        exact = 6**g <= n_draws
    if exact:
        if 6**g > 2_000_000:
            raise ValueError(f"exact Webb enumeration of 6^{g} weight vectors is too large")
        index = _all_webb_indices(g)
    else:
        index = _rng(seed).integers(0, 6, size=(int(n_draws), g))
    weights = WEBB_WEIGHTS[index]
    return weights, np.full(len(weights), 1.0 / len(weights))


@functools.lru_cache(maxsize=8)
def _all_webb_indices(g: int) -> np.ndarray:
    """Every one of the 6^G index vectors into WEBB_WEIGHTS (read-only, cached)."""
    grids = np.meshgrid(*([np.arange(6)] * g), indexing="ij")
    index = np.stack([grid.ravel() for grid in grids], axis=1).astype(np.intp)
    index.setflags(write=False)
    return index


def _wild_t(residuals, sizes, total, weights):
    """Studentized wild replicates t* = δ*/se* for residual sums (..., G)."""
    g = residuals.shape[-1]
    delta = (residuals @ weights.T) / total[..., None]
    # Σ_g (w_g e_g − n_g δ)² expanded, so no (..., M, G) array is built
    ss = (
        (residuals**2) @ (weights**2).T
        - 2.0 * delta * ((residuals * sizes) @ weights.T)
        + delta**2 * (sizes**2).sum(axis=-1, keepdims=True)
    )
    se = np.sqrt(np.clip(ss, 0.0, None) * g / (g - 1)) / total[..., None]
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > 0, delta / np.where(se > 0, se, 1.0), np.sign(delta) * np.inf)
    return np.where((se == 0) & (delta == 0), 0.0, t)


def _cr1_se(residuals, total):
    g = residuals.shape[-1]
    return np.sqrt((residuals**2).sum(axis=-1) * g / (g - 1)) / total


def wild_cluster_bootstrap_interval(
    cluster_sums,
    cluster_sizes,
    confidence: float = 0.95,
    *,
    n_draws: int = 100_000,
    seed=0,
    exact: bool | None = None,
):
    """Wild cluster bootstrap-t interval ``(low, high)`` for the pooled rate.

    Unrestricted residuals, Webb weights, CR1 studentization (see the module
    docstring); bounds clipped to [0, 1]. Collapses to the estimate when all
    scenario residuals are zero.
    """
    confidence = _check_confidence(confidence)
    sums, sizes = _check_clusters(cluster_sums, cluster_sizes, "wild_cluster_bootstrap_interval")
    total = sizes.sum(axis=-1)
    estimate = sums.sum(axis=-1) / total
    residuals = sums - sizes * estimate[..., None]
    se = _cr1_se(residuals, total)
    weights, probs = webb_weight_matrix(sums.shape[-1], n_draws, seed=seed, exact=exact)
    t = _wild_t(residuals, sizes, total, weights)
    alpha = 1.0 - confidence
    q_low, q_high = weighted_quantile(t, probs, [alpha / 2.0, 1.0 - alpha / 2.0])
    with np.errstate(invalid="ignore"):
        low = np.where(se > 0, estimate - q_high * se, estimate)
        high = np.where(se > 0, estimate - q_low * se, estimate)
    return _scalar_or_array(np.clip(low, 0.0, 1.0)), _scalar_or_array(np.clip(high, 0.0, 1.0))


def wild_cluster_bootstrap_test(
    cluster_sums,
    cluster_sizes,
    null: float,
    *,
    n_draws: int = 100_000,
    seed=0,
    exact: bool | None = None,
):
    """Two-sided wild cluster bootstrap p-value for H0: pooled rate = ``null``.

    Restricted residuals e_g = sums_g − sizes_g·null, Webb weights,
    p = P(|t*| >= |t|) with t = (θ̂ − null)/se_CR1.
    """
    sums, sizes = _check_clusters(cluster_sums, cluster_sizes, "wild_cluster_bootstrap_test")
    if np.isnan(null):
        raise ValueError("wild_cluster_bootstrap_test: null must not be NaN")
    total = sizes.sum(axis=-1)
    estimate = sums.sum(axis=-1) / total
    se = _cr1_se(sums - sizes * estimate[..., None], total)
    with np.errstate(divide="ignore", invalid="ignore"):
        observed = np.where(se > 0, (estimate - null) / np.where(se > 0, se, 1.0), np.inf)
    observed = np.where((se == 0) & np.isclose(estimate, null), 0.0, observed)
    weights, probs = webb_weight_matrix(sums.shape[-1], n_draws, seed=seed, exact=exact)
    t = _wild_t(sums - sizes * null, sizes, total, weights)
    extreme = np.abs(t) >= np.abs(observed)[..., None] * (1 - 1e-12)
    return _scalar_or_array(extreme @ probs)

