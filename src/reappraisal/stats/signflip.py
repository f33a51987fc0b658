"""Sign-flip randomization test for the mean of scenario means.

H0: the scenario means are symmetric around ``null`` (e.g. the headline bar, or
0.5 = parity with the opponent). Let d_g = scenario mean_g − null for the G
scenarios. Statistic: T = |Σ_g d_g| (equivalently |mean d|, two-sided).
Under H0 every sign pattern s ∈ {−1, +1}^G is equally likely, so

    p = #{s : |Σ_g s_g d_g| >= T} / 2^G,

counted over all 2^G patterns at once (a (2^G, G) sign matrix). The
identity pattern and its mirror both reach T, so p >= 2 / 2^G: at G = 6 the
smallest attainable p is 1/32. The test is exact for G <= 16; above that,
signs are drawn at random and p = (1 + #hits) / (1 + draws).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import numpy as np

MAX_EXACT_SCENARIOS = 16

STATISTIC = "|sum of (scenario mean - null)| over the 2^G sign patterns; two-sided"


@dataclass(frozen=True)
class SignFlipResult:
    """Outcome of :func:`sign_flip_test`.

    ``mean_difference`` is mean(d) in win-rate units; ``p_value`` =
    ``n_extreme / n_patterns`` (exact) or (1 + hits)/(1 + draws) (Monte
    Carlo). ``min_p_value`` is the smallest p the test can give at this G
    (2 / 2^G exact, 1 / (1 + draws) Monte Carlo): with G = 6 no data can
    reach p < 1/32.
    """

    null: float
    mean_difference: float
    p_value: float
    n_extreme: int
    n_patterns: int
    n_scenarios: int
    exact: bool
    min_p_value: float = float("nan")
    statistic: str = STATISTIC

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


@functools.lru_cache(maxsize=MAX_EXACT_SCENARIOS + 1)
def sign_matrix(n_scenarios: int) -> np.ndarray:
    """All 2^G sign patterns as a read-only (2^G, G) array of ±1 (float)."""
    if not 1 <= n_scenarios <= MAX_EXACT_SCENARIOS:
        raise ValueError(f"sign_matrix: G must be in 1..{MAX_EXACT_SCENARIOS}, got {n_scenarios}")
    bits = (np.arange(2**n_scenarios)[:, None] >> np.arange(n_scenarios)[None, :]) & 1
    signs = (2.0 * bits - 1.0)
    signs.setflags(write=False)
    return signs


def sign_flip_test(
    scenario_means,
    *,
    null: float,
    n_draws: int = 100_000,
    seed: int | None = 0,
) -> SignFlipResult:
    """Two-sided sign-flip test of H0: mean of scenario means = ``null``.

    ``scenario_means``: 1-d array, one mean score per scenario (all runs
    pooled). Exact enumeration of all 2^G patterns for G <= 16, otherwise
    ``n_draws`` random patterns from ``seed``. Needs G >= 1 and no NaN.
    """
    means = np.asarray(scenario_means, dtype=float)
    if means.ndim != 1 or means.size == 0:
        raise ValueError("sign_flip_test: expected a non-empty 1-d array of scenario means")
    if np.isnan(means).any() or np.isnan(null):
        raise ValueError("sign_flip_test: scenario means and null must not be NaN")
    if not (np.isfinite(means).all() and np.isfinite(null)):
        raise ValueError("sign_flip_test: scenario means and null must be finite (got inf)")
    d = means - float(null)
    g = d.size
    observed = abs(d.sum())
    tolerance = 1e-12 * (np.abs(d).sum() + 1e-12)  # float rounding only; true gaps are larger
    if g <= MAX_EXACT_SCENARIOS:
        flipped = np.abs(sign_matrix(g) @ d)
        n_extreme = int((flipped >= observed - tolerance).sum())
        n_patterns = 2**g
        p_value = n_extreme / n_patterns
        exact = True
    else:
        if n_draws < 1:
            raise ValueError("sign_flip_test: n_draws must be positive")
        rng = np.random.default_rng(seed)
        hits = 0
        chunk = max(1, 4_000_000 // g)
        for start in range(0, n_draws, chunk):
            size = min(chunk, n_draws - start)
            signs = rng.integers(0, 2, size=(size, g), dtype=np.int8) * 2.0 - 1.0
            hits += int((np.abs(signs @ d) >= observed - tolerance).sum())
        n_extreme, n_patterns = hits, n_draws
        p_value = (1 + hits) / (1 + n_draws)
        exact = False
    return SignFlipResult(
        null=float(null),
        mean_difference=float(d.mean()),
        p_value=float(p_value),
        n_extreme=n_extreme,
        n_patterns=n_patterns,
        n_scenarios=g,
        exact=exact,
        min_p_value=float(2.0 / n_patterns if exact else 1.0 / (1 + n_draws)),
    )
