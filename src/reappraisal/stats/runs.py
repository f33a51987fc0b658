"""Per-run win rates and a test for a run effect.

The study pools three independent eval runs (fresh generations and fresh
judging each) inside every scenario. Pooling is justified only if runs do not
differ systematically, so the report shows per-run rates beside the headline
and tests for a run effect on the scenario × run table of cell means (cell =
mean score of one scenario's contests in one run). Scenario × run cells are
never treated as independent clusters anywhere else.

Test (default ``method="anova"``): two-way ANOVA without interaction on the
cell means, scenario and run as fixed factors,
F = (SS_run / (R−1)) / (SS_resid / ((G−1)(R−1))), p from F(R−1, (G−1)(R−1)).
Blocking on scenario removes the between-scenario spread, so only the
run-to-run differences within scenarios are tested. Cell means of tens of
contests are close to normal, which is what the F test assumes.
``method="friedman"`` gives the rank-based Friedman test instead (no
normality, less power at small G; needs R >= 3).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from .contests import check_contests, summarize_contests


def per_run_rates(contests: pd.DataFrame, scenario: str = "vignette_id") -> pd.DataFrame:
    """Win rate of each run, contests pooled over scenarios.

    Returns a DataFrame indexed by run with columns ``n`` (scored contests),
    ``n_errors``, ``sum``, ``win_rate`` (pooled over the run's contests),
    ``n_scenarios`` (scenarios with a scored contest in that run, counted in
    the ``scenario`` column) and ``mean_of_scenarios`` (the equally weighted
    mean of the run's scenario rates: the headline estimand, per run).
    """
    if scenario not in contests.columns:
        raise ValueError(f"per_run_rates: contests has no scenario column {scenario!r}")
    summary = summarize_contests(contests, "run")
    scored = contests.loc[~contests["error"].astype(bool)]
    counts = scored.groupby("run")[scenario].nunique()
    cells = summarize_contests(contests, ["run", scenario])["win_rate"]
    summary["mean_of_scenarios"] = cells.groupby(level="run").mean().reindex(summary.index)
    summary["n_scenarios"] = counts.reindex(summary.index).fillna(0).astype(int)
    return summary


def scenario_run_table(contests: pd.DataFrame, scenario: str = "vignette_id") -> pd.DataFrame:
    """Scenario × run table of cell means (rows: scenarios, columns: runs).

    A cell is NaN when the scenario has no scored contest in that run.
    """
    check_contests(contests)
    cells = summarize_contests(contests, [scenario, "run"])["win_rate"]
    table = cells.unstack("run")
    table.columns.name = "run"
    return table


@dataclass(frozen=True)
class RunEffectTest:
    """Result of :func:`run_effect_test`; ``df`` is (numerator, denominator)
    for ANOVA and (R−1,) for Friedman."""

    method: str
    statistic: float
    df: tuple
    p_value: float
    n_scenarios: int
    n_runs: int
    n_scenarios_dropped: int
    description: str

    def as_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out["df"] = list(self.df)
        return out


_DESCRIPTIONS = {
    "anova": "two-way ANOVA without interaction on scenario x run cell means; F test for run",
    "friedman": "Friedman rank test for run, scenarios as blocks, on scenario x run cell means",
}


def run_effect_test(cell_means, method: str = "anova") -> RunEffectTest:
    """Test H0: no run effect, on a scenario × run table of cell means.

    ``cell_means``: a 2-d array or DataFrame (rows = scenarios, columns =
    runs), e.g. from :func:`scenario_run_table`. Scenarios with a missing
    cell are dropped and counted in ``n_scenarios_dropped``. Needs at least 2
    complete scenarios and 2 runs (3 for Friedman); raises ``ValueError``
    otherwise. If the table is exactly additive (zero residual) the p-value is
    1 when runs are identical and 0 otherwise.
    """
    if method not in _DESCRIPTIONS:
        raise ValueError(
            f"run_effect_test: method must be one of {list(_DESCRIPTIONS)}, got {method!r}"
        )
    table = np.asarray(cell_means, dtype=float)
    if table.ndim != 2:
        raise ValueError("run_effect_test: expected a 2-d scenario x run table")
    complete = ~np.isnan(table).any(axis=1)
    dropped = int((~complete).sum())
    table = table[complete]
    g, r = table.shape
    min_runs = 3 if method == "friedman" else 2
    if r < min_runs:
        raise ValueError(f"run_effect_test ({method}) needs at least {min_runs} runs, got {r}")
    if g < 2:
        raise ValueError(
            f"run_effect_test needs at least 2 scenarios with a cell in every run, got {g} "
            f"({dropped} dropped as incomplete)"
        )
    if method == "friedman":
        statistic, p_value = stats.friedmanchisquare(*table.T)
        return RunEffectTest(
            method, float(statistic), (r - 1,), float(p_value), g, r, dropped, _DESCRIPTIONS[method]
        )
    grand = table.mean()
    run_means = table.mean(axis=0)
    scenario_means = table.mean(axis=1, keepdims=True)
    resid = table - scenario_means - run_means[None, :] + grand
    ss_run = g * float(((run_means - grand) ** 2).sum())
    ss_resid = float((resid**2).sum())
    df_run, df_resid = r - 1, (g - 1) * (r - 1)
    scale = max(float(((table - grand) ** 2).sum()), 1e-300)
    if ss_resid <= 1e-24 * scale:
        statistic = np.inf if ss_run > 1e-24 * scale else np.nan
        p_value = 0.0 if ss_run > 1e-24 * scale else 1.0
    else:
        statistic = (ss_run / df_run) / (ss_resid / df_resid)
        p_value = float(stats.f.sf(statistic, df_run, df_resid))
    return RunEffectTest(
        method, float(statistic), (df_run, df_resid), p_value, g, r, dropped, _DESCRIPTIONS[method]
    )
