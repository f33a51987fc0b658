"""How the report and the model cards write values: cells, rates, intervals, anchors, the banner, the commit.

Kept apart from the page's assembly (:mod:`reappraisal.report.report_io`) so
that the cards, which share these conventions, do not depend on the page's
charts and templates.
"""

from __future__ import annotations

import math
import re
import subprocess
from pathlib import Path
from typing import Any

from ..summary.texts import load_texts

#: The page's words (the banner is shared with the cards).
TEXTS_PATH = Path(__file__).with_name("report_texts.yaml")
DEMO_BANNER: str = load_texts(TEXTS_PATH)["banner"]


def slug(text: Any) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", str(text)).strip("-") or "x"


def fmt(value: Any, digits: int = 4) -> str:
    """A cell as the artifact wrote it: floats to ``digits`` places, NaN as an em dash."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "—"
        if value != 0 and abs(value) < 10 ** -(digits - 1):
            return f"{value:.{max(1, digits - 1)}g}"  # 5e-05, not 0.0001
        return f"{value:.{digits}f}"
    return str(value)


def fmt_rate(value: Any, digits: int = 3) -> str:
    """A rate on the scale of its interval: fixed ``digits`` places (0.007, not 0.0069 beside [0.002, 0.007])."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{float(value):.{digits}f}"


def fmt_interval(lo: Any, hi: Any, digits: int = 3) -> str:
    if lo is None or hi is None or (isinstance(lo, float) and math.isnan(lo)) or (isinstance(hi, float) and math.isnan(hi)):
        return "—"
    return f"[{lo:.{digits}f}, {hi:.{digits}f}]"


def git_commit(cwd: Path | None = None) -> tuple[str | None, bool]:
    """(HEAD commit, whether tracked files differ from it) of the checkout, or (None, False) outside git."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd, capture_output=True,
                               text=True, check=True).stdout.strip()
        return head, bool(dirty)
    except (OSError, subprocess.CalledProcessError):
        return None, False
