"""A reply the endpoint did not finish: marked in its text, so it is never read as a verdict.

An OpenAI-compatible response says why its reply ended (``finish_reason``):
``stop`` when the model finished (or no reason, from servers that send
none), ``length`` when it was cut at ``max_tokens``, ``content_filter`` when
the provider withheld the rest. A reply that did not finish may name a
letter early in reasoning it never completed, so it is no verdict: its text
is kept with the reason appended on a line of its own
(``[finish_reason: length]``), and :func:`unfinished` finds that line again
wherever the reply is read (parsing a verdict, the summary's re-parse,
``forget-unparsed-replies``): the reply counts as unparseable, is cached and
stored like one, and can be asked again. Pure.
"""

from __future__ import annotations

import re

#: Reasons a reply ended because the model finished it (``eos_token`` and ``stop_sequence``: TGI's spelling).
FINISHED = frozenset({"stop", "eos_token", "stop_sequence"})
_MARK = re.compile(r"(?:^|\n)\[finish_reason: ([^\]\n]*)\]\Z")


def mark_unfinished(text: str, reason: object) -> str:
    """``text`` as stored: unchanged when ``reason`` says the model finished (or is None), else with the reason."""
    if reason is None or reason in FINISHED:
        return text
    line = f"[finish_reason: {' '.join(str(reason).replace(']', ')').split())}]"
    return f"{text}\n{line}" if text else line


def unfinished(text: str | None) -> str | None:
    """The reason a stored reply was not finished (``length``, ...), or None for a finished one."""
    m = _MARK.search(text) if text and text.endswith("]") else None
    return m.group(1) if m else None
