"""What the report's first screen and its truth section say, from the claims ledger and the summary's tables. Pure.

* :func:`claim_lines`: each claim as one line: its verdict, the number its rule
  reads with the interval around it (read from the row the rule reads), and,
  on the demo, its truth verdict beside the data's.
* :func:`truth_coverage`: the share of intervals covering their truth, per
  table of ``truth.csv``, with each miss named.
* :func:`short_estimand`: a table's estimand with the one every win-rate table
  shares replaced by a pointer to the note that says it once.

Nothing here reads a file or formats HTML; :mod:`reappraisal.report.report_io`
reads the artifacts and the template lays the results out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import pandas as pd

#: Per interval (the name both bounds share before ``_low``/``_high``): the columns estimating its centre, first found.
ESTIMATE_OF: Mapping[str, tuple[str, ...]] = {
    "headline": ("win_rate",), "wilson": ("win_rate", "accuracy"), "boot": ("win_rate",),
    "cluster_t": ("win_rate",), "wild": ("win_rate",), "logit_jackknife": ("win_rate",),
    "ci": ("estimate", "win_rate", "accuracy", "mean_difference", "gap"),
    "diff_ci": ("diff_vs_headline_arm", "diff"), "best_of_n_ci": ("best_of_n_win_vs_random",), "gap_ci": ("gap",),
}
#: An estimate column read by a rule -> the interval around it in the same row.
INTERVAL_OF: Mapping[str, str] = {
    "win_rate": "headline", "estimate": "ci", "accuracy": "ci", "diff_vs_headline_arm": "diff_ci", "diff": "diff_ci",
    "best_of_n_win_vs_random": "best_of_n_ci", "gap": "gap_ci",
}
#: An estimate column -> the column holding its truth (demo tables).
TRUTH_OF: Mapping[str, str] = {"win_rate": "truth", "estimate": "truth", "diff_vs_headline_arm": "diff_truth",
                               "diff": "diff_truth"}


@dataclass(frozen=True)
class ClaimLine:
    """One claim as the first screen shows it."""

    id: str
    text: str
    verdict: str
    rule_verdict: str | None
    truth_verdict: str | None
    #: the estimate the rule rests on, its interval and its truth (None where the rule reads no such row)
    estimate: float | None = None
    low: float | None = None
    high: float | None = None
    truth: float | None = None
    #: the value the rule read, where it reads no interval (a ratio, a flag, a verdict)
    value: Any = None
    #: where the number comes from: ``table[key=value, ...].column``
    source: str = ""

    @property
    def agrees(self) -> bool | None:
        """Whether the data's verdict is the truth's (None without a truth verdict)."""
        return None if self.truth_verdict is None else self.rule_verdict == self.truth_verdict


def _number(v: Any) -> float | None:
    if v is None or isinstance(v, bool):
        return None
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _plain(v: Any) -> Any:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return v.item() if hasattr(v, "item") else v


def leaves(spec: Any) -> list[Mapping[str, Any]]:
    """The conditions of a claim's ``rule_spec`` (``{"all": [...]}`` or one condition), in order."""
    if isinstance(spec, Mapping) and isinstance(spec.get("all"), list):
        return [leaf for part in spec["all"] for leaf in leaves(part)]
    return [spec] if isinstance(spec, Mapping) and "table" in spec and "column" in spec else []


def select(frame: pd.DataFrame | None, where: Mapping[str, Any]) -> dict[str, Any] | None:
    """The first row of ``frame`` matching ``where`` (values compared as text), or None."""
    if frame is None or frame.empty:
        return None
    sel = frame
    for key, value in (where or {}).items():
        if key not in sel.columns:
            return None
        sel = sel[sel[key].astype(str) == str(value)]
    return None if sel.empty else {k: _plain(v) for k, v in sel.iloc[0].to_dict().items()}


def interval_in_row(row: Mapping[str, Any], column: str) -> tuple[str, str, str] | None:
    """(estimate, low, high) columns of the interval ``column`` belongs to (a bound, or an estimate with its
    interval in the row), or None."""
    base = None
    for suffix in ("_low", "_high"):
        if column.endswith(suffix):
            base = column[: -len(suffix)]
    if base is None:
        base = INTERVAL_OF.get(column)
    if base is None or f"{base}_low" not in row or f"{base}_high" not in row:
        return None
    estimate = next((c for c in ESTIMATE_OF.get(base, ()) if c in row), None)
    if estimate is None:
        return None
    return estimate, f"{base}_low", f"{base}_high"


def _source(leaf: Mapping[str, Any], column: str) -> str:
    where = ", ".join(f"{k}={v}" for k, v in (leaf.get("where") or {}).items())
    return f"{leaf['table']}[{where}].{column}"


def claim_line(claim: Mapping[str, Any], frames: Mapping[str, pd.DataFrame]) -> ClaimLine:
    """The claim with the number its rule rests on: the first condition reading an interval (or an estimate
    with one) gives the estimate, the interval and the truth; else the first condition's value."""
    base = dict(id=str(claim["id"]), text=" ".join(str(claim.get("text") or "").split()), verdict=str(claim["verdict"]),
                rule_verdict=claim.get("rule_verdict"), truth_verdict=claim.get("truth_verdict"))
    conditions = leaves(claim.get("rule_spec"))
    for leaf in conditions:
        row = select(frames.get(str(leaf["table"])), leaf.get("where") or {})
        found = interval_in_row(row, str(leaf["column"])) if row else None
        if found:
            est, low, high = found
            truth = TRUTH_OF.get(est)
            return ClaimLine(**base, estimate=_number(row[est]), low=_number(row[low]), high=_number(row[high]),
                             truth=_number(row.get(truth)) if truth else None,
                             source=_source(leaf, f"{est} [{low}, {high}]"))
    if conditions:
        leaf = conditions[0]
        return ClaimLine(**base, value=_plain(claim.get("value")), source=_source(leaf, str(leaf["column"])))
    return ClaimLine(**base, value=_plain(claim.get("value")), source=str(claim.get("rule") or ""))


def claim_lines(claims: Sequence[Mapping[str, Any]], frames: Mapping[str, pd.DataFrame]) -> list[ClaimLine]:
    return [claim_line(c, frames) for c in claims]


def truth_agreement(claims: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """How many claims with a truth verdict get the same verdict from the data, and which do not (None: no
    claim has a truth verdict, as on a preset whose world is not known)."""
    checked = [c for c in claims if c.get("truth_verdict")]
    if not checked:
        return None
    return {"claims_with_truth": len(checked),
            "agree": sum(c.get("rule_verdict") == c["truth_verdict"] for c in checked),
            "disagree": [str(c["id"]) for c in checked if c.get("rule_verdict") != c["truth_verdict"]]}


@dataclass(frozen=True)
class Miss:
    """An interval that does not cover its truth."""

    label: str
    estimate: float
    low: float
    high: float
    truth: float
    truth_se: float | None

    @property
    def distance_in_se(self) -> float | None:
        """How far the truth lies outside the interval, in the truth's own Monte Carlo standard errors."""
        gap = self.low - self.truth if self.truth < self.low else self.truth - self.high
        return gap / self.truth_se if self.truth_se else None


@dataclass(frozen=True)
class Coverage:
    table: str
    n: int
    covered: int
    misses: tuple[Miss, ...]

    @property
    def share(self) -> float:
        return self.covered / self.n if self.n else float("nan")


def miss_label(row: Mapping[str, Any]) -> str:
    """``system − versus vs opponent (pool)``; the parts a row lacks are left out."""
    text = str(row["system"])
    versus = _plain(row.get("versus"))
    if versus is not None and str(versus) != "" and str(versus) != str(row.get("opponent")):
        text += f" − {versus}"
    opponent = _plain(row.get("opponent"))
    if opponent is not None:
        text += f" vs {opponent}"
    pool = _plain(row.get("pool"))
    return text + (f" ({pool})" if pool is not None else "")


def truth_coverage(frame: pd.DataFrame) -> tuple[Coverage, list[Coverage]]:
    """(all intervals, per table in the frame's order): how many cover their truth, and the misses."""
    def one(name: str, part: pd.DataFrame) -> Coverage:
        covered = part["covered"].astype(str).str.lower().isin(["true", "1", "1.0"])
        misses = tuple(Miss(miss_label(r), float(r["estimate"]), float(r["low"]), float(r["high"]), float(r["truth"]),
                            _number(r.get("truth_se")))
                       for r in part[~covered].to_dict("records"))
        return Coverage(name, len(part), int(covered.sum()), misses)

    per_table = [one(str(name), part) for name, part in frame.groupby("table", sort=False)]
    total = Coverage("all", sum(c.n for c in per_table), sum(c.covered for c in per_table),
                     tuple(m for c in per_table for m in c.misses))
    return total, per_table


def short_estimand(estimand: str | None, shared: str | None, pointer: str) -> str | None:
    """``estimand`` with ``shared`` (the estimand every win-rate table shares, said once in the how-to-read
    note) replaced by ``pointer``; None when nothing is left to say beyond the pointer."""
    if not estimand:
        return None
    if shared and shared in estimand:
        rest = estimand.replace(shared, "").strip(" ;:,")
        return f"{pointer}; {rest}" if rest else None
    return estimand
