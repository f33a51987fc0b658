import numpy as np
import pandas as pd
import pytest

from reappraisal.stats import pair_orders, scenario_summary, score_contests, summarize_contests

from .helpers import judgments_table

# (verdict in order AB, verdict in order BA) -> model's contest score; the
# model sits in slot A in order AB and in slot B in order BA.
CASES = [
    ("A", "B", 1.0),  # wins both orders
    ("B", "A", 0.0),  # loses both orders
    ("A", "A", 0.5),  # split: slot A won twice (position decided)
    ("B", "B", 0.5),  # split the other way
    ("tie", "tie", 0.5),
    ("A", "tie", 0.5),  # win + tie
    ("tie", "A", 0.5),  # tie + loss
    ("error", "B", np.nan),
    ("A", "error", np.nan),
    ("error", "error", np.nan),
]


def test_contest_scores_follow_the_two_order_rule():
    rows = [(1, f"c{i}", "v1", ab, ba) for i, (ab, ba, _) in enumerate(CASES)]
    contests = score_contests(judgments_table(rows)).set_index("contest_id")
    for i, (ab, ba, expected) in enumerate(CASES):
        got = contests.loc[f"c{i}"]
        if np.isnan(expected):
            assert np.isnan(got["score"]) and got["error"], (ab, ba)
        else:
            assert got["score"] == expected and not got["error"], (ab, ba)


def test_one_row_per_contest_with_documented_columns_and_errors_kept():
    rows = [(1, f"c{i}", "v1", ab, ba) for i, (ab, ba, _) in enumerate(CASES)]
    judgments = judgments_table(rows)
    contests = score_contests(judgments)
    assert list(contests.columns) == [
        "run", "judge", "contest_id", "vignette_id", "model", "opponent", "score", "error",
    ]
    # two orders are one contest: n is the number of pairs, not of judgments
    assert len(contests) == len(judgments) / 2 == len(CASES)
    assert contests["error"].sum() == 3
    summary = scenario_summary(contests).loc["v1"]
    assert summary["n"] == 7 and summary["n_errors"] == 3
    # errors stay out of the rate: (1 + 0 + 5 * 0.5) / 7
    assert summary["win_rate"] == pytest.approx(3.5 / 7)


def test_runs_are_pooled_inside_scenarios():
    rows = [
        (1, "c1", "v1", "A", "B"), (2, "c2", "v1", "B", "A"), (3, "c3", "v1", "A", "B"),
        (1, "c4", "v2", "tie", "tie"), (2, "c5", "v2", "error", "A"),
    ]
    summary = scenario_summary(score_contests(judgments_table(rows)))
    assert summary.loc["v1", "n"] == 3 and summary.loc["v1", "win_rate"] == pytest.approx(2 / 3)
    assert summary.loc["v2", "n"] == 1 and summary.loc["v2", "n_errors"] == 1
    cells = summarize_contests(score_contests(judgments_table(rows)), ["vignette_id", "run"])
    assert len(cells) == 5


def test_scenario_with_only_errors_has_nan_rate_but_is_counted():
    rows = [(1, "c1", "v1", "A", "B"), (1, "c2", "v2", "error", "B")]
    summary = scenario_summary(score_contests(judgments_table(rows)))
    assert summary.loc["v2", "n"] == 0 and summary.loc["v2", "n_errors"] == 1
    assert np.isnan(summary.loc["v2", "win_rate"])


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda t: t.iloc[:0], "empty"),
        (lambda t: t.drop(columns="order"), "missing column"),
        (lambda t: t.assign(order=t["order"].replace("BA", "XY")), "unknown order"),
        (lambda t: t.assign(verdict=t["verdict"].replace("A", "win")), "unknown verdict"),
        (lambda t: t.assign(verdict=t["verdict"].where(t.index != 0, None)), "missing values"),
        (lambda t: t[t["order"] == "AB"], "lack one of the orders"),
        (lambda t: pd.concat([t, t.iloc[:1]]), "more than once"),
    ],
)
def test_malformed_judgments_are_rejected_with_a_reason(mutate, message):
    table = judgments_table([(1, "c1", "v1", "A", "B"), (1, "c2", "v2", "B", "A")])
    with pytest.raises(ValueError, match=message):
        score_contests(mutate(table))


def test_pair_orders_puts_both_verdicts_side_by_side():
    pairs = pair_orders(judgments_table([(1, "c1", "v1", "A", "tie")]))
    assert pairs[["verdict_ab", "verdict_ba"]].iloc[0].tolist() == ["A", "tie"]
