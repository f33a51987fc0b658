"""The OpenAI-compatible judge backend against a local server imitating /v1/chat/completions."""

from __future__ import annotations

import time

import pytest

from reappraisal.errors import ConfigError, PipelineInputError
from reappraisal.evaluation.backends import CallFailure, OpenAIBackend
from reappraisal.evaluation.cache import ReplyCache
from reappraisal.evaluation.judging import judge_contests
from reappraisal.http_retry import parse_retry_after

from .helpers import contests_frame, openai_judge, scenarios_for
from .openai_fake import FakeOpenAI, Reply

CONV = [{"role": "user", "content": "RESPONSE A:\nx\n\nRESPONSE B:\ny"}]


def test_success_sends_model_messages_and_decoding(tmp_path):
    with FakeOpenAI(lambda body, n: Reply("VERDICT: B")) as srv:
        spec = openai_judge(tmp_path, srv.base_url)
        assert OpenAIBackend(spec).call(CONV) == "VERDICT: B"
        (req,) = srv.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["body"]["model"] == "fake-model"
    assert req["body"]["messages"] == CONV
    assert req["body"]["temperature"] == 0.0 and req["body"]["max_tokens"] == spec.decoding["max_new_tokens"]


def test_429_with_retry_after_is_honoured_then_success(tmp_path):
    times = []

    def responder(body, n):
        times.append(time.monotonic())
        return Reply(status=429, headers={"Retry-After": "1"}) if n == 0 else Reply("VERDICT: A")

    with FakeOpenAI(responder) as srv:
        spec = openai_judge(tmp_path, srv.base_url)  # backoff_s 0.01: only Retry-After explains a 1 s wait
        assert OpenAIBackend(spec).call(CONV) == "VERDICT: A"
        assert srv.count == 2
    assert times[1] - times[0] >= 0.95


def test_500_then_success(tmp_path):
    with FakeOpenAI(lambda body, n: Reply(status=500) if n < 2 else Reply("VERDICT: A")) as srv:
        spec = openai_judge(tmp_path, srv.base_url, max_retries=3)
        assert OpenAIBackend(spec).call(CONV) == "VERDICT: A"
        assert srv.count == 3


def test_timeout_is_retried_then_reported_as_a_failed_call(tmp_path):
    with FakeOpenAI(lambda body, n: Reply("VERDICT: A", delay=1.0)) as srv:
        spec = openai_judge(tmp_path, srv.base_url, timeout_s=0.2, max_retries=1)
        out = OpenAIBackend(spec).call(CONV)
        assert srv.count == 2  # first try + one retry
    assert isinstance(out, CallFailure) and "no answer within 0.2 s" in out.reason


def test_malformed_json_is_retried_not_taken_as_a_reply(tmp_path):
    with FakeOpenAI(lambda body, n: Reply(raw=b"{not json") if n == 0 else Reply(raw=b'{"choices": []}')
                    if n == 1 else Reply("VERDICT: B")) as srv:
        spec = openai_judge(tmp_path, srv.base_url, max_retries=2)
        assert OpenAIBackend(spec).call(CONV) == "VERDICT: B"
        assert srv.count == 3


def test_4xx_stops_at_once_without_retrying(tmp_path):
    with FakeOpenAI(lambda body, n: Reply(status=401)) as srv:
        spec = openai_judge(tmp_path, srv.base_url, max_retries=5)
        with pytest.raises(PipelineInputError, match="HTTP 401"):
            OpenAIBackend(spec).call(CONV)
        assert srv.count == 1


def test_reply_without_verdict_is_an_error_verdict_counted_and_kept(tmp_path):
    contests = contests_frame(2)
    with FakeOpenAI(lambda body, n: Reply("I cannot decide." if n % 2 else "VERDICT: A")) as srv:
        spec = openai_judge(tmp_path, srv.base_url, concurrency=1)
        with ReplyCache(tmp_path / "c.jsonl") as cache:
            table, stats = judge_contests(contests, scenarios_for(contests), spec, run=1, cache=cache,
                                          fingerprint="x", backend_factory=lambda: OpenAIBackend(spec))
    assert len(table) == 2 * len(contests)  # nothing dropped
    assert (table["verdict"] == "error").sum() == len(contests)
    assert set(table.loc[table["verdict"] == "error", "raw"]) == {"I cannot decide."}


def test_api_key_goes_in_the_header_and_nowhere_else(tmp_path, monkeypatch, capfd):
    secret = "sk-test-7f3a9c2e1b"
    monkeypatch.setenv("FAKE_JUDGE_KEY", secret)
    contests = contests_frame(2)
    with FakeOpenAI(lambda body, n: Reply("VERDICT: A")) as srv:
        spec = openai_judge(tmp_path / "judges", srv.base_url, api_key_env="FAKE_JUDGE_KEY")
        cache_path = tmp_path / "cache" / "fake-judge.jsonl"
        with ReplyCache(cache_path) as cache:
            table, _ = judge_contests(contests, scenarios_for(contests), spec, run=1, cache=cache, fingerprint="x",
                                      backend_factory=lambda: OpenAIBackend(spec))
        headers = [r["headers"].get("Authorization") for r in srv.requests]
    assert headers and all(h == f"Bearer {secret}" for h in headers)
    table.to_parquet(tmp_path / "judgments.parquet")
    out, err = capfd.readouterr()
    for path in [p for p in tmp_path.rglob("*") if p.is_file()]:
        assert secret.encode() not in path.read_bytes(), path
    assert secret not in out + err
    assert secret not in repr(spec) and secret not in str(spec.sent(CONV))


def test_unset_api_key_variable_is_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv("NO_SUCH_JUDGE_KEY", raising=False)
    spec = openai_judge(tmp_path, "http://127.0.0.1:9/v1", api_key_env="NO_SUCH_JUDGE_KEY")
    with pytest.raises(ConfigError, match="NO_SUCH_JUDGE_KEY, which is not set") as info:
        OpenAIBackend(spec)
    assert "fake-judge.yaml" in str(info.value)


def test_endpoint_that_never_answers_stops_the_stage_with_one_line_and_caches_nothing(tmp_path):
    contests = contests_frame(2)
    with FakeOpenAI(lambda body, n: Reply("VERDICT: A", delay=0.5)) as srv:
        spec = openai_judge(tmp_path, srv.base_url, timeout_s=0.1, max_retries=1, concurrency=8)
        cache_path = tmp_path / "cache.jsonl"
        with ReplyCache(cache_path) as cache, pytest.raises(PipelineInputError) as info:
            judge_contests(contests, scenarios_for(contests), spec, run=1, cache=cache, fingerprint="x",
                           backend_factory=lambda: OpenAIBackend(spec))
    message = str(info.value)
    assert "\n" not in message
    assert f"{2 * len(contests)} of {2 * len(contests)} call(s)" in message and "no answer within 0.1 s" in message
    assert not cache_path.exists() or cache_path.read_text() == ""


def test_concurrency_is_bounded(tmp_path):
    import threading

    active, peak, lock = [0], [0], threading.Lock()

    def responder(body, n):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.05)
        with lock:
            active[0] -= 1
        return Reply("VERDICT: A")

    with FakeOpenAI(responder) as srv:
        spec = openai_judge(tmp_path, srv.base_url, concurrency=3)
        replies = dict(OpenAIBackend(spec).replies([CONV] * 12))
    assert sorted(replies) == list(range(12))
    assert 2 <= peak[0] <= 3


@pytest.mark.parametrize("value,expected", [("3", 3.0), ("0", 0.0), (None, None), ("soon", None)])
def test_parse_retry_after(value, expected):
    assert parse_retry_after(value) == expected
