"""The answer of a thinking completion: only the text after ``</think>``.

A completion of a thinking model is ``reasoning</think>answer``. The answer is
the text after the last ``</think>`` (as Qwen's own parsing does), stripped of
surrounding whitespace; a completion that never closes its thinking block
(truncated, or a model that does not think) has an empty answer, which the
format gate then penalizes. Reasoning text never reaches a scorer.
"""

from __future__ import annotations

from typing import Iterable, Sequence

THINK_CLOSE = "</think>"


def extract_answer(completion: str) -> str:
    """The text after the last ``</think>``, stripped; ``""`` when there is none."""
    head, sep, tail = completion.rpartition(THINK_CLOSE)
    if not sep:
        return ""
    return tail.strip()


def strip_markers(text: str, markers: Iterable[str]) -> str:
    """Remove every occurrence of each marker (e.g. ``<|im_end|>``, pad) from ``text``."""
    for marker in markers:
        if marker:
            text = text.replace(marker, "")
    return text


def decode_completions(tokenizer, completion_ids: Sequence[Sequence[int]]) -> list[str]:
    """Decode completions keeping ``</think>`` but dropping end-of-turn and padding tokens.

    TRL decodes with ``skip_special_tokens=True``, which deletes ``</think>``
    whenever a tokenizer registers it as a special token (the demo's tiny
    tokenizer does; Qwen3's does not). Decoding the ids here without skipping,
    then removing the tokenizer's named special tokens (EOS, pad, ChatML
    markers; never ``<think>``/``</think>``), gives the same text for both.
    """
    markers = [t for t in tokenizer.all_special_tokens if t not in ("<think>", THINK_CLOSE)]
    texts = tokenizer.batch_decode([list(ids) for ids in completion_ids], skip_special_tokens=False)
    return [strip_markers(t, markers) for t in texts]
