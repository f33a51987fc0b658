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
    # comparisons and symbols are math: in text mode the default font encoding prints "<" as "¡"
    ">=": r"$\geq$", "<=": r"$\leq$", "<": r"$<$", ">": r"$>$", "≥": r"$\geq$", "≤": r"$\leq$",
    "θ̂": r"$\hat{\theta}$", "θ": r"$\theta$", "κ": r"$\kappa$", "λ": r"$\lambda$", "β": r"$\beta$", "α": r"$\alpha$",
    "δ": r"$\delta$", "ε": r"$\varepsilon$", "Σ": r"$\Sigma$", "σ": r"$\sigma$", "μ": r"$\mu$",
    "×": r"$\times$", "÷": r"$\div$", "±": r"$\pm$", "−": r"$-$", "·": r"$\cdot$", "²": r"$^2$",
    "√": r"$\surd$", "≈": r"$\approx$", "→": r"$\to$",
    "—": "---", "–": "--", "…": r"\ldots{}", "’": "'", "‘": "`", "“": "``", "”": "''",
}
_LATEX_RE = re.compile("|".join(re.escape(k) for k in sorted(_LATEX_SPECIAL, key=len, reverse=True)))


def escape_latex(text: str) -> str:
    """Text for LaTeX's text mode: special characters escaped, comparisons and Greek letters as math."""
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


#: What a document needs in its preamble to ``\input`` these tables.
LATEX_PACKAGES = ("booktabs", "siunitx", "rotating", "pdflscape", "longtable", "graphicx", "amsmath")
#: Characters a row may take (cells and column gaps) and still fit a portrait page in a small font
#: (a float a little wider is scaled down to the line); a wider table is set sideways (landscape).
PORTRAIT_CHARS = 70
FLOAT_PORTRAIT_CHARS = 84
#: More rows than this: a longtable, which breaks across pages.
LONG_ROWS = 30
#: A landscape longtable whose row is wider than this many characters is set in ``\\tiny`` with narrower
#: column gaps (about 148 fit a landscape line in ``\\scriptsize``, about 175 in ``\\tiny``).
LANDSCAPE_SCRIPT_CHARS = 140
_NUMBER = re.compile(r"^(-?)(\d+)(?:\.(\d+))?(?:e([+-]?)(\d+))?$")


def _table_format(cells: list[str]) -> str | None:
    """siunitx's ``table-format`` for a column whose cells are all numbers (or missing), else None."""
    sign = integer = decimals = exponent = 0
    seen = False
    for cell in cells:
        if cell in ("", "--"):
            continue
        m = _NUMBER.match(cell)
        if not m:
            return None
        seen = True
        sign = max(sign, len(m.group(1)))
        integer = max(integer, len(m.group(2)))
        decimals = max(decimals, len(m.group(3) or ""))
        exponent = max(exponent, len(m.group(5) or ""))
    if not seen:
        return None
    return ("-" if sign else "") + f"{integer}.{decimals}" + (f"e-{exponent}" if exponent else "")


def _interval_cell(cell: str) -> str:
    """``[low, high]`` as a math-mode interval; missing stays ``--``."""
    if not (cell.startswith("[") and cell.endswith("]")):
        return escape_latex(cell)
    low, high = (part.strip() for part in cell[1:-1].split(","))
    return f"$[{low},\\,{high}]$"


def row_chars(shown: pd.DataFrame) -> int:
    """The widest row's length in characters, each column as wide as its widest cell or heading, plus gaps."""
    return sum(max([len(str(h))] + [len(str(c)) for c in shown[h]]) + 2 for h in shown.columns)


def latex_tabular_parts(table: Table) -> tuple[list[str], list[str], list[list[str]], int]:
    """(column specs, headings, rows, row width in characters) of a table's LaTeX body: numbers in
    siunitx ``S`` columns (right-aligned on the decimal point), intervals as math-mode intervals, text escaped."""
    shown = display_frame(table.frame, missing="--", display=table.display)
    intervals = {heading for heading, columns in (table.display or []) if len(columns) == 2}
    specs, headings, columns = [], [], []
    for heading in shown.columns:
        cells = [str(c) for c in shown[heading]]
        fmt = None if heading in intervals else _table_format(cells)
        if heading in intervals:
            specs.append("c")
            columns.append([_interval_cell(c) for c in cells])
            headings.append(escape_latex(heading))
        elif fmt is not None:
            specs.append(f"S[table-format={fmt}]")
            columns.append([c if _NUMBER.match(c) else f"{{{escape_latex(c)}}}" for c in cells])
            headings.append(f"{{{escape_latex(heading)}}}")
        else:
            specs.append("l")
            columns.append([escape_latex(c) for c in cells])
            headings.append(escape_latex(heading))
    rows = [list(r) for r in zip(*columns)] if columns else []
    return specs, headings, rows, row_chars(shown)


def to_latex(table: Table) -> str:
    """The table for ``\\input`` into a paper (packages: :data:`LATEX_PACKAGES`).

    It fits the page (``layout="portrait"``: always a ``table`` float on the
    text width, scaled down if need be). Otherwise: a ``table`` float when a row fits
    :data:`PORTRAIT_CHARS` characters, else a ``sidewaystable`` in a smaller
    size, both scaled down only if still wider than the line; more than
    :data:`LONG_ROWS` rows a ``longtable`` (landscape and in a script size when wide: it cannot be scaled)
    that breaks across pages.
    """
    specs, headings, rows, chars = latex_tabular_parts(table)
    if not specs:
        specs, headings = ["l"], [""]
    head = " & ".join(headings) + " \\\\\n"
    body = "".join(" & ".join(r) + " \\\\\n" for r in rows)
    caption = f"\\caption{{{escape_latex(table.title)}. {escape_latex(table.caption)}}}"
    label = f"\\label{{tab:{table.name}}}"
    portrait = table.layout == "portrait"
    long = len(rows) > LONG_ROWS and not portrait
    wide = chars > (PORTRAIT_CHARS if long else FLOAT_PORTRAIT_CHARS) and not portrait
    # a longtable cannot be scaled down: a wide one is set in the smallest size a table is read in
    small = "\\tiny\n" if chars > LANDSCAPE_SCRIPT_CHARS else "\\scriptsize\n"
    size = (small if long else "\\footnotesize\n") if wide else "\\small\n"
    column_format = "".join(specs) if all(len(s) == 1 for s in specs) else " ".join(specs)
    if long:
        gap = "2pt" if size.startswith("\\tiny") else "3pt"
        text = (
            "{" + size + f"\\setlength{{\\tabcolsep}}{{{gap}}}\n"
            f"\\begin{{longtable}}{{{column_format}}}\n{caption}{label}\\\\\n"
            f"\\toprule\n{head}\\midrule\n\\endfirsthead\n"
            f"\\toprule\n{head}\\midrule\n\\endhead\n\\bottomrule\n\\endfoot\n"
            f"{body}\\end{{longtable}}}}\n"
        )
        return f"\\begin{{landscape}}\n{text}\\end{{landscape}}\n" if wide else text
    env = "sidewaystable" if wide else "table"
    return (
        f"\\begin{{{env}}}\n\\centering\n{size}{caption}\n{label}\n"
        "\\resizebox{\\ifdim\\width>\\linewidth\\linewidth\\else\\width\\fi}{!}{%\n"
        f"\\begin{{tabular}}{{{column_format}}}\n\\toprule\n{head}\\midrule\n{body}\\bottomrule\n"
        f"\\end{{tabular}}}}\n\\end{{{env}}}\n"
    )
