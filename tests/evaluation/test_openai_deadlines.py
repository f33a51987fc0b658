"""Judge calls that cannot hang or crash: a wall-clock deadline per attempt, broken bodies and crashed workers as
counted failed calls, and the other calls still asked (against the local fake endpoint)."""

from __future__ import annotations

import threading
import time

import pytest

from reappraisal.errors import PipelineInputError
from reappraisal.evaluation.backends import CallFailure, OpenAIBackend
from reappraisal.evaluation.cache import ReplyCache
from reappraisal.evaluation.judging import judge_contests

from .helpers import contests_frame, openai_judge, scenarios_for
from .openai_fake import FakeOpenAI, Reply, completion_json, slots

CONV = [{"role": "user", "content": "RESPONSE A:\nx\n\nRESPONSE B:\ny"}]
STUCK = "GOOD answer v01 0."  # the arm's answer of the first contest: the calls showing it in slot A misbehave


def picks_better(body, n):
    a, _ = slots(body)
    return Reply("VERDICT: A" if "GOOD" in a else "VERDICT: B")


def _judge(tmp_path, srv, contests, **kw):
    spec = openai_judge(tmp_path / "judges", srv.base_url, **kw)
    with ReplyCache(tmp_path / "cache.jsonl") as cache:
        return judge_contests(contests, scenarios_for(contests), spec, run=1, cache=cache, fingerprint="fp",
                              backend_factory=lambda: OpenAIBackend(spec))


def test_a_body_that_trickles_forever_is_cut_at_the_deadline_and_every_other_call_is_still_answered(tmp_path):
    contests = contests_frame(1)  # 2 contests, 4 calls; the first call asked trickles a byte every 50 ms forever
    n = 2 * len(contests)

    def responder(body, i):
        return Reply(trickle=0.05) if slots(body)[0] == STUCK else picks_better(body, i)

    with FakeOpenAI(responder) as srv:
        start = time.monotonic()
        with pytest.raises(PipelineInputError) as info:  # one worker: the calls after the stuck one wait for it
            _judge(tmp_path, srv, contests, timeout_s=1.0, max_retries=1, concurrency=1)
        elapsed = time.monotonic() - start
        stuck_attempts = sum(slots(r["body"])[0] == STUCK for r in srv.requests)
    # each read arrives well within 1 s, so only a deadline on the whole call ends it: two attempts of ~1 s
    assert 1.9 <= elapsed < 4.0
    assert stuck_attempts == 2 and srv.count == n - 1 + stuck_attempts  # the others were all asked, once
    message = str(info.value)
    assert "\n" not in message and f"1 of {n} call(s)" in message and "no answer within 1 s" in message
    assert len(ReplyCache(tmp_path / "cache.jsonl")) == n - 1  # every other reply cached, the failed one not


@pytest.mark.parametrize("framing", ["chunked", "close", "length"])
def test_a_dribbled_body_is_cut_at_the_deadline_whatever_its_framing(tmp_path, framing):
    """HTTP/1.0 close-delimited bodies too: there the connection hands its socket to the response, and a deadline
    that shut down only the connection's socket let each byte reset a per-read timeout for ever."""
    with FakeOpenAI(lambda body, n: Reply(trickle=0.05, framing=framing)) as srv:
        spec = openai_judge(tmp_path, srv.base_url, timeout_s=0.5, max_retries=1)
        start = time.monotonic()
        out = OpenAIBackend(spec).call(CONV)
        elapsed = time.monotonic() - start
    assert isinstance(out, CallFailure) and "no answer within 0.5 s" in out.reason and srv.count == 2
    assert elapsed < 2.0  # attempts × timeout, plus the backoff


def test_headers_that_trickle_forever_are_cut_at_the_deadline(tmp_path):
    with FakeOpenAI(lambda body, n: Reply(trickle_headers=0.05)) as srv:
        spec = openai_judge(tmp_path, srv.base_url, timeout_s=0.5, max_retries=0)
        start = time.monotonic()
        out = OpenAIBackend(spec).call(CONV)
        elapsed = time.monotonic() - start
    assert isinstance(out, CallFailure) and "no answer within 0.5 s" in out.reason
    assert elapsed < 2.0


@pytest.mark.parametrize("broken", [
    Reply(cut=20),  # a chunk promising the whole completion; the connection closes after 20 bytes of it
    Reply(cut=20, cut_chunked=False),  # a Content-Length the body never reaches
    Reply(raw=b'{"choices": [{"message": {"content": "VERDICT: \xff"}}]}'),  # not UTF-8
    Reply(raw=completion_json("VERDICT: B")[:-5]),  # complete as HTTP, cut as JSON
], ids=["truncated-chunked", "truncated-length", "not-utf8", "cut-json"])
def test_a_truncated_or_undecodable_body_is_a_failed_attempt_retried(tmp_path, broken):
    with FakeOpenAI(lambda body, n: broken if n == 0 else Reply("VERDICT: B")) as srv:
        spec = openai_judge(tmp_path, srv.base_url, timeout_s=1.0, max_retries=1)
        assert OpenAIBackend(spec).call(CONV) == "VERDICT: B"
        assert srv.count == 2


def test_a_body_always_truncated_is_a_counted_failed_call_never_a_traceback(tmp_path):
    with FakeOpenAI(lambda body, n: Reply(cut=20)) as srv:
        spec = openai_judge(tmp_path, srv.base_url, timeout_s=1.0, max_retries=2)
        out = OpenAIBackend(spec).call(CONV)
        assert srv.count == 3
    assert isinstance(out, CallFailure)
    assert out.reason == "truncated or undecodable response (ChunkedEncodingError) after 3 attempt(s)"


def test_an_exception_inside_an_attempt_is_a_counted_uncached_failed_call_and_the_others_are_answered(
        tmp_path, monkeypatch):
    contests = contests_frame(2)
    n = 2 * len(contests)
    body, crashes = OpenAIBackend.body, []

    def crashing_body(self, conversation):
        if STUCK in conversation[-1]["content"].split("RESPONSE B:")[0]:
            crashes.append(1)
            raise RuntimeError("boom\nsecond line")
        return body(self, conversation)

    monkeypatch.setattr(OpenAIBackend, "body", crashing_body)
    with FakeOpenAI(picks_better) as srv:
        with pytest.raises(PipelineInputError) as info:
            _judge(tmp_path, srv, contests, max_retries=2, concurrency=1)
        assert srv.count == n - 1  # every other call asked and answered, including those not yet submitted
    assert len(crashes) == 3  # retried like any transient failure
    message = str(info.value)
    assert "\n" not in message and f"1 of {n} call(s)" in message
    assert "unexpected RuntimeError (boom second line) after 3 attempt(s)" in message
    assert len(ReplyCache(tmp_path / "cache.jsonl")) == n - 1


def test_a_worker_that_crashes_outside_its_attempts_fails_one_call_and_the_pool_goes_on(tmp_path):
    convs = [[{"role": "user", "content": f"RESPONSE A:\nx{i}\n\nRESPONSE B:\ny"}] for i in range(6)]
    with FakeOpenAI(lambda body, n: Reply("VERDICT: A")) as srv:
        backend = OpenAIBackend(openai_judge(tmp_path, srv.base_url, concurrency=1))
        call = backend.call

        def crashing_call(conversation):
            if conversation is convs[1]:
                raise KeyError("lost")
            return call(conversation)

        backend.call = crashing_call
        got = dict(backend.replies(convs))
        assert srv.count == 5
    assert sorted(got) == list(range(6))
    assert isinstance(got[1], CallFailure) and got[1].reason == "unexpected KeyError ('lost')"
    assert all(got[i] == "VERDICT: A" for i in (0, 2, 3, 4, 5))


def test_a_refusal_cuts_the_calls_in_flight_and_asks_nothing_more(tmp_path):
    convs = [[{"role": "user", "content": f"RESPONSE A:\nx{i}\n\nRESPONSE B:\ny"}] for i in range(20)]
    first = threading.Event()

    def responder(body, n):
        if n == 0:
            return Reply(status=403, delay=0.3)
        return Reply(trickle=0.05)  # would take the whole 10 s deadline (twice, with a retry)

    with FakeOpenAI(responder) as srv:
        backend = OpenAIBackend(openai_judge(tmp_path, srv.base_url, timeout_s=10.0, max_retries=1, concurrency=4))
        start = time.monotonic()
        with pytest.raises(PipelineInputError, match="HTTP 403") as info:
            for _ in backend.replies(convs):
                first.set()
        elapsed = time.monotonic() - start
        time.sleep(0.2)  # the cut calls would retry now if they were going to
        assert srv.count == 4  # the first four only: nothing retried, nothing more submitted
    assert elapsed < 2.0 and not first.is_set()
    assert "\n" not in str(info.value)


def test_a_reply_from_another_model_stops_the_stage_unless_the_judge_accepts_that_name(tmp_path):
    with FakeOpenAI(lambda body, n: Reply("VERDICT: A", model="llama-3.1-8b-instruct")) as srv:
        spec = openai_judge(tmp_path, srv.base_url, max_retries=3)
        with pytest.raises(PipelineInputError) as info:
            OpenAIBackend(spec).call(CONV)
        assert srv.count == 1  # refused at once, never retried
        message = str(info.value)
        assert "\n" not in message and "'llama-3.1-8b-instruct', not 'fake-model'" in message
        assert "request.accepted_models" in message and "fake-judge.yaml" in message
        alias = openai_judge(tmp_path / "alias", srv.base_url, request={"accepted_models": ["llama-3.1-8b-instruct"]})
        assert OpenAIBackend(alias).call(CONV) == "VERDICT: A"


def test_a_reply_larger_than_the_cap_is_a_failed_attempt_never_a_cached_reply(tmp_path):
    big = "VERDICT: A " + "x" * 5000
    with FakeOpenAI(lambda body, n: Reply(big)) as srv:
        spec = openai_judge(tmp_path, srv.base_url, max_retries=1, request={"max_reply_bytes": 2048})
        out = OpenAIBackend(spec).call(CONV)
        assert isinstance(out, CallFailure) and "larger than 2048 bytes (request.max_reply_bytes)" in out.reason
        assert srv.count == 2
        roomy = openai_judge(tmp_path / "roomy", srv.base_url)  # the default cap: 256 KiB
        assert OpenAIBackend(roomy).call(CONV) == big


def test_each_judgment_records_the_model_its_reply_named_and_a_rerun_reads_it_from_the_cache(tmp_path):
    """Half the replies come from an accepted alias: each judgment says which model served it, the cache keeps it,
    and a rerun (nothing asked) records the same; forgetting other replies keeps the models of those kept."""
    contests = contests_frame(2)

    def responder(body, i):
        return Reply(picks_better(body, i).content, model="judge-alias" if i % 2 else None)

    with FakeOpenAI(responder) as srv:
        kw = {"request": {"accepted_models": ["judge-alias"]}}
        first, _ = _judge(tmp_path, srv, contests, **kw)
        asked = srv.count
        again, stats = _judge(tmp_path, srv, contests, **kw)
        assert srv.count == asked and stats.asked == 0  # all from the cache
    assert set(first["served_model"]) == {"fake-model", "judge-alias"}
    assert (first["served_model"] == "judge-alias").sum() == asked // 2
    assert first["served_model"].tolist() == again["served_model"].tolist()
    with ReplyCache(tmp_path / "cache.jsonl") as cache:
        keys = cache.keys()
        models = {k: cache.served_model(k) for k in keys}
        assert cache.forget(keys[:1]) == 1
    reread = ReplyCache(tmp_path / "cache.jsonl")
    assert {k: reread.served_model(k) for k in reread.keys()} == {k: models[k] for k in keys[1:]}
