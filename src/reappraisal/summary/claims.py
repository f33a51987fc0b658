"""The claims ledger: each claim of the paper as a rule over computed numbers (pure).

``claims.yaml`` (schema: ``workflow/schemas/claims.schema.yaml``) declares
each claim with a rule:

- a condition ``table[where].column <op> than`` over a summary table (one
  row must match ``where``); ``than`` is a number, a boolean, a string, a
  summary setting (``{setting: bar}``) or another column of the same row;
- ``all: [condition, ...]``: every condition must hold;
- ``card_interval``: a figure quoted in a model card (win rate, n, quoted
  lower bound) is recomputed at the summary's confidence: it holds when the
  Wilson bound rounds to the quoted one, and is flagged with the bound it
  does match otherwise (e.g. the Wald bound).

Verdicts: ``holds`` / ``fails``; ``retracted`` when the claim carries a
retraction (its rule is still evaluated: ``rule_verdict`` says what the
numbers say today); ``not_computable`` when a table it needs is not
computable on this preset, the row is absent or the number is undefined
(``note`` says why). Flags never change a verdict: ``flags`` lists the
caveats of the rows a rule read (a row's :data:`FLAG_COLUMNS` text, e.g. a
significant run effect behind a pooled headline rate, or the earlier
confirmation attempts behind a confirmation), each prefixed with
the row. Each claim's lineage is the union of the artifacts
behind the rows it read, so a changed input file changes exactly the
lineage of the claims computed from it.
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
from scipy import stats as sps

from reappraisal.errors import PipelineInputError
from reappraisal.stats import wilson_interval

from .summary_table import Table
from .texts import percent

VERDICTS = ("holds", "fails", "retracted", "not_computable")
#: Columns whose text (when set) a claim reading the row carries in its ``flags``.
FLAG_COLUMNS = ("run_effect_flag", "attempts_flag")
_OPS = {">": operator.gt, ">=": operator.ge, "<": operator.lt, "<=": operator.le, "==": operator.eq,
        "!=": operator.ne}


class NotComputable(Exception):
    """The numbers a rule needs do not exist on this preset."""


def validate_ledger(doc: Any, schema: Mapping, tables: Mapping[str, Table], where: str) -> list[dict]:
    """Check ``claims.yaml`` against its schema and the tables; return its claims.

    A typo (unknown table or column, duplicate id, a replacement that names
    no claim) is the user's to fix: :class:`PipelineInputError` naming the
    file and the claim. A table that is merely empty on this preset is not
    an error (the claim becomes not computable).
    """
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        key = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path).lstrip(".")
        raise PipelineInputError(err.message, where=f"{where}: {key or '(top level)'}")
    claims = doc["claims"]
    ids = [c["id"] for c in claims]
    for i, claim in enumerate(claims):
        here = f"{where}: claims[{i}] ({claim['id']})"
        if ids.count(claim["id"]) > 1:
            raise PipelineInputError(f"duplicate claim id {claim['id']!r}", where=here)
        replacement = (claim.get("retraction") or {}).get("replacement")
        if replacement is not None and replacement not in ids:
            raise PipelineInputError(f"retraction names replacement {replacement!r}, which is not a claim", where=here)
        for condition in rule_conditions(claim["rule"]):
            table = tables.get(condition["table"])
            if table is None:
                raise PipelineInputError(
                    f"unknown table {condition['table']!r} (known: {', '.join(sorted(tables))})", where=here)
            needed = [condition["column"], *condition["where"]]
            than = condition["than"]
            if isinstance(than, Mapping) and "column" in than:
                needed.append(than["column"])
            missing = [c for c in needed if c not in table.frame.columns]
            if missing:
                raise PipelineInputError(f"table {table.name!r} has no column(s) {missing}", where=here)
    return claims


def rule_conditions(rule: Mapping) -> list[Mapping]:
    if "card_interval" in rule:
        return []
    return list(rule["all"]) if "all" in rule else [rule]


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return repr(value) if isinstance(value, str) else str(value)


def rule_text(rule: Mapping, settings: Mapping[str, Any]) -> str:
    """The rule as one readable line, e.g. ``headline[arm=committee, ...].headline_low > bar (0.608)``."""
    if "card_interval" in rule:
        c = rule["card_interval"]
        wins = c.get("wins", c["rate"] * c["n"])
        return (f"Wilson {percent(settings['confidence'])} lower bound of {wins:g}/{c['n']} rounds to "
                f"the quoted {c['quoted_low']} at {c['decimals']} decimals")
    parts = []
    for cond in rule_conditions(rule):
        where = ", ".join(f"{k}={v}" for k, v in cond["where"].items())
        than = cond["than"]
        if isinstance(than, Mapping) and "setting" in than:
            than_text = f"{than['setting']} ({_fmt(settings.get(than['setting']))})"
        elif isinstance(than, Mapping):
            than_text = than["column"]
        else:
            than_text = _fmt(than)
        parts.append(f"{cond['table']}[{where}].{cond['column']} {cond['op']} {than_text}")
    return " and ".join(parts)


@dataclass
class Outcome:
    values: list = field(default_factory=list)
    holds: bool | None = None
    sources: set = field(default_factory=set)
    flag: str | None = None
    flags: list = field(default_factory=list)
    note: str | None = None
    details: dict = field(default_factory=dict)


def _plain(value):
    if isinstance(value, (np.floating, np.integer, np.bool_)):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def select_row(table: Table, where: Mapping) -> tuple[Mapping, tuple[str, ...]]:
    if table.status != "ok":
        raise NotComputable(f"table {table.name} is not computable here: {table.note}")
    frame = table.frame
    mask = np.ones(len(frame), dtype=bool)
    for column, value in where.items():
        mask &= (frame[column].astype(str) == str(value)).to_numpy()
    hits = np.flatnonzero(mask)
    label = ", ".join(f"{k}={v}" for k, v in where.items())
    if len(hits) == 0:
        raise NotComputable(f"no row of table {table.name} has {label}")
    if len(hits) > 1:
        raise NotComputable(f"{len(hits)} rows of table {table.name} have {label}; the rule must select one")
    return frame.iloc[hits[0]].to_dict(), table.sources[hits[0]]


def _condition(cond: Mapping, tables: Mapping[str, Table], settings: Mapping[str, Any], out: Outcome) -> bool:
    row, sources = select_row(tables[cond["table"]], cond["where"])
    out.sources.update(sources)
    label = f"{cond['table']}[" + ", ".join(f"{k}={v}" for k, v in cond["where"].items()) + "]"
    for flag in (row.get(column) for column in FLAG_COLUMNS):
        if isinstance(flag, str) and flag and f"{label}: {flag}" not in out.flags:
            out.flags.append(f"{label}: {flag}")
    value = _plain(row[cond["column"]])
    out.values.append(value)
    than = cond["than"]
    if isinstance(than, Mapping) and "setting" in than:
        if than["setting"] not in settings:
            raise NotComputable(f"no summary setting {than['setting']!r}")
        than = settings[than["setting"]]
    elif isinstance(than, Mapping):
        than = _plain(row[than["column"]])
    if value is None or than is None:
        raise NotComputable(f"{cond['table']}.{cond['column']} is undefined for {cond['where']}"
                            + (f" ({row['note']})" if row.get("note") else ""))
    if isinstance(value, str) or isinstance(than, str):
        value, than = str(value), str(than)
    return bool(_OPS[cond["op"]](value, than))


def card_interval(spec: Mapping, *, confidence: float) -> Outcome:
    """Recompute a quoted card interval: Wilson (the stated method) and, for the flag, Wald."""
    n = int(spec["n"])
    k = float(spec.get("wins", spec["rate"] * n))
    decimals = int(spec["decimals"])
    p = k / n
    wilson_low, _ = wilson_interval(k, n, confidence)
    z = sps.norm.isf((1 - confidence) / 2)
    wald_low = p - z * math.sqrt(p * (1 - p) / n)
    quoted = round(float(spec["quoted_low"]), decimals)
    out = Outcome(values=[float(wilson_low)])
    out.details = {"wins": k, "n": n, "rate": p, "wilson_low": float(wilson_low), "wald_low": float(wald_low),
                   "quoted_low": quoted}
    out.holds = round(float(wilson_low), decimals) == quoted
    if not out.holds:
        level = percent(confidence)
        if round(wald_low, decimals) == quoted:
            out.flag = (f"the quoted {level} lower bound {quoted} for {p:.{decimals}f} of {n} is the Wald bound "
                        f"({wald_low:.4f}); the Wilson bound is {wilson_low:.4f} ({wilson_low:.{decimals}f})")
        else:
            out.flag = (f"the quoted {level} lower bound {quoted} matches neither the Wilson bound ({wilson_low:.4f}) "
                        f"nor the Wald bound ({wald_low:.4f}) of {k:g}/{n}")
    return out


def evaluate_claims(claims: list[Mapping], tables: Mapping[str, Table], settings: Mapping[str, Any]) -> list[dict]:
    """Evaluate every claim; returns records without lineage hashes (``sources`` = artifact paths)."""
    records = []
    for claim in claims:
        rule = claim["rule"]
        if "card_interval" in rule:
            out = card_interval(rule["card_interval"], confidence=float(settings["confidence"]))
        else:
            out = Outcome()
            try:
                results = [_condition(c, tables, settings, out) for c in rule_conditions(rule)]
                out.holds = all(results)
            except NotComputable as exc:
                out.holds, out.note = None, str(exc)
        rule_verdict = "not_computable" if out.holds is None else ("holds" if out.holds else "fails")
        retraction = claim.get("retraction")
        verdict = "retracted" if retraction else rule_verdict
        records.append({
            "id": claim["id"],
            "text": claim["text"],
            "source": claim.get("source"),
            "rule": rule_text(rule, settings),
            "rule_spec": rule,
            "value": out.values[0] if out.values else None,
            "values": out.values,
            "verdict": verdict,
            "rule_verdict": rule_verdict,
            "retraction": ({"date": str(retraction["date"]), "reason": retraction["reason"],
                            "replacement": retraction.get("replacement")} if retraction else None),
            "flag": out.flag,
            "flags": out.flags,
            "note": out.note,
            "details": out.details or None,
            "sources": sorted(out.sources),
        })
    return records
