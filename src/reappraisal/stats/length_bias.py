"""Length bias of a judge's contest outcomes (pure).

Judges tend to favour longer answers. For one set of contests (an arm against
an opponent under one judge; ``score`` in {0, 0.5, 1} from the arm's side,
``length_diff`` = arm answer minus opponent answer, in words):

* :func:`longer_wins_share`: among decided contests (score 0 or 1) whose
  answers differ in length, the share won by the longer answer;
* :func:`win_rate_by_length_bin`: the win rate per bin of length difference;
* :func:`length_controlled_win_rate`: alpaca_eval's length-controlled win
  rate adapted to contests clustered by scenario. A logistic model of the
  contest outcome (fractional: a split contest counts 0.5) on
  ``tanh(length_diff / sd)`` with one intercept per scenario,
  ``logit P = a_s + b · tanh(d / sd(d))``, fitted by penalised Newton steps
  (a small ridge keeps a scenario the arm always wins finite); the
  length-controlled win rate is the mean over scenarios of
  ``sigmoid(a_s)``, the model's prediction at zero length difference,
  equally weighted like every headline win rate.

What the length-controlled rate assumes: the effect of length is the same in
every scenario and has the tanh shape; scenario intercepts absorb the rest.
It answers "what if both answers were equally long", which removes real
quality too wherever length is part of quality (in the demo, sentences past
two lower the rating model's quality), so it is a sensitivity column, not a
replacement for the headline.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

#: Bin edges of the length difference (words, arm minus opponent).
DEFAULT_LENGTH_EDGES = (-np.inf, -20.0, -5.0, 5.0, 20.0, np.inf)


def longer_wins_share(score: Sequence[float], length_diff: Sequence[float]) -> tuple[float, int]:
    """(share of decided, unequal-length contests won by the longer answer, how many such contests)."""
    s = np.asarray(score, dtype=float)
    d = np.asarray(length_diff, dtype=float)
    keep = ((s == 0.0) | (s == 1.0)) & (d != 0)
    n = int(keep.sum())
    if n == 0:
        return float("nan"), 0
    longer_won = (s[keep] == 1.0) == (d[keep] > 0)
    return float(longer_won.mean()), n


def _bin_label(lo: float, hi: float) -> str:
    if np.isinf(lo):
        return f"< {hi:g}"
    if np.isinf(hi):
        return f">= {lo:g}"
    return f"[{lo:g}, {hi:g})"


def win_rate_by_length_bin(score: Sequence[float], length_diff: Sequence[float],
                           edges: Sequence[float] = DEFAULT_LENGTH_EDGES) -> pd.DataFrame:
    """One row per bin of length difference: bin label, low, high, contests, win rate (NaN when empty)."""
    s = np.asarray(score, dtype=float)
    d = np.asarray(length_diff, dtype=float)
    rows = []
    for lo, hi in zip(edges[:-1], edges[1:]):
        inside = (d >= lo) & (d < hi)
        rows.append({"bin": _bin_label(lo, hi), "low": float(lo), "high": float(hi), "contests": int(inside.sum()),
                     "win_rate": float(s[inside].mean()) if inside.any() else float("nan")})
    return pd.DataFrame(rows)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def length_controlled_win_rate(score: Sequence[float], length_diff: Sequence[float], scenario: Sequence[object], *,
                               ridge: float = 1e-2, max_iter: int = 100, tol: float = 1e-10) -> dict:
    """Fit ``logit P = a_s + b·tanh(d / sd(d))`` (see module doc); the prediction at d = 0.

    Returns ``lc_win_rate`` (mean over scenarios of sigmoid(a_s)),
    ``length_coef`` (b, per unit of tanh-standardised difference), ``raw_win_rate``
    (equally weighted mean of scenario win rates, for comparison),
    ``scenarios``, ``contests`` and ``converged``. With no variation in
    length the coefficient is 0 and the LC rate is the fitted scenario rate.
    """
    y = np.asarray(score, dtype=float)
    d = np.asarray(length_diff, dtype=float)
    groups = pd.Series(list(scenario), dtype="object").astype(str)
    if y.size == 0:
        raise ValueError("no contests")
    if not (y.size == d.size == groups.size):
        raise ValueError("score, length_diff and scenario must have the same length")
    codes, names = pd.factorize(groups, sort=True)
    g = len(names)
    sd = float(d.std())
    x = np.tanh(d / sd) if sd > 0 else np.zeros_like(d)
    design = np.zeros((y.size, g + 1))
    design[np.arange(y.size), codes] = 1.0
    design[:, g] = x
    beta = np.zeros(g + 1)
    penalty = np.full(g + 1, ridge)
    converged = False
    for _ in range(max_iter):
        p = _sigmoid(design @ beta)
        w = np.clip(p * (1.0 - p), 1e-12, None)
        grad = design.T @ (y - p) - penalty * beta
        hess = (design * w[:, None]).T @ design + np.diag(penalty)
        step = np.linalg.solve(hess, grad)
        beta = beta + step
        if np.max(np.abs(step)) < tol:
            converged = True
            break
    per_scenario = pd.Series(y).groupby(codes).mean().to_numpy()
    return {
        "lc_win_rate": float(_sigmoid(beta[:g]).mean()),
        "length_coef": float(beta[g]),
        "raw_win_rate": float(per_scenario.mean()),
        "scenarios": int(g),
        "contests": int(y.size),
        "converged": converged,
    }
