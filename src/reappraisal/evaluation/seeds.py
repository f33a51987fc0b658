"""Seeds derived from the config seed and names, so every run draws fresh samples. Pure.

``derived_seed(seed, "generate", arm, run)`` differs for every arm and run
(three runs are three independent samples) and is the same on every rerun.
"""

from __future__ import annotations

import hashlib


def derived_seed(*parts: object) -> int:
    """A 31-bit seed from the parts' text (stable across machines and Python versions)."""
    text = "\x1f".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:4], "big") & 0x7FFFFFFF
