"""Retrying an HTTP call (built on ``tenacity``), shared by the OSF client and the OpenAI judge backend.

A call signals a failure worth retrying by raising :class:`Retryable` (with
the server's ``Retry-After`` in seconds when it sent one, read by
:func:`parse_retry_after`); any other exception stops at once.
:func:`call_with_retries` makes at most ``max_retries + 1`` attempts; the
k-th retry (k = 0, 1, ...) waits ``Backoff.wait(k, retry_after)``: the
server's ``Retry-After`` when given (capped), else ``base_s * 2**k``
(capped). When every attempt failed the last :class:`Retryable` is raised,
so the caller words the final error.
"""

from __future__ import annotations

import email.utils
import time
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

T = TypeVar("T")


class Retryable(Exception):
    """A failed attempt worth retrying; ``reason`` says what happened, ``retry_after`` what the server asked for."""

    def __init__(self, reason: str, retry_after: float | None = None):
        super().__init__(reason)
        self.reason, self.retry_after = reason, retry_after


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date), at least 0; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


@dataclass(frozen=True)
class Backoff:
    """Waits in seconds: exponential from ``base_s`` up to ``max_s``; a ``Retry-After`` up to ``retry_after_max_s`` (default ``max_s``)."""

    base_s: float
    max_s: float
    retry_after_max_s: float | None = None

    def wait(self, retry: int, retry_after: float | None = None) -> float:
        """The wait before retry number ``retry`` (0 for the first)."""
        if retry_after is not None:
            return min(retry_after, self.max_s if self.retry_after_max_s is None else self.retry_after_max_s)
        return min(self.max_s, self.base_s * 2**retry)


def call_with_retries(
    fn: Callable[..., T],
    *args: Any,
    max_retries: int,
    backoff: Backoff,
    sleep: Callable[[float], Any] = time.sleep,
    on_retry: Callable[[Retryable, int, float], Any] | None = None,
) -> T:
    """``fn(*args)``, retried on :class:`Retryable` (see module doc).

    ``on_retry(error, retry_number, wait)`` is called before each wait
    (``retry_number`` counts from 1); ``sleep`` does the waiting (inject a
    recorder in tests).
    """
    from tenacity import Retrying, retry_if_exception_type, stop_after_attempt

    def wait(state) -> float:
        return backoff.wait(state.attempt_number - 1, getattr(state.outcome.exception(), "retry_after", None))

    def before_sleep(state) -> None:
        if on_retry is not None:
            on_retry(state.outcome.exception(), state.attempt_number, state.next_action.sleep)

    retrying = Retrying(stop=stop_after_attempt(max_retries + 1), wait=wait, retry=retry_if_exception_type(Retryable),
                        sleep=sleep, before_sleep=before_sleep, reraise=True)
    return retrying(fn, *args)
