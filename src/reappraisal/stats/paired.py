"""Paired head-to-head comparison of two models, scenario by scenario.

Two models judged against the same opponent on the same scenarios are
compared through their per-scenario differences d_g = rate_A,g − rate_B,g
(each rate pools all contests of the scenario across runs). The scenario is
the unit: the interval is a cluster t interval on the G differences (G − 1
df) and the test a sign-flip test of mean difference = 0. Comparing two
separately computed intervals, or treating contests as independent, would
ignore that both models share the scenarios' difficulty.

(A direct contest between the two models, model = A and opponent = B, is
already a win rate: use :func:`reappraisal.stats.headline_row` with
``bar=0.5``.)
"""

from __future__ import annotations

import pandas as pd

from .contests import check_contests, scenario_summary
from .intervals import Interval, cluster_t_interval
from .signflip import sign_flip_test


def _only_value(table: pd.DataFrame, column: str, value, what: str):
    present = sorted(map(str, table[column].unique()))
    if value is None:
        if len(present) != 1:
            raise ValueError(f"{what}: the table has several {column} values {present}; choose one")
        return table[column].iloc[0]
    if str(value) not in present:
        raise ValueError(f"{what}: {column} {value!r} not in the table (present: {present})")
    return value


def paired_comparison(
    contests: pd.DataFrame,
    model_a: str,
    model_b: str,
    *,
    opponent: str | None = None,
    confidence: float = 0.95,
    scenario: str = "vignette_id",
) -> dict:
    """Compare ``model_a`` with ``model_b`` paired by scenario.

    ``contests``: a contests table (see :func:`score_contests`) holding both
    models' contests against one opponent and one judge (pass ``opponent``
    when several are present). Only scenarios where both models have a
    scored contest enter; the others are listed in ``scenarios_dropped``.

    Returns a dict: model_a, model_b, opponent, judge, n_scenarios,
    scenarios_dropped, mean_difference (mean of d_g, win-rate units, positive
    = A better), ci (labelled :class:`Interval` as a dict, bounds in [−1, 1]),
    sign_flip (dict of :class:`SignFlipResult`, H0 mean difference = 0) and
    per_scenario (list of {scenario, rate_a, rate_b, n_a, n_b, difference}).
    Raises ``ValueError`` with fewer than 2 shared scenarios.
    """
    check_contests(contests)
    if model_a == model_b:
        raise ValueError("paired_comparison: model_a and model_b must differ")
    what = "paired_comparison"
    for model in (model_a, model_b):
        if not (contests["model"] == model).any():
            raise ValueError(f"{what}: model {model!r} has no contests in the table")
    pair = contests[contests["model"].isin([model_a, model_b])]
    opponent = _only_value(pair, "opponent", opponent, what)
    pair = pair[pair["opponent"] == opponent]
    judge = _only_value(pair, "judge", None, what)
    summaries = {}
    for label, model in (("a", model_a), ("b", model_b)):
        rows = pair[pair["model"] == model]
        if rows.empty:
            raise ValueError(f"{what}: model {model!r} has no contests against {opponent!r}")
        summaries[label] = scenario_summary(rows, scenario)
    joined = pd.concat(
        [summaries[label][["n", "win_rate"]].add_suffix(f"_{label}") for label in ("a", "b")],
        axis=1,
        join="outer",
    ).sort_index()
    shared = joined["n_a"].fillna(0).gt(0) & joined["n_b"].fillna(0).gt(0)
    dropped = [str(s) for s in joined.index[~shared]]
    joined = joined[shared]
    if len(joined) < 2:
        raise ValueError(
            f"{what} needs at least 2 scenarios scored for both models, got {len(joined)}"
        )
    differences = (joined["win_rate_a"] - joined["win_rate_b"]).to_numpy(dtype=float)
    low, high = cluster_t_interval(differences, confidence, bounds=(-1.0, 1.0))
    mean_difference = float(differences.mean())
    per_scenario = [
        {
            "scenario": str(index),
            "rate_a": float(row.win_rate_a),
            "rate_b": float(row.win_rate_b),
            "n_a": int(row.n_a),
            "n_b": int(row.n_b),
            "difference": float(row.win_rate_a - row.win_rate_b),
        }
        for index, row in joined.iterrows()
    ]
    return {
        "model_a": str(model_a),
        "model_b": str(model_b),
        "opponent": str(opponent),
        "judge": str(judge),
        "n_scenarios": int(len(joined)),
        "scenarios_dropped": dropped,
        "mean_difference": mean_difference,
        "ci": Interval.labelled(
            "paired_cluster_t", mean_difference, low, high, confidence
        ).as_dict(),
        "sign_flip": sign_flip_test(differences, null=0.0).as_dict(),
        "per_scenario": per_scenario,
    }

