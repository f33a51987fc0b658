"""Contest scoring: two judged orders of one answer pair become one score.

A *contest* is one (model answer, opponent answer) pair for one scenario
(vignette), judged in both orders by one judge in one run:

- order ``AB``: the model's answer is in slot A, the opponent's in slot B;
- order ``BA``: the model's answer is in slot B, the opponent's in slot A.

Its score is 1 if the model wins in both orders, 0 if it loses in both and
0.5 for anything in between (one win and one loss, or a tie in either
order). The two orders are one trial, never two: ``n`` counts contests.

A contest with an ``error`` verdict (unparseable judge output) in either
order has score NaN and ``error=True``. It stays in the table and is counted,
but it is kept out of every rate.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from ..table_contracts import CONTEST_KEYS, SCORE_COLUMNS, VERDICT_COLUMNS

ORDERS = ("AB", "BA")
VERDICTS = ("A", "B", "tie", "error")

# Outcome of one judged order from the model's point of view.
_MODEL_OUTCOME = {
    ("AB", "A"): "win",
    ("AB", "B"): "loss",
    ("BA", "A"): "loss",
    ("BA", "B"): "win",
}


def _require_columns(table: pd.DataFrame, columns: list[str], what: str) -> None:
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"{what} must be a pandas DataFrame, got {type(table).__name__}")
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise ValueError(f"{what} is missing column(s) {missing}; expected {columns}")
    if table.empty:
        raise ValueError(f"{what} is empty")


def pair_orders(judgments: pd.DataFrame) -> pd.DataFrame:
    """Put the two orders of every contest side by side.

    ``judgments`` has one row per judged order with columns run, judge,
    contest_id, vignette_id, model, opponent, order (``AB``/``BA``) and
    verdict (``A``/``B``/``tie``/``error``). Every contest (one value of
    run, judge, contest_id, vignette_id, model, opponent) must appear exactly
    once in each order.

    Returns one row per contest: the six key columns, ``verdict_ab`` and
    ``verdict_ba`` (the raw slot verdicts), sorted by the keys.
    Raises ``ValueError`` on missing columns, unknown orders or verdicts,
    missing values, or a contest that lacks an order or repeats one.
    """
    _require_columns(judgments, VERDICT_COLUMNS, "judgments")
    table = judgments[VERDICT_COLUMNS]
    null_columns = [c for c in VERDICT_COLUMNS if table[c].isna().any()]
    if null_columns:
        raise ValueError(
            f"judgments has missing values in {null_columns}; an unparseable "
            "judge output must be recorded as verdict 'error', not left empty"
        )
    bad_orders = sorted(set(table["order"]) - set(ORDERS))
    if bad_orders:
        raise ValueError(f"judgments has unknown order(s) {bad_orders}; expected {list(ORDERS)}")
    bad_verdicts = sorted(map(str, set(table["verdict"]) - set(VERDICTS)))
    if bad_verdicts:
        raise ValueError(
            f"judgments has unknown verdict(s) {bad_verdicts}; expected {list(VERDICTS)}"
        )
    duplicated = table.duplicated(CONTEST_KEYS + ["order"], keep=False)
    if duplicated.any():
        example = table.loc[duplicated, CONTEST_KEYS + ["order"]].iloc[0].to_dict()
        raise ValueError(f"a contest is judged more than once in the same order, e.g. {example}")
    wide = table.pivot(index=CONTEST_KEYS, columns="order", values="verdict")
    wide = wide.reindex(columns=list(ORDERS))
    incomplete = wide.isna().any(axis=1)
    if incomplete.any():
        example = dict(zip(CONTEST_KEYS, wide.index[incomplete][0]))
        raise ValueError(
            f"{int(incomplete.sum())} contest(s) lack one of the orders AB/BA, e.g. {example}; "
            "every contest must be judged in both orders"
        )
    wide = wide.rename(columns={"AB": "verdict_ab", "BA": "verdict_ba"})
    wide.columns.name = None
    return wide.reset_index().sort_values(CONTEST_KEYS, kind="stable").reset_index(drop=True)


def model_outcomes(pairs: pd.DataFrame) -> pd.DataFrame:
    """Translate slot verdicts into outcomes for the model in each order.

    ``pairs`` is the output of :func:`pair_orders`. Adds ``outcome_ab`` and
    ``outcome_ba``, each ``win``/``loss``/``tie``/``error`` from the model's
    side (in order BA the model sits in slot B).
    """
    out = pairs.copy()
    for order, column in (("AB", "verdict_ab"), ("BA", "verdict_ba")):
        verdict = out[column]
        outcome = verdict.map(lambda v, o=order: _MODEL_OUTCOME.get((o, v), v))
        out[f"outcome_{order.lower()}"] = outcome
    return out


def score_contests(judgments: pd.DataFrame) -> pd.DataFrame:
    """Score every contest from its two judged orders.

    Input: the judgments table described in :func:`pair_orders`.
    Output: one row per contest with columns run, judge, contest_id,
    vignette_id, model, opponent, score (float: 1, 0.5, 0, or NaN) and
    error (bool). Score 1 = the model wins in both orders, 0 = it loses in
    both, 0.5 = split or tied verdicts. A contest with an ``error`` verdict
    in either order gets score NaN and ``error=True``; it is kept, never
    dropped, so callers can count it.
    """
    outcomes = model_outcomes(pair_orders(judgments))
    ab, ba = outcomes["outcome_ab"], outcomes["outcome_ba"]
    error = (ab == "error") | (ba == "error")
    score = np.where((ab == "win") & (ba == "win"), 1.0, 0.5)
    score = np.where((ab == "loss") & (ba == "loss"), 0.0, score)
    score = np.where(error, np.nan, score)
    contests = outcomes[CONTEST_KEYS].copy()
    contests["score"] = score.astype(float)
    contests["error"] = error.to_numpy(dtype=bool)
    return contests


def check_contests(contests: pd.DataFrame) -> pd.DataFrame:
    """Validate a contests table (see :func:`score_contests`) and return it.

    Scores must be 0, 0.5 or 1 where ``error`` is False and NaN where it is
    True. Raises ``ValueError`` naming the problem.
    """
    _require_columns(contests, SCORE_COLUMNS, "contests")
    error = contests["error"]
    if error.isna().any() or not set(error.unique()) <= {True, False}:
        raise ValueError("contests column 'error' must be boolean without missing values")
    error = error.astype(bool)
    score = pd.to_numeric(contests["score"], errors="coerce")
    ok = score[~error]
    if ok.isna().any():
        raise ValueError(
            f"{int(ok.isna().sum())} contest(s) have a missing score but error=False; "
            "mark unscorable contests with error=True"
        )
    if not ok.isin([0.0, 0.5, 1.0]).all():
        raise ValueError("contest scores must be 0, 0.5 or 1")
    if score[error].notna().any():
        raise ValueError("contests with error=True must have score NaN")
    key_nulls = [c for c in CONTEST_KEYS if contests[c].isna().any()]
    if key_nulls:
        raise ValueError(f"contests has missing values in key column(s) {key_nulls}")
    return contests


def summarize_contests(contests: pd.DataFrame, by: str | list[str]) -> pd.DataFrame:
    """Totals of a contests table grouped by ``by`` (a column or list).

    Returns a DataFrame indexed by the group with columns ``n`` (scored
    contests), ``n_errors``, ``sum`` (sum of scores = fractional wins) and
    ``win_rate`` (= sum / n; NaN for a group whose contests are all errors).
    """
    check_contests(contests)
    keys = [by] if isinstance(by, str) else list(by)
    error = contests["error"].astype(bool).to_numpy()
    frame = contests[keys].copy()
    frame["_scored"] = (~error).astype(int)
    frame["_error"] = error.astype(int)
    frame["_score"] = np.where(error, 0.0, contests["score"].to_numpy(dtype=float))
    grouped = frame.groupby(keys if len(keys) > 1 else keys[0], sort=True)
    summary = pd.DataFrame(
        {
            "n": grouped["_scored"].sum().astype(int),
            "n_errors": grouped["_error"].sum().astype(int),
            "sum": grouped["_score"].sum().astype(float),
        }
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        summary["win_rate"] = np.where(summary["n"] > 0, summary["sum"] / summary["n"], np.nan)
    return summary


def scenario_summary(contests: pd.DataFrame, scenario: str = "vignette_id") -> pd.DataFrame:
    """Per-scenario totals with all runs pooled inside each scenario.

    Same columns as :func:`summarize_contests`; ``win_rate`` is the scenario
    mean: the mean score of all its contests across all runs.
    """
    return summarize_contests(contests, scenario)
