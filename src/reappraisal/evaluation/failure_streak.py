"""A dead endpoint, told from the first calls of a stage: each failed, all for the same reason.

A stage asks an endpoint hundreds of calls; each failed call costs its
retries and their waits (``request.max_retries``, ``Retry-After`` capped at
``request.max_backoff_s``). An endpoint that answers every call the same
failure (HTTP 429 with ``Retry-After: 3600``, a refused connection, no
answer in time) would cost that on every call before the stage's error.
:class:`FailureStreak` watches the calls' outcomes in the order they end:
once the first ``limit`` of them all failed with the same reason (and no
call succeeded before), the stage stops, naming that reason
(``request.stop_after_failures``). Calls that fail in different ways, or a
failure after any success, never stop it early: the stage asks every call
and reports the failures at the end, as before. Pure.
"""

from __future__ import annotations


class FailureStreak:
    """The first calls' outcomes of one stage (see module doc)."""

    def __init__(self, limit: int):
        self.limit = limit
        self.reasons: list[str] = []
        self.broken = False  # a success, or a failure of another kind, came first: never stop early

    def add(self, failure: str | None) -> bool:
        """Record one ended call (``failure``: its reason, None for a reply); True when the stage should stop."""
        if self.broken:
            return False
        if failure is None or (self.reasons and failure != self.reasons[0]):
            self.broken = True
            return False
        self.reasons.append(failure)
        return len(self.reasons) >= self.limit

    def message(self, judge: str, url: str, unasked: int) -> str:
        """The stage's one line once :meth:`add` said stop."""
        return (f"the first {len(self.reasons)} call(s) to judge {judge!r} at {url} all failed the same way "
                f"({self.reasons[0]}); stopped without asking the other {unasked}: the endpoint looks unusable (down, "
                "rate-limited for longer than the retries wait, or refusing this client); fix it and rerun (nothing "
                "was cached for the failed calls), or raise request.stop_after_failures to keep asking")
