"""What an endpoint's reply may not do to the results: a cut-off reply read as a verdict, a key echoed into the
cache, a dead endpoint asked on every call, a redirect followed in silence (against a local fake server)."""

from __future__ import annotations

import json
import time

import pytest

from reappraisal.errors import PipelineInputError
from reappraisal.evaluation.backends import OpenAIBackend
from reappraisal.evaluation.cache import ReplyCache
from reappraisal.evaluation.forget_io import forget_unparsed
from reappraisal.evaluation.judging import UnparseableVerdicts, check_parseable, judge_contests
from reappraisal.summary.reply_verdicts import check_replies

from .helpers import contests_frame, openai_judge, scenarios_for
from .openai_fake import FakeOpenAI, Reply


def _judge(spec, contests, cache_path):
    with ReplyCache(cache_path) as cache:
        return judge_contests(contests, scenarios_for(contests), spec, run=1, cache=cache, fingerprint="fp",
                              backend_factory=lambda: OpenAIBackend(spec))


def test_a_reply_cut_off_at_max_tokens_is_unreadable_never_a_verdict_and_can_be_asked_again(tmp_path):
    """A reply whose finish_reason is `length` names a letter early in its cut-off reasoning: it is an
    unparseable reply (counted, cause recorded), the summary's re-parse agrees, and forgetting the unparsed
    replies asks exactly those calls again. A reply without a finish_reason (servers that send none) is read."""
    contests = contests_frame(2)
    cut = "Response A uses VERDICT: A style wording, but considering B more closely"
    with FakeOpenAI(lambda body, n: Reply("VERDICT: B", finish_reason=None) if n % 2 else
                    Reply(cut, finish_reason="length")) as srv:
        spec = openai_judge(tmp_path / "judges", srv.base_url, concurrency=1)
        table, _ = _judge(spec, contests, tmp_path / "cache" / "fake-judge.jsonl")
        cut_rows = table[table["raw"].str.startswith(cut)]
        assert len(cut_rows) == len(contests)  # half the calls
        assert (cut_rows["verdict"] == "error").all()
        assert cut_rows["raw"].str.contains("finish_reason: length").all()  # the cause is recorded
        assert (table.loc[~table.index.isin(cut_rows.index), "verdict"] == "B").all()
        check_replies(table, tmp_path / "judgments.parquet", tmp_path / "judges")  # summarize re-parses the same
        cached = (tmp_path / "cache" / "fake-judge.jsonl").read_text()
        assert "finish_reason: length" in cached
        removed = forget_unparsed("fake-judge", [tmp_path / "cache"], tmp_path / "judges")
        assert sum(removed.values()) == len(contests)
        asked = srv.count
        table, stats = _judge(spec, contests, tmp_path / "cache" / "fake-judge.jsonl")
        assert srv.count - asked == len(contests) and stats.asked == len(contests)


def test_a_judge_whose_replies_are_mostly_cut_off_stops_naming_max_new_tokens(tmp_path):
    contests = contests_frame(2)
    with FakeOpenAI(lambda body, n: Reply("Weighing A first: VERDICT: A could", finish_reason="length")) as srv:
        spec = openai_judge(tmp_path / "judges", srv.base_url)
        table, _ = _judge(spec, contests, tmp_path / "c.jsonl")
    with pytest.raises(UnparseableVerdicts) as info:
        check_parseable(table, spec)
    message = str(info.value)
    assert "\n" not in message
    assert "'length'" in message and "decoding.max_new_tokens" in message and "forget-unparsed-replies" in message


def test_a_key_echoed_by_the_endpoint_is_removed_before_the_reply_is_cached_or_stored(tmp_path, monkeypatch):
    secret = "sk-echo-5e1d0c9a77"
    monkeypatch.setenv("FAKE_JUDGE_KEY", secret)
    contests = contests_frame(2)
    with FakeOpenAI(lambda body, n: Reply("VERDICT: A", echo_headers=True)) as srv:
        spec = openai_judge(tmp_path / "judges", srv.base_url, api_key_env="FAKE_JUDGE_KEY")
        table, _ = _judge(spec, contests, tmp_path / "cache" / "fake-judge.jsonl")
    table.to_parquet(tmp_path / "judgments.parquet")
    assert (table["verdict"] == "A").all()
    assert table["raw"].str.contains("Authorization: Bearer ").all()  # the echo is kept, the key is not
    for path in [p for p in tmp_path.rglob("*") if p.is_file()]:
        assert secret.encode() not in path.read_bytes(), path


def test_a_dead_endpoint_stops_the_stage_after_the_first_failing_calls_naming_the_cause(tmp_path):
    """Every call answered 429 with Retry-After: 3600: the wait is capped at request.max_backoff_s, and once
    the first request.stop_after_failures calls failed the same way the stage stops in one line instead of
    asking the other calls."""
    contests = contests_frame(10)  # 40 calls
    with FakeOpenAI(lambda body, n: Reply(status=429, headers={"Retry-After": "3600"})) as srv:
        spec = openai_judge(tmp_path / "judges", srv.base_url, max_retries=1, concurrency=2,
                            request={"max_backoff_s": 0.2, "stop_after_failures": 4})
        started = time.monotonic()
        with pytest.raises(PipelineInputError) as info:
            _judge(spec, contests, tmp_path / "c.jsonl")
        elapsed = time.monotonic() - started
        asked = srv.count
    message = str(info.value)
    assert "\n" not in message
    assert "HTTP 429" in message and "stop_after_failures" in message and "first 4 call(s)" in message
    assert asked <= 2 * (4 + 2)  # the 4 failed calls and at most the 2 in flight, 2 attempts each
    assert elapsed < 10


def test_calls_that_fail_in_different_ways_do_not_stop_the_stage_early(tmp_path):
    contests = contests_frame(3)  # 12 calls
    with FakeOpenAI(lambda body, n: Reply(status=500 if n % 2 else 503)) as srv:
        spec = openai_judge(tmp_path / "judges", srv.base_url, max_retries=0, concurrency=1,
                            request={"stop_after_failures": 3})
        with pytest.raises(PipelineInputError, match="12 of 12 call"):
            _judge(spec, contests, tmp_path / "c.jsonl")


def test_a_redirect_is_refused_unless_configured(tmp_path):
    contests = contests_frame(1)
    with FakeOpenAI(lambda body, n: Reply("VERDICT: A")) as target:
        moved = f"{target.base_url}/chat/completions"
        with FakeOpenAI(lambda body, n: Reply(status=307, headers={"Location": moved})) as srv:
            spec = openai_judge(tmp_path / "judges", srv.base_url)
            with pytest.raises(PipelineInputError) as info:
                _judge(spec, contests, tmp_path / "c.jsonl")
            assert target.count == 0
    message = str(info.value)
    assert "\n" not in message and "redirect" in message and moved in message and "follow_redirects" in message


def test_a_followed_redirect_is_recorded_with_each_reply(tmp_path):
    contests = contests_frame(1)
    with FakeOpenAI(lambda body, n: Reply("VERDICT: A")) as target:
        moved = f"{target.base_url}/chat/completions"
        with FakeOpenAI(lambda body, n: Reply(status=307, headers={"Location": moved})) as srv:
            spec = openai_judge(tmp_path / "judges", srv.base_url, request={"follow_redirects": True})
            table, _ = _judge(spec, contests, tmp_path / "c.jsonl")
            assert target.count == 2 * len(contests)
    assert (table["verdict"] == "A").all()
    records = [json.loads(line) for line in (tmp_path / "c.jsonl").read_text().splitlines()]
    assert len(records) == 2 * len(contests) and all(r["url"] == moved for r in records)
