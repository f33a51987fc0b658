"""Diagnostics of a pairwise verdict-giver (the evaluation judge or the GRM): position bias, agreement with humans.

A *pair* is one contest (two answers, one scenario) judged by one judge in
one run in both orders; the ``model`` column names the answer that sits in
slot A in order AB and in slot B in order BA, the ``opponent`` column the
other one. Inputs are judgments tables as described in
:func:`reappraisal.stats.pair_orders`, restricted to ONE judge (mixing judges
would average away exactly what these numbers diagnose; a ``ValueError``
says so). Pairs with an ``error`` verdict are left out and counted in
``n_errors``.

Every pair is classified by its two verdicts:

- consistent: the same answer wins in both orders;
- first slot both: slot A wins in both orders (a different answer each
  time: the position decided);
- second slot both: slot B wins in both orders;
- with tie: a tie in at least one order.

Position consistency = consistent / pairs. A *flip* is a pair whose winner
changes with the order (first slot both or second slot both); a pair with a
tie is not a flip. Flips and ties are reported separately (``flip_rate`` =
flips / pairs, ``tie_rate`` = pairs with a tie / pairs), so a judge that
always says tie has flip rate 0, tie rate 1 and consistency 0.
First-slot bias compares first-slot-both with second-slot-both pairs with an
exact two-sided binomial test (p = 0.5).

Agreement with humans is measured on *clearly separated* pairs, chosen by
human evidence only: |human margin| >= ``min_margin`` (a fixed config
value), never by the judge's confidence. The judge's choice for a pair is
the answer that wins in both orders, otherwise *undecided* (ties or a
position flip). Agreement is reported three ways: undecided counted wrong
(``strict``), as 0.5 (``half``) and dropped (``dropped``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from .contests import model_outcomes, pair_orders


def _pairs_one_judge(judgments: pd.DataFrame) -> pd.DataFrame:
    pairs = model_outcomes(pair_orders(judgments))
    judges = sorted(map(str, pairs["judge"].unique()))
    if len(judges) != 1:
        raise ValueError(f"judge statistics need one judge at a time; the table has {judges}")
    ab, ba = pairs["outcome_ab"], pairs["outcome_ba"]
    pairs["error"] = (ab == "error") | (ba == "error")
    choice = np.where((ab == "win") & (ba == "win"), "model", "undecided")
    choice = np.where((ab == "loss") & (ba == "loss"), "opponent", choice)
    pairs["judge_choice"] = np.where(pairs["error"], "error", choice)
    return pairs


def judge_choices(judgments: pd.DataFrame) -> pd.DataFrame:
    """One row per pair: the contest keys, ``verdict_ab``, ``verdict_ba`` and
    ``judge_choice`` ∈ {model, opponent, undecided, error}."""
    pairs = _pairs_one_judge(judgments)
    return pairs.drop(columns=["outcome_ab", "outcome_ba", "error"])


def position_consistency(judgments: pd.DataFrame) -> dict:
    """Position consistency and flip rate of one judge.

    Returns a dict of counts — n_pairs (error-free), n_errors, n_consistent,
    n_first_slot_both, n_second_slot_both, n_with_tie (these four partition
    n_pairs), n_flips (= first + second slot both) — and the shares
    ``consistency`` (consistent / pairs), ``flip_rate`` (flips / pairs) and
    ``tie_rate`` (pairs with a tie / pairs); consistency + flip rate + tie
    rate = 1. Shares are NaN when no error-free pair exists.
    """
    pairs = _pairs_one_judge(judgments)
    ok = pairs[~pairs["error"]]
    ab, ba = ok["verdict_ab"], ok["verdict_ba"]
    with_tie = (ab == "tie") | (ba == "tie")
    first = (ab == "A") & (ba == "A")
    second = (ab == "B") & (ba == "B")
    consistent = ~with_tie & ~first & ~second
    n = len(ok)
    flips = first | second

    def share(mask) -> float:
        return float(mask.sum() / n) if n else float("nan")

    return {
        "n_pairs": int(n),
        "n_errors": int(pairs["error"].sum()),
        "n_consistent": int(consistent.sum()),
        "n_first_slot_both": int(first.sum()),
        "n_second_slot_both": int(second.sum()),
        "n_with_tie": int(with_tie.sum()),
        "n_flips": int(flips.sum()),
        "consistency": share(consistent),
        "flip_rate": share(flips),
        "tie_rate": share(with_tie),
    }


def first_slot_bias(judgments: pd.DataFrame) -> dict:
    """First-slot bias of one judge with an exact binomial test.

    Among position-decided pairs (the same slot wins in both orders), k pairs
    favour the first slot (A) and n − k the second (B). Tests H0: P(first) =
    0.5, two-sided, with ``scipy.stats.binomtest``. Returns n_first_slot_both,
    n_second_slot_both, n_position_decided, share_first_slot (NaN if none)
    and p_value (1.0 if none).
    """
    counts = position_consistency(judgments)
    k, rest = counts["n_first_slot_both"], counts["n_second_slot_both"]
    n = k + rest
    p_value = float(stats.binomtest(k, n, 0.5, alternative="two-sided").pvalue) if n else 1.0
    return {
        "n_first_slot_both": k,
        "n_second_slot_both": rest,
        "n_position_decided": n,
        "share_first_slot": float(k / n) if n else float("nan"),
        "p_value": p_value,
        "test": "exact two-sided binomial test of P(first slot) = 0.5 on position-decided pairs",
    }


def cohens_kappa(labels_a, labels_b) -> float:
    """Cohen's κ between two raters' labels of the same items.

    κ = (p_o − p_e)/(1 − p_e), p_o the observed agreement, p_e the agreement
    expected from the two raters' marginal label shares (categories = union of
    both label sets). NaN when p_e = 1 (a single shared category).
    """
    a = np.asarray(labels_a, dtype=object)
    b = np.asarray(labels_b, dtype=object)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("cohens_kappa: label arrays must be 1-d and of equal length")
    if a.size == 0:
        raise ValueError("cohens_kappa: no items")
    categories = sorted(set(a.tolist()) | set(b.tolist()), key=str)
    observed = float(np.mean(a == b))
    expected = sum(float(np.mean(a == c)) * float(np.mean(b == c)) for c in categories)
    if np.isclose(expected, 1.0):
        return float("nan")
    return (observed - expected) / (1.0 - expected)


def _labelled_pairs(judgments: pd.DataFrame, human_margins: pd.DataFrame) -> pd.DataFrame:
    if not isinstance(human_margins, pd.DataFrame) or not {"contest_id", "human_margin"} <= set(
        human_margins.columns
    ):
        raise ValueError("human_margins must be a DataFrame with columns contest_id, human_margin")
    margins = human_margins[["contest_id", "human_margin"]]
    if margins["contest_id"].duplicated().any():
        raise ValueError("human_margins has more than one margin for a contest_id")
    if margins["human_margin"].isna().any():
        raise ValueError("human_margins has missing margins")
    pairs = _pairs_one_judge(judgments).merge(margins, on="contest_id", how="left")
    unlabelled = pairs["human_margin"].isna()
    if unlabelled.any():
        raise ValueError(
            f"{int(unlabelled.sum())} judged pair(s) have no human margin, e.g. contest_id "
            f"{pairs.loc[unlabelled, 'contest_id'].iloc[0]!r}"
        )
    margin = pairs["human_margin"].astype(float)
    pairs["human_choice"] = np.where(margin > 0, "model", np.where(margin < 0, "opponent", "none"))
    return pairs


def _agreement(rows: pd.DataFrame) -> dict:
    n = len(rows)
    correct = int((rows["judge_choice"] == rows["human_choice"]).sum())
    undecided = int((rows["judge_choice"] == "undecided").sum())
    decisive = n - undecided
    nan = float("nan")
    return {
        "n_pairs": n,
        "n_undecided": undecided,
        "agreement_strict": correct / n if n else nan,
        "agreement_half": (correct + 0.5 * undecided) / n if n else nan,
        "agreement_dropped": correct / decisive if decisive else nan,
    }


def human_agreement(
    judgments: pd.DataFrame, human_margins: pd.DataFrame, min_margin: float
) -> dict:
    """Agreement of one judge with human preferences on clearly separated pairs.

    ``human_margins``: DataFrame with ``contest_id`` and ``human_margin`` =
    mean human rating of the ``model`` answer minus that of the ``opponent``
    answer (human rating units; positive = humans prefer the model answer).
    Pairs with |margin| >= ``min_margin`` (> 0) are kept; the choice is made
    on human evidence alone.

    Returns n_pairs (separated, error-free), n_undecided, n_errors (separated
    pairs with an error verdict, left out), n_not_separated,
    agreement_strict / agreement_half / agreement_dropped, and ``kappa``:
    Cohen's κ between the judge's choice (model / opponent / undecided) and
    the human's (model / opponent); undecided always counts as disagreement.
    """
    if not min_margin > 0:
        raise ValueError(f"min_margin must be positive, got {min_margin}")
    pairs = _labelled_pairs(judgments, human_margins)
    separated = pairs["human_margin"].abs() >= min_margin
    rows = pairs[separated & ~pairs["error"]]
    out = _agreement(rows)
    out["n_errors"] = int((separated & pairs["error"]).sum())
    out["n_not_separated"] = int((~separated).sum())
    out["min_margin"] = float(min_margin)
    out["kappa"] = (
        cohens_kappa(rows["judge_choice"], rows["human_choice"]) if len(rows) else float("nan")
    )
    return out


def agreement_by_margin(
    judgments: pd.DataFrame, human_margins: pd.DataFrame, edges
) -> pd.DataFrame:
    """Agreement of one judge with humans by bins of |human margin|.

    ``edges``: increasing bin edges on |margin| (bins are [e_i, e_{i+1}),
    the last one closed). Pairs with margin 0 (no human preference), with an
    error verdict, or outside the edges are left out. Returns one row per
    bin: low, high, n_pairs, n_undecided, agreement_strict, agreement_half,
    agreement_dropped.
    """
    edges = np.asarray(edges, dtype=float)
    if edges.ndim != 1 or edges.size < 2 or np.any(np.diff(edges) <= 0) or np.isnan(edges).any():
        raise ValueError("edges must be at least two strictly increasing numbers")
    pairs = _labelled_pairs(judgments, human_margins)
    pairs = pairs[~pairs["error"] & (pairs["human_choice"] != "none")]
    size = pairs["human_margin"].abs().to_numpy(dtype=float)
    rows = []
    for i, (low, high) in enumerate(zip(edges[:-1], edges[1:])):
        last = i == len(edges) - 2
        inside = (size >= low) & ((size <= high) if last else (size < high))
        rows.append({"low": float(low), "high": float(high), **_agreement(pairs[inside])})
    return pd.DataFrame(rows)
