"""The truth beside every estimate (demo only): truth columns, the truth table, the world table, truth verdicts. Pure.

The truth stage (:mod:`reappraisal.evaluation.truth_io`) gives the true value
of every (system, opponent, pool) win rate on the demo. Here:

* :func:`attach_truth` adds ``truth`` / ``truth_se`` (and ``diff_truth`` /
  ``diff_truth_se`` where a row also estimates a difference) to the rate
  tables, for exactly the estimand each row estimates: a win rate, or the
  difference of two win rates against one opponent on one pool.
* :func:`truth_table`: one row per interval the report shows for a win rate
  or a difference (headline, OOD, head-to-head, best-of-N, selection,
  confirmation) with ``estimate, low, high, truth, truth_se, covered``.
* :func:`truth_verdicts`: each claim's rule applied to the truths (every
  condition reading a win-rate estimate or an interval bound reads the
  truth instead; conditions on other columns read their values). A rule
  that reads no win rate, or that says an interval contains a value (no
  detectable difference: a truth is never exactly that value), has no
  truth verdict.

The truth is conditional on the demo's scenarios; the headline interval
targets a population of scenarios, so coverage of these truths is a check
of the pipeline on this world, not a coverage guarantee.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np
import pandas as pd

from .claims import _OPS, NotComputable, _plain, rule_conditions, select_row
from .summary_table import Table

#: Per table: columns estimating the row's win rate, and columns estimating its difference (-> diff_truth).
RATE_COLUMNS = {
    "headline": ("win_rate", "pooled_rate", "headline_low", "headline_high", "wilson_low", "wilson_high", "boot_low",
                 "boot_high", "cluster_t_low", "cluster_t_high", "wild_low", "wild_high"),
    "ood": ("win_rate", "pooled_rate", "headline_low", "headline_high", "wilson_low", "wilson_high", "boot_low",
            "boot_high", "cluster_t_low", "cluster_t_high", "wild_low", "wild_high"),
    "ablation": ("win_rate", "headline_low", "headline_high"),
    "head_to_head": ("estimate", "ci_low", "ci_high"),
    "best_of_n": ("win_rate", "ci_low", "ci_high"),
    "selection": ("win_rate", "ci_low", "ci_high"),
    "confirmation": ("win_rate", "ci_low", "ci_high"),
}
DIFF_COLUMNS = {
    "ablation": ("diff_vs_headline_arm", "diff_ci_low", "diff_ci_high"),
    "best_of_n": ("diff", "diff_ci_low", "diff_ci_high"),
}
#: Tables whose values are truths themselves (fresh draws of the demo world): a claim on them has a truth
#: verdict, the rule's own.
TRUTH_VALUED_TABLES = frozenset({"trajectory", "trajectory_fit"})
#: The intervals the truth table checks: (table, estimate, low, high, truth column).
INTERVALS = (
    ("headline", "win_rate", "headline_low", "headline_high", "truth"),
    ("ood", "win_rate", "headline_low", "headline_high", "truth"),
    ("head_to_head", "estimate", "ci_low", "ci_high", "truth"),
    ("ablation", "diff_vs_headline_arm", "diff_ci_low", "diff_ci_high", "diff_truth"),
    ("best_of_n", "diff", "diff_ci_low", "diff_ci_high", "diff_truth"),
    ("selection", "win_rate", "ci_low", "ci_high", "truth"),
    ("confirmation", "win_rate", "ci_low", "ci_high", "truth"),
)
TRUTH_COLUMNS = ["table", "system", "versus", "opponent", "pool", "estimate", "low", "high", "truth", "truth_se",
                 "covered"]


class Truths:
    """(system, opponent, pool) -> (truth, se), and (system, versus, opponent, pool) -> the difference's, from
    the truth stage's table."""

    def __init__(self, frame: pd.DataFrame):
        self.frame = frame
        differences = frame["kind"] == "difference"
        self._map = {(str(r.system), str(r.opponent), str(r.pool)): (float(r.truth), float(r.truth_se))
                     for r in frame[~differences].itertuples(index=False)}
        self._diff = {(str(r.system), str(r.versus), str(r.opponent), str(r.pool)): (float(r.truth), float(r.truth_se))
                      for r in frame[differences].itertuples(index=False)}

    def get(self, system, opponent, pool) -> tuple[float, float] | None:
        return self._map.get((str(system), str(opponent), str(pool)))

    def diff(self, a, b, opponent, pool) -> tuple[float, float] | None:
        """A's truth minus B's: the truth stage's own row where both read one opponent's draws (its error counts
        those draws once), else the two truths' difference, whose errors add (independent draws)."""
        key = (str(a), str(b), str(opponent), str(pool))
        if key in self._diff:
            return self._diff[key]
        swapped = (str(b), str(a), str(opponent), str(pool))
        if swapped in self._diff:
            value, se = self._diff[swapped]
            return -value, se
        x, y = self.get(a, opponent, pool), self.get(b, opponent, pool)
        if x is None or y is None:
            return None
        return x[0] - y[0], math.hypot(x[1], y[1])


def _set(frame: pd.DataFrame, i: int, column: str, value: tuple[float, float] | None) -> None:
    if value is not None:
        frame.loc[i, column], frame.loc[i, column + "_se"] = value


def attach_truth(tables: Mapping[str, Table], truths: Truths, *, headline_arm: str, headline_opponent: str,
                 confirm_pool: str = "confirm") -> None:
    """Add the truth columns to every rate table in place (NaN where the truth stage has no such pair)."""
    for name in RATE_COLUMNS:
        table = tables.get(name)
        if table is None or table.status != "ok":
            continue
        f = table.frame
        for col in ("truth", "truth_se", *(("diff_truth", "diff_truth_se") if name in DIFF_COLUMNS else ())):
            f[col] = np.nan
        for i, r in f.iterrows():
            if name in ("headline", "ood"):
                _set(f, i, "truth", truths.get(r["arm"], r["opponent"], r["pool"]))
            elif name == "ablation":
                _set(f, i, "truth", truths.get(r["arm"], headline_opponent, "train"))
                if r["arm"] != headline_arm:
                    _set(f, i, "diff_truth", truths.diff(r["arm"], headline_arm, headline_opponent, "train"))
            elif name == "head_to_head":
                if r["kind"] == "direct":
                    _set(f, i, "truth", truths.get(r["arm"], r["opponent"], r["pool"]))
                else:
                    _set(f, i, "truth", truths.diff(r["arm"], r["versus"], r["opponent"], r["pool"]))
            elif name == "best_of_n":
                _set(f, i, "truth", truths.get(r["system"], r["opponent"], r["pool"]))
                _set(f, i, "diff_truth", truths.diff(r["system"], r["single_pass"], r["opponent"], r["pool"]))
            elif name == "selection":
                _set(f, i, "truth", truths.get(r["system"], r["opponent"], r["pool"]))
            elif name == "confirmation":
                _set(f, i, "truth", truths.get(r["system"], r["opponent"], confirm_pool))


def truth_table(tables: Mapping[str, Table]) -> Table:
    """Every checked interval beside its truth (run :func:`attach_truth` first)."""
    rows, sources = [], []
    for name, est, low, high, truth in INTERVALS:
        table = tables.get(name)
        if table is None or table.status != "ok" or truth not in table.frame:
            continue
        for (_, r), src in zip(table.frame.iterrows(), table.sources):
            if pd.isna(r.get(truth)) or pd.isna(r.get(low)) or pd.isna(r.get(high)):
                continue
            rows.append({
                "table": name, "system": r.get("arm", r.get("system")),
                "versus": r.get("versus") if name == "head_to_head" else (
                    r.get("single_pass") if name == "best_of_n" else None),
                "opponent": r.get("opponent"), "pool": r.get("pool", "confirm" if name == "confirmation" else None),
                "estimate": r[est], "low": r[low], "high": r[high], "truth": r[truth], "truth_se": r[truth + "_se"],
                "covered": bool(r[low] <= r[truth] <= r[high]),
            })
            sources.append(src)
    frame = pd.DataFrame(rows, columns=TRUTH_COLUMNS)
    share = frame["covered"].mean() if len(frame) else float("nan")
    caption = (f"Each interval the summary shows for a win rate or a difference of win rates, beside the truth: the "
               f"panel's expected verdict between the two systems' answer distributions on these scenarios, computed "
               f"from the gold of fresh answers (Monte Carlo error truth_se). {int(frame['covered'].sum())} of "
               f"{len(frame)} intervals cover their truth ({share:.0%}). The headline interval targets a population "
               f"of scenarios; this truth is conditional on the demo's scenarios, so the share is a check of the "
               f"pipeline on this world, not its coverage.")
    display = [("table", ("table",)), ("system", ("system",)), ("versus", ("versus",)), ("opponent", ("opponent",)),
               ("pool", ("pool",)), ("estimate", ("estimate",)), ("interval", ("low", "high")), ("truth", ("truth",)),
               ("covered", ("covered",))]
    return Table("truth", "Does the pipeline tell the truth?", caption,
                 "the estimand of each row's interval, computed exactly from the demo world's gold", frame, sources,
                 display=display)


def world_summary_table(world: pd.DataFrame) -> Table:
    """Gold quantiles of each group of texts per scenario (the world table of the truth stage)."""
    caption = ("Gold (the demo world's expected quality; human mean 0, SD about 1) of the human reappraisals per "
               "scenario, of each opponent's answers, of every drawn system's training-scenario answers and of the "
               "gold oracle (best-of-n of the base policy by gold).")
    return Table("world", "The demo world: gold per scenario and group", caption,
                 "quantiles of the gold of each group's texts", world.copy())


def _brackets_a_value(conditions: list[Mapping]) -> bool:
    """A rule reading both bounds of one row's interval against one value ("the interval contains X": no
    detectable difference): a truth is never exactly X, so such a claim has no truth verdict."""
    seen = {}
    for c in conditions:
        key = (c["table"], tuple(sorted(c["where"].items())), str(c["than"]))
        seen.setdefault(key, set()).add(c["op"].strip("="))
    return any(ops >= {"<", ">"} for ops in seen.values())


def truth_verdicts(records: list[dict], claims: list[Mapping], tables: Mapping[str, Table],
                   settings: Mapping[str, Any]) -> None:
    """Add ``truth_verdict`` (holds / fails / None) and ``truth_values`` to each claim record in place."""
    by_id = {c["id"]: c for c in claims}
    for record in records:
        rule = by_id[record["id"]]["rule"]
        record["truth_verdict"], record["truth_values"] = None, []
        conditions = rule_conditions(rule)
        if not conditions or _brackets_a_value(conditions):
            continue
        results, read_truth = [], False
        try:
            for cond in conditions:
                name, column = cond["table"], cond["column"]
                row, _ = select_row(tables[name], cond["where"])
                if column in RATE_COLUMNS.get(name, ()):
                    value, read_truth = _plain(row.get("truth")), True
                elif column in DIFF_COLUMNS.get(name, ()):
                    value, read_truth = _plain(row.get("diff_truth")), True
                elif name in TRUTH_VALUED_TABLES:
                    value, read_truth = _plain(row.get(column)), True
                else:
                    value = _plain(row.get(column))
                than = cond["than"]
                if isinstance(than, Mapping) and "setting" in than:
                    than = settings.get(than["setting"])
                elif isinstance(than, Mapping):
                    than = _plain(row.get(than["column"]))
                if value is None or than is None:
                    raise NotComputable("no truth")
                if isinstance(value, str) or isinstance(than, str):
                    value, than = str(value), str(than)
                record["truth_values"].append(value)
                results.append(bool(_OPS[cond["op"]](value, than)))
        except (NotComputable, KeyError):
            continue
        if read_truth:
            record["truth_verdict"] = "holds" if all(results) else "fails"
