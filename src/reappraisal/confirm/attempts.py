"""The ledger of confirmation attempts: a confirmation spends its pool (pure).

A pre-registration is tested once on a confirmation pool. Every attempt is
recorded (the registration's sha256, the pool's identity, the date, the
result) in an append-only ledger beside the registration; an attempt on a
pool that an earlier attempt under *another* registration already used is
refused, since a registration edited once its result is known is not one.
Rerunning the same registration on the same pool (after a crash, or to
regenerate the outputs) is the same attempt and adds nothing. A new pool
(``evaluation.confirmation_pool.scenarios``) starts afresh; the attempts on
earlier pools stay in the ledger and are shown with the result.
"""

from __future__ import annotations

import hashlib
from typing import Iterable, Mapping, Sequence

#: What an attempt records of its result.
RESULT_FIELDS = ("system", "opponent", "win_rate", "ci_low", "ci_high", "bar", "verdict")


def pool_id(scenarios: Iterable[str]) -> str:
    """The identity of a confirmation pool: sha256 of its sorted scenario ids."""
    return hashlib.sha256("\x1f".join(sorted(map(str, set(scenarios)))).encode()).hexdigest()


def spent_by(attempts: Sequence[Mapping], *, pool: str, registration_sha256: str) -> Mapping | None:
    """The first earlier attempt on ``pool`` under another registration (which makes this one refused), if any."""
    return next((a for a in attempts if a["pool"] == pool and a["preregistration_sha256"] != registration_sha256), None)


def is_recorded(attempts: Sequence[Mapping], *, pool: str, registration_sha256: str) -> bool:
    return any(a["pool"] == pool and a["preregistration_sha256"] == registration_sha256 for a in attempts)


def attempt_record(result: Mapping, *, pool: str, registration_sha256: str, date: str) -> dict:
    return {"preregistration_sha256": registration_sha256, "pool": pool, "date": date,
            **{k: result.get(k) for k in RESULT_FIELDS}}


def describe(attempt: Mapping) -> str:
    """One attempt in a sentence's words: date, registration, pool and result."""
    rate = attempt.get("win_rate")
    figures = f" {rate:.3f} [{attempt['ci_low']:.3f}, {attempt['ci_high']:.3f}] vs bar {attempt['bar']}" if isinstance(
        rate, (int, float)) else ""
    return (f"{attempt['date']}, registration {attempt['preregistration_sha256'][:12]}, pool {attempt['pool'][:12]}:"
            f"{figures} {str(attempt['verdict']).replace('_', ' ')}")
