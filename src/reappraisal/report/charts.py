"""Small inline SVG line charts for the report (no plotting dependency). Pure."""

from __future__ import annotations

import html
import math
from typing import Sequence


def line_chart(
    x: Sequence[float], y: Sequence[float], *, title: str, width: int = 260, height: int = 140, pad: int = 30
) -> str:
    """An SVG line chart of ``y`` against ``x``; non-finite points are skipped."""
    pts = [(float(a), float(b)) for a, b in zip(x, y) if _finite(a) and _finite(b)]
    head = f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" aria-label="{html.escape(title)}">'
    title_el = f'<text x="{width / 2}" y="14" text-anchor="middle" font-size="12">{html.escape(title)}</text>'
    if not pts:
        return f'{head}{title_el}<text x="{width / 2}" y="{height / 2}" text-anchor="middle" font-size="11" fill="#888">no data</text></svg>'
    xs, ys = zip(*pts)
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(ys), max(ys)
    if x1 == x0:
        x0, x1 = x0 - 1, x1 + 1
    if y1 == y0:
        y0, y1 = y0 - 1, y1 + 1
    sx = lambda v: pad + (v - x0) / (x1 - x0) * (width - 2 * pad)  # noqa: E731
    sy = lambda v: height - pad + (y0 - v) / (y1 - y0) * (height - 2 * pad)  # noqa: E731
    path = " ".join(f"{sx(a):.1f},{sy(b):.1f}" for a, b in pts)
    axes = (
        f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="#999"/>'
        f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" stroke="#999"/>'
        f'<text x="{pad - 3}" y="{pad + 4}" text-anchor="end" font-size="9">{_fmt(y1)}</text>'
        f'<text x="{pad - 3}" y="{height - pad}" text-anchor="end" font-size="9">{_fmt(y0)}</text>'
        f'<text x="{pad}" y="{height - pad + 12}" font-size="9">{_fmt(x0)}</text>'
        f'<text x="{width - pad}" y="{height - pad + 12}" text-anchor="end" font-size="9">{_fmt(x1)}</text>'
    )
    dots = "".join(f'<circle cx="{sx(a):.1f}" cy="{sy(b):.1f}" r="1.8" fill="#2a6fb0"/>' for a, b in pts) if len(pts) <= 60 else ""
    return f'{head}{title_el}{axes}<polyline fill="none" stroke="#2a6fb0" stroke-width="1.5" points="{path}"/>{dots}</svg>'


def _finite(v) -> bool:
    try:
        return math.isfinite(float(v))
    except (TypeError, ValueError):
        return False


def _fmt(v: float) -> str:
    return f"{v:.3g}"
