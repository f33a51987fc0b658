"""Quoting file content in one-line errors: a header or a cell is shown clipped, never in full. Pure.

A raw export can hold a 200,000-character header (an unclosed quote, a
survey tool's question text); an error line quotes at most
:data:`QUOTE_CHARS` characters of any one value and says how long it was.
"""

from __future__ import annotations

from typing import Any, Iterable

#: The most characters of one header name or cell an error line quotes.
QUOTE_CHARS = 200


def quote(value: Any) -> str:
    """``repr`` of a text (anything else: its ``repr``), clipped to :data:`QUOTE_CHARS` characters with its length said."""
    if not isinstance(value, str):
        text = repr(value)
        return text if len(text) <= QUOTE_CHARS else f"{text[:QUOTE_CHARS]}… ({len(text)} characters)"
    if len(value) <= QUOTE_CHARS:
        return repr(value)
    return f"{value[:QUOTE_CHARS]!r}… ({len(value)} characters)"


def quote_list(values: Iterable[Any], max_items: int = 12) -> str:
    """``[a, b, ...]`` of at most ``max_items`` quoted values (each clipped), saying how many were left out."""
    values = list(values)
    shown = ", ".join(quote(v) for v in values[:max_items])
    more = f", ... ({len(values) - max_items} more)" if len(values) > max_items else ""
    return f"[{shown}{more}]"
