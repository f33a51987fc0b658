"""Judge traces for GRM stage 1 (distillation SFT). Pure: frames in, frames out.

Two sources:

* a teacher's traces file (config ``grm.traces_file``): columns ``pair_id``
  (a train-split pair of ``pairs.parquet``), ``order`` (``AB`` = the pair's
  ``text_a`` in slot A, ``BA`` = swapped) and ``trace`` (the teacher's reply,
  reasoning then ``ANSWER: A|B``). Traces whose final verdict is not the
  human-preferred letter for that order are dropped and counted (RM-R1 keeps
  only correct traces);
* otherwise a short templated rationale written from the human ratings: for
  each rating dimension, which slot the raters scored higher (or "even"
  within ``tie``), then the verdict of the primary dimension. It teaches the
  reply's shape and the four criteria; it does not show the model anything it
  will not have at inference (the ratings are in the target, not the prompt).
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import pandas as pd

from reappraisal.errors import DataValidationError, PipelineInputError

from .prompts import ANSWER_MARKER
from .verdict import VERDICTS, parse_verdict

TRACE_COLUMNS = ("pair_id", "order", "trace")


def check_traces(traces: pd.DataFrame, where: str) -> None:
    """Raise :class:`DataValidationError` unless ``traces`` has the declared columns and values."""
    missing = [c for c in TRACE_COLUMNS if c not in traces.columns]
    if missing:
        raise DataValidationError(
            f"missing column(s) {missing}; a traces file needs columns {list(TRACE_COLUMNS)} "
            f"(found {list(traces.columns)})",
            where=where,
        )
    if traces.empty:
        raise DataValidationError("no rows", where=where)
    bad_order = ~traces["order"].isin(["AB", "BA"])
    if bad_order.any():
        row = int(bad_order.to_numpy().nonzero()[0][0])
        raise DataValidationError(
            f"'order' must be 'AB' or 'BA', got {traces['order'].iloc[row]!r}", where=f"{where} row {row}"
        )
    bad_text = ~traces["trace"].map(lambda t: isinstance(t, str) and bool(t.strip()))
    if bad_text.any():
        row = int(bad_text.to_numpy().nonzero()[0][0])
        raise DataValidationError("'trace' is empty or not text", where=f"{where} row {row}")
    dup = traces.duplicated(["pair_id", "order"])
    if dup.any():
        row = int(dup.to_numpy().nonzero()[0][0])
        raise DataValidationError("duplicate (pair_id, order)", where=f"{where} row {row}")


def split_trace(trace: str) -> tuple[str, str]:
    """``(reasoning, verdict)`` of a reply: the text before its last ``ANSWER:`` and the parsed letter.

    Thinking tags are removed from the reasoning (the completion style adds
    its own); the verdict is ``"error"`` when the reply has no final verdict.
    """
    verdict = parse_verdict(trace)
    cut = trace.upper().rfind(ANSWER_MARKER)
    reasoning = trace[:cut] if cut >= 0 else trace
    reasoning = reasoning.replace("<think>", "").replace("</think>", "").strip()
    return reasoning, verdict


def teacher_traces(items: pd.DataFrame, traces: pd.DataFrame, *, where: str) -> tuple[pd.DataFrame, int]:
    """Attach teacher reasoning to judged items; return ``(rows with 'reasoning', n_dropped)``.

    ``items`` are the train-split items (:func:`reappraisal.grm.pairs.both_orders`
    over *all* train pairs); a trace naming any other pair is an error (the
    GRM trains on train-split reappraisals only). Rows whose verdict is not
    the correct letter are dropped and counted.
    """
    check_traces(traces, where)
    keyed = items.set_index(["pair_id", "order"])
    keys = list(zip(traces["pair_id"], traces["order"]))
    unknown = [i for i, k in enumerate(keys) if k not in keyed.index]
    if unknown:
        row = unknown[0]
        raise PipelineInputError(
            f"pair_id {traces['pair_id'].iloc[row]!r} is not a train-split pair of pairs.parquet "
            f"({len(unknown)} such row(s)); traces may only cover train-split pairs",
            where=f"{where} row {row}",
        )
    rows = keyed.loc[keys].reset_index()
    split = [split_trace(t) for t in traces["trace"]]
    rows["reasoning"] = [r for r, _ in split]
    ok = [v == c for (_, v), c in zip(split, rows["correct"])]
    kept = rows[ok].reset_index(drop=True)
    if kept.empty:
        raise PipelineInputError(
            "no trace ends in the human-preferred verdict for its order (check the 'order' convention: "
            "AB = text_a in slot A)",
            where=where,
        )
    return kept, len(rows) - len(kept)


def templated_rationale(
    first_z: Mapping[str, float],
    second_z: Mapping[str, float],
    *,
    dimensions: Sequence[str],
    primary: str,
    correct: str,
    tie: float = 0.1,
) -> str:
    """A one-line rationale from human z-ratings of the two slots, e.g.
    ``"Effectiveness A; empathy A; novelty even; specificity B."``

    Each dimension names the slot the raters scored higher ("even" when the
    z gap is below ``tie``); dimensions with a missing rating on either side
    are left out; the primary dimension always names ``correct`` (the human
    preference the verdict follows). Kept short: a small judge must fit it
    and the verdict into its generation budget.
    """
    if correct not in VERDICTS:
        raise ValueError(f"correct must be 'A' or 'B', got {correct!r}")
    parts = []
    for dim in dimensions:
        if dim == primary:
            who = correct
        else:
            za, zb = first_z.get(dim), second_z.get(dim)
            if za is None or zb is None or _nan(za) or _nan(zb):
                continue
            who = "even" if abs(za - zb) < tie else ("A" if za > zb else "B")
        parts.append(f"{dim} {who}")
    text = "; ".join(parts)
    return f"{text[:1].upper()}{text[1:]}."


def templated_traces(
    items: pd.DataFrame,
    targets: pd.DataFrame,
    *,
    dimensions: Sequence[str],
    primary: str,
    tie: float = 0.1,
) -> pd.DataFrame:
    """``items`` with a ``reasoning`` column of templated rationales (z per dimension from ``targets``)."""
    zcols = [f"z_{d}" for d in dimensions if f"z_{d}" in targets.columns]
    z = targets.set_index("reappraisal_id")[zcols]
    missing = set(items["first_id"]).union(items["second_id"]) - set(z.index)
    if missing:
        raise DataValidationError(
            f"{len(missing)} reappraisal id(s) of pairs are not in targets (e.g. {sorted(missing)[0]!r})",
            where="targets",
        )
    first = z.loc[items["first_id"]].to_dict("records")
    second = z.loc[items["second_id"]].to_dict("records")
    reasons = [
        templated_rationale(
            {k[2:]: v for k, v in f.items()},
            {k[2:]: v for k, v in s.items()},
            dimensions=dimensions,
            primary=primary,
            correct=c,
            tie=tie,
        )
        for f, s, c in zip(first, second, items["correct"])
    ]
    return items.assign(reasoning=reasons).reset_index(drop=True)


def _nan(x) -> bool:
    try:
        return math.isnan(float(x))
    except (TypeError, ValueError):
        return True
