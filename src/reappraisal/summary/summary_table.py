"""A summary table: the frame, what it shows, and the artifacts behind each row.

``sources`` holds, per row, the paths of the artifacts that row was computed
from (repo-relative strings). ``display`` (optional) is what the Markdown and
LaTeX versions show: a list of (heading, columns) where one column is shown
as it is and two columns (low, high) as one "[low, high]" cell; the CSV
always has every column. Claims computed from a row inherit exactly
those paths as their lineage, so changing one input file changes the lineage
of exactly the claims whose rows read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd


@dataclass
class Table:
    name: str
    title: str
    caption: str
    estimand: str
    frame: pd.DataFrame
    sources: list[tuple[str, ...]] = field(default_factory=list)
    status: str = "ok"  # ok | not_computable
    note: str | None = None
    display: list[tuple[str, tuple[str, ...]]] | None = None
    #: LaTeX layout: "auto" (sideways when wide, a longtable when long) or "portrait" (a float on the
    #: text width, scaled down if need be: the compact tables a paper inputs in its body).
    layout: str = "auto"

    def __post_init__(self) -> None:
        self.frame = self.frame.reset_index(drop=True)
        if not self.sources:
            self.sources = [()] * len(self.frame)
        if len(self.sources) != len(self.frame):
            raise ValueError(f"table {self.name}: {len(self.sources)} source lists for {len(self.frame)} rows")
        self.sources = [tuple(sorted(set(s))) for s in self.sources]


def not_computable(name: str, title: str, caption: str, estimand: str, columns: list[str], why: str) -> Table:
    """An empty table whose index entry says why it could not be computed on this preset."""
    return Table(
        name, title, f"{caption} Not computable here: {why}", estimand,
        pd.DataFrame(columns=columns), status="not_computable", note=why,
    )
