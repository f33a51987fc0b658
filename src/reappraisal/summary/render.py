"""A :class:`~reappraisal.summary.summary_table.Table` as CSV, Markdown and LaTeX (booktabs).

CSV keeps full precision and every column (it is what other programs
read). Markdown and LaTeX are for people: the table's ``display`` columns
when it declares them (intervals as "[low, high]"), rates with 3 decimals, p-values with 3 significant
digits, counts as integers, missing values as an empty cell (Markdown) or
``--`` (LaTeX). LaTeX output is a ``table`` environment with booktabs rules
(``\\toprule``/``\\midrule``/``\\bottomrule``), the caption and the label
``tab:<name>``; text is escaped.
"""

from __future__ import annotations

import math
import re

import pandas as pd

from .summary_table import Table

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#",
    "_": r"\_", "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
}
_LATEX_RE = re.compile("|".join(re.escape(k) for k in _LATEX_SPECIAL))


def escape_latex(text: str) -> str:
    return _LATEX_RE.sub(lambda m: _LATEX_SPECIAL[m.group(0)], str(text))


def _is_p_column(name: str) -> bool:
    return name == "p" or name.startswith("p_") or name.endswith("_p") or "_p_" in name or name.startswith("signflip")


def format_cell(value, column: str, missing: str = "") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return missing
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) or (hasattr(value, "dtype") and str(getattr(value, "dtype", "")).startswith("int")):
        return str(int(value))
    if isinstance(value, float):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        if _is_p_column(column):
            return f"{value:.3g}"
        if value.is_integer() and column.startswith(("n_", "contests", "scenarios", "errors", "runs", "run", "steps")):
            return str(int(value))
        return f"{value:.3f}"
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    return str(value)


def _cells(frame: pd.DataFrame, column: str, missing: str) -> list[str]:
    return [format_cell(v.item() if hasattr(v, "item") else v, column, missing) for v in frame[column]]


def display_frame(frame: pd.DataFrame, missing: str = "", display=None) -> pd.DataFrame:
    """Formatted strings; with ``display`` only its headings, intervals as "[low, high]"."""
    out = pd.DataFrame(index=frame.index)
    if display is None:
        for column in frame.columns:
            out[column] = _cells(frame, column, missing)
        return out
    for heading, columns in display:
        if len(columns) == 1:
            out[heading] = _cells(frame, columns[0], missing)
        else:
            low, high = _cells(frame, columns[0], missing), _cells(frame, columns[1], missing)
            out[heading] = [f"[{a}, {b}]" if a and b and missing not in (a, b) else missing
                            for a, b in zip(low, high)]
    return out


def to_csv(table: Table) -> str:
    return table.frame.to_csv(index=False, lineterminator="\n")


def to_markdown(table: Table) -> str:
    head = f"**{table.title}.** {table.caption}\n\n"
    if table.frame.empty:
        return head + "_(no rows)_\n"
    return head + display_frame(table.frame, display=table.display).to_markdown(index=False, disable_numparse=True) + "\n"


def to_latex(table: Table) -> str:
    shown = display_frame(table.frame, missing="--", display=table.display)
    headings = list(shown.columns)
    shown = shown.map(escape_latex) if not shown.empty else pd.DataFrame({c: [] for c in headings})
    shown.columns = [escape_latex(c) for c in headings]
    body = shown.to_latex(index=False, escape=False, column_format="l" * max(1, len(shown.columns)))
    return (
        "\\begin{table}\n\\centering\n"
        f"\\caption{{{escape_latex(table.title)}. {escape_latex(table.caption)}}}\n"
        f"\\label{{tab:{table.name}}}\n{body}\\end{{table}}\n"
    )
