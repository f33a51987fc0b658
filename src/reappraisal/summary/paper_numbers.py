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

Each number carries its claim's standing (:func:`standing`): ``confirmed``
(the claim holds on the fresh confirmation pool), ``exploratory`` (it holds,
but not as the pre-registered test on a fresh pool), ``retracted`` or ``refused`` (the numbers
do not support it: it fails, or cannot be computed on this preset). A
retracted or refused claim's macros exist only under a prefix
(:data:`PREFIXES`, ``\\RetractedCommitteeBeatsGptFourWinRate``), so a paper
that cites the plain name stops with an undefined macro instead of printing
a number its claim no longer stands on; every macro's comment names its
standing.
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
#: What a number may be cited as, from its claim (:func:`standing`).
STANDINGS = ("confirmed", "exploratory", "retracted", "refused")
#: The macro prefix of the standings a paper must not cite as support; the others keep the plain name.
PREFIXES = {"retracted": "Retracted", "refused": "Refused"}
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


def standing(claim: Mapping) -> str:
    """The claim's standing (:data:`STANDINGS`) from its verdict and the tables its rule reads."""
    verdict = claim.get("verdict")
    if verdict == "retracted":
        return "retracted"
    if verdict != "holds":  # fails, or not computable on this preset
        return "refused"
    rule = claim["rule_spec"]
    tables = set() if "card_interval" in rule else {c["table"] for c in rule_conditions(rule)}
    return "confirmed" if tables == {"confirmation"} else "exploratory"


def claim_numbers(claims: Sequence[Mapping], tables: Mapping[str, Table]) -> list[dict]:
    """One record per macro: macro, printed, value, claim, its standing, and where it comes from (table, row,
    column).

    ``claims``: evaluated claims (``rule_spec``, ``verdict`` and ``details`` as in claims.json).
    """
    out: list[dict] = []
    for claim in claims:
        rule = claim["rule_spec"]
        stand = standing(claim)
        stem = PREFIXES.get(stand, "") + macro_word(claim["id"])
        if "card_interval" in rule:
            figures = {**rule["card_interval"], **(claim.get("details") or {})}
            for name in CARD_INTERVAL_FIGURES:
                if figures.get(name) is not None:
                    out.append(_record(stem + macro_word(name), figures[name], name, claim["id"], stand,
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
                    out.append(_record(stem + suffix + macro_word(column), row[column], column, claim["id"], stand,
                                       source={"table": cond["table"], "where": dict(cond["where"]), "column": column}))
        power = claim.get("power") or {}
        if power.get("mde") is not None:  # the smallest effect the claim's design detects at 80 % power
            out.append(_record(stem + "Mde", power["mde"], "mde", claim["id"], stand,
                               source={"power": f"minimum detectable effect at {power['target_power']:g} power "
                                                f"({power['rule']})"}))
    seen: dict[str, dict] = {}
    for rec in out:  # the same number quoted twice by one claim (e.g. ci_low in two conditions): once
        seen.setdefault(rec["macro"], rec)
    return list(seen.values())


def _record(macro: str, value: Any, column: str, claim: str, stand: str, *, source: Mapping) -> dict:
    plain = value.item() if hasattr(value, "item") else value
    return {"macro": macro, "printed": printed(plain, column), "value": plain, "claim": claim, "standing": stand,
            **source}


def numbers_tex(records: Sequence[Mapping]) -> str:
    """``numbers.tex``: a ``\\newcommand`` per record, each after a comment saying its standing and where it comes
    from."""
    lines = ["% Numbers the claims quote, generated by `reappraisal summarize` from results/summary/tables/",
             "% (do not edit: rerun the pipeline). \\input{numbers.tex}, then write e.g. \\CommitteeBeatsGptFourWinRate.",
             "% Each macro's comment gives its claim's standing: confirmed (holds on the fresh confirmation pool),",
             "% exploratory (holds, not as the pre-registered test on a fresh pool), retracted, or refused (the numbers do not",
             "% support the claim). Retracted and refused numbers are defined only as \\Retracted... and \\Refused...:",
             "% the plain name of such a number is undefined, so a paper citing it stops instead of printing it.", ""]
    for rec in records:
        if "table" in rec:
            where = ", ".join(f"{k}={v}" for k, v in rec["where"].items())
            origin = f"table {rec['table']}, row {where}, column {rec['column']}"
        elif "power" in rec:
            origin = rec["power"]
        else:
            origin = f"card interval figure {rec['card_interval']}"
        lines.append(f"% claim {rec['claim']}, {rec['standing']}: {origin}")
        lines.append(f"\\newcommand{{\\{rec['macro']}}}{{{rec['printed']}}}")
    return "\n".join(lines) + "\n"
