"""The retry helper both HTTP clients use (the clients' own behaviour: tests/data/test_osf.py, tests/evaluation/test_openai_backend.py)."""

import pytest

from reappraisal.http_retry import Backoff, Retryable, call_with_retries


def test_backoff_doubles_to_its_cap_and_retry_after_has_its_own_cap():
    b = Backoff(base_s=0.5, max_s=3.0, retry_after_max_s=30.0)
    assert [b.wait(k) for k in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert b.wait(0, retry_after=7.0) == 7.0 and b.wait(0, retry_after=3600.0) == 30.0
    assert Backoff(base_s=1.0, max_s=5.0).wait(0, retry_after=60.0) == 5.0  # no separate cap: max_s


def test_retryable_failures_are_retried_then_the_last_one_is_raised():
    sleeps, calls, retries = [], [], []

    def flaky(x):
        calls.append(x)
        raise Retryable(f"try {len(calls)}", retry_after=9.0 if len(calls) == 2 else None)

    with pytest.raises(Retryable, match="try 3"):
        call_with_retries(flaky, "x", max_retries=2, backoff=Backoff(1.0, 60.0), sleep=sleeps.append,
                          on_retry=lambda err, k, wait: retries.append((str(err), k, wait)))
    assert calls == ["x"] * 3
    assert sleeps == [1.0, 9.0]
    assert retries == [("try 1", 1, 1.0), ("try 2", 2, 9.0)]


def test_other_errors_stop_at_once_and_success_returns():
    sleeps, calls = [], []

    def refuse():
        calls.append(1)
        raise ValueError("no")

    with pytest.raises(ValueError):
        call_with_retries(refuse, max_retries=5, backoff=Backoff(1.0, 60.0), sleep=sleeps.append)
    assert calls == [1] and sleeps == []

    answers = iter([Retryable("busy"), "ok"])

    def second_time():
        a = next(answers)
        if isinstance(a, Exception):
            raise a
        return a

    assert call_with_retries(second_time, max_retries=1, backoff=Backoff(0.25, 60.0), sleep=sleeps.append) == "ok"
    assert sleeps == [0.25]
