"""Every number a claim quotes, as a LaTeX macro a paper can ``\\input`` (pure).

``numbers.tex`` defines one macro per number, named after the claim id in
``claims.yaml`` and the column it comes from (``committee_beats_gpt4`` ·
``headline_low`` -> ``\\CommitteeBeatsGptFourHeadlineLow``), printed exactly
as the tables print it, each with a comment naming its table, row and
column; ``numbers.json`` is its twin for other tools. A number in a paper's
text then has a source, regenerated with the tables, instead of being typed.

For a rule over a table row the macros are the rule's column and the row's
key numbers (:data:`KEY_COLUMNS`: estimate, contests, interval); for a card
interval the figures the card quoted and the bounds recomputed from them.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from .claims import NotComputable, rule_conditions, select_row
from .render import escape_latex, format_cell
from .summary_table import Table

#: The numbers a claim about a row of each table quotes besides the rule's own column.
KEY_COLUMNS: dict[str, tuple[str, ...]] = {
    "headline": ("win_rate", "contests", "wilson_low", "headline_low", "headline_high"),
    "ood": ("win_rate", "contests", "wilson_low", "headline_low", "headline_high"),
    "head_to_head": ("estimate", "contests", "ci_low", "ci_high"),
    "ablation": ("win_rate", "headline_low", "headline_high", "diff_vs_headline_arm", "diff_ci_low", "diff_ci_high"),
    "reward_models": ("accuracy", "ci_low", "ci_high", "n_pairs"),
    "grm": ("accuracy", "ci_low", "ci_high", "n_pairs"),
    "judge_calibration": ("agreement_half", "kappa", "n_separated_pairs"),
    "training_health": ("verdict",),
}
#: The figures of a card-interval rule: the card's (rate, n, quoted_low) and the recomputed bounds.
CARD_INTERVAL_FIGURES = ("rate", "n", "quoted_low", "wilson_low", "wald_low")
_DIGITS = "Zero One Two Three Four Five Six Seven Eight Nine".split()


def macro_word(text: Any) -> str:
    """``text`` as letters only, CamelCase, digits spelled (``gpt-4-0314`` -> ``GptFourZeroThreeOneFour``)."""
    words = re.findall(r"[A-Za-z]+|\d", str(text))
    return "".join(_DIGITS[int(w)] if w.isdigit() else w[:1].upper() + w[1:].lower() for w in words)


def printed(value: Any, column: str) -> str:
    """``value`` as the tables print it (LaTeX text)."""
    if hasattr(value, "item"):
        value = value.item()
    text = format_cell(value, column, missing="--")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and text.startswith("-"):
        return "\\ensuremath{-}" + text[1:]  # a minus sign, not a hyphen, in running text
    return escape_latex(text)


def claim_numbers(claims: Sequence[Mapping], tables: Mapping[str, Table]) -> list[dict]:
    """One record per macro: macro, printed, value, claim, and where it comes from (table, row, column).

    ``claims``: evaluated claims (``rule_spec`` and ``details`` as in claims.json).
    """
    out: list[dict] = []
    for claim in claims:
        rule = claim["rule_spec"]
        stem = macro_word(claim["id"])
        if "card_interval" in rule:
            figures = {**rule["card_interval"], **(claim.get("details") or {})}
            for name in CARD_INTERVAL_FIGURES:
                if figures.get(name) is not None:
                    out.append(_record(stem + macro_word(name), figures[name], name, claim["id"],
                                       source={"card_interval": name}))
            continue
        conditions = rule_conditions(rule)
        varying = sorted({k for c in conditions for k in c["where"]
                          if len({str(d["where"].get(k)) for d in conditions}) > 1})
        for cond in conditions:
            table = tables[cond["table"]]
            try:
                row, _ = select_row(table, cond["where"])
            except NotComputable:  # a row this preset cannot compute: no macro (the claim says not_computable)
                continue
            suffix = "".join(macro_word(cond["where"][k]) for k in varying if k in cond["where"])
            for column in dict.fromkeys([cond["column"], *KEY_COLUMNS.get(cond["table"], ())]):
                if column in row:
                    out.append(_record(stem + suffix + macro_word(column), row[column], column, claim["id"],
                                       source={"table": cond["table"], "where": dict(cond["where"]), "column": column}))
    seen: dict[str, dict] = {}
    for rec in out:  # the same number quoted twice by one claim (e.g. ci_low in two conditions): once
        seen.setdefault(rec["macro"], rec)
    return list(seen.values())


def _record(macro: str, value: Any, column: str, claim: str, *, source: Mapping) -> dict:
    plain = value.item() if hasattr(value, "item") else value
    return {"macro": macro, "printed": printed(plain, column), "value": plain, "claim": claim, **source}


def numbers_tex(records: Sequence[Mapping]) -> str:
    """``numbers.tex``: a ``\\newcommand`` per record, each after a comment saying where it comes from."""
    lines = ["% Numbers the claims quote, generated by `reappraisal summarize` from results/summary/tables/",
             "% (do not edit: rerun the pipeline). \\input{numbers.tex}, then write e.g. \\CommitteeBeatsGptFourWinRate.", ""]
    for rec in records:
        if "table" in rec:
            where = ", ".join(f"{k}={v}" for k, v in rec["where"].items())
            origin = f"table {rec['table']}, row {where}, column {rec['column']}"
        else:
            origin = f"card interval figure {rec['card_interval']}"
        lines.append(f"% claim {rec['claim']}: {origin}")
        lines.append(f"\\newcommand{{\\{rec['macro']}}}{{{rec['printed']}}}")
    return "\n".join(lines) + "\n"
