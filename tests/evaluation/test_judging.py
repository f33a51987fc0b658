"""Judging in both orders: bookkeeping, the reply cache, resume, run independence, consensus."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from reappraisal.data.quoting import QUOTE_CHARS

from reappraisal.errors import PipelineInputError
from reappraisal.evaluation.backends import OpenAIBackend
from reappraisal.evaluation.cache import ReplyCache, cache_key, model_fingerprint
from reappraisal.evaluation.judging import contests_table
from reappraisal.evaluation.judging import (UnparseableVerdicts, check_parseable, consensus,
                                             judge_contests)
from reappraisal.stats import position_consistency

from .helpers import contests_frame, openai_judge, scenarios_for
from .openai_fake import FakeOpenAI, Reply, slots


def always_a(body, n):
    return Reply("Both are fine. VERDICT: A")


def picks_better(body, n):
    a, b = slots(body)
    return Reply("VERDICT: A" if "GOOD" in a else "VERDICT: B")


def _judge(tmp_path, srv, contests, *, run=1, cache_name="cache.jsonl", name="fake-judge", **kw):
    spec = openai_judge(tmp_path / "judges", srv.base_url, name=name, **kw)
    with ReplyCache(tmp_path / cache_name) as cache:
        return judge_contests(contests, scenarios_for(contests), spec, run=run, cache=cache, fingerprint="fp",
                              backend_factory=lambda: OpenAIBackend(spec))


def test_a_judge_that_always_picks_slot_a_scores_every_contest_half_and_is_never_consistent(tmp_path):
    contests = contests_frame(4)
    with FakeOpenAI(always_a) as srv:
        judgments, _ = _judge(tmp_path, srv, contests)
    table = contests_table(judgments)
    assert len(table) == len(contests)  # one contest per pair, never two per order
    assert (table["score"] == 0.5).all()
    pc = position_consistency(judgments)
    assert pc["consistency"] == 0.0 and pc["n_first_slot_both"] == len(contests)


def test_a_judge_that_picks_the_better_answer_is_consistent_and_finds_the_winner(tmp_path):
    contests = contests_frame(4)
    flipped = contests.copy()  # the opponent's answer is the better one here
    flipped["model_answer"], flipped["opponent_answer"] = contests["opponent_answer"], contests["model_answer"]
    flipped["contest_id"] = flipped["contest_id"] + "-flipped"
    with FakeOpenAI(picks_better) as srv:
        judgments, _ = _judge(tmp_path, srv, pd.concat([contests, flipped], ignore_index=True))
    table = contests_table(judgments).set_index("contest_id")
    assert (table.loc[contests["contest_id"], "score"] == 1.0).all()
    assert (table.loc[flipped["contest_id"], "score"] == 0.0).all()
    assert position_consistency(judgments)["consistency"] == 1.0
    ab = judgments[judgments["order"] == "AB"]
    assert len(ab) == len(judgments) // 2


def test_a_cached_rerun_asks_nothing_and_gives_the_same_table(tmp_path):
    contests = contests_frame(3)
    with FakeOpenAI(picks_better) as srv:
        first, s1 = _judge(tmp_path, srv, contests)
        asked = srv.count
        second, s2 = _judge(tmp_path, srv, contests)
        assert srv.count == asked == 2 * len(contests)
    assert (s1.asked, s2.asked, s2.cached) == (asked, 0, asked)
    pd.testing.assert_frame_equal(first, second)


def test_editing_the_template_or_decoding_never_reuses_a_verdict(tmp_path):
    contests = contests_frame(2)
    n = 2 * len(contests)
    with FakeOpenAI(picks_better) as srv:
        _judge(tmp_path, srv, contests)
        _judge(tmp_path, srv, contests, decoding={"max_new_tokens": 9})
        assert srv.count == 2 * n
        _judge(tmp_path, srv, contests, template={"system": "Another system prompt."})
        assert srv.count == 3 * n
        _judge(tmp_path, srv, contests, request={"timeout_s": 3.0, "max_retries": 1, "backoff_s": 0.01,
                                                 "max_backoff_s": 1, "concurrency": 2})
        assert srv.count == 3 * n  # request tuning does not change a reply: cached


def test_no_run_reads_another_runs_verdicts(tmp_path):
    contests = contests_frame(3)
    with FakeOpenAI(picks_better) as srv:
        _judge(tmp_path, srv, contests, run=1, cache_name="run1/fake-judge.jsonl")
        assert srv.count == 2 * len(contests)
        # identical contests in run 2, even through run 1's cache file: all asked afresh
        _judge(tmp_path, srv, contests, run=2, cache_name="run1/fake-judge.jsonl")
        assert srv.count == 4 * len(contests)
        _judge(tmp_path, srv, contests, run=3, cache_name="run3/fake-judge.jsonl")
        assert srv.count == 6 * len(contests)


def test_killed_halfway_the_rerun_asks_only_the_missing_and_retries_the_failed(tmp_path):
    contests = contests_frame(5)
    total = 2 * len(contests)

    def dies_after_four(body, n):  # a server that goes down after four answers
        return picks_better(body, n) if n < 4 else Reply(status=503)

    with FakeOpenAI(dies_after_four) as srv:
        with pytest.raises(PipelineInputError, match=f"{total - 4} of {total} call"):
            _judge(tmp_path, srv, contests, concurrency=1, max_retries=0)
    assert len(ReplyCache(tmp_path / "cache.jsonl")) == 4
    with FakeOpenAI(picks_better) as srv:
        judgments, stats = _judge(tmp_path, srv, contests, concurrency=1)
        assert srv.count == total - 4
    assert (stats.cached, stats.asked) == (4, total - 4)
    assert (judgments["verdict"] != "error").all()


def test_a_reply_cut_by_a_kill_is_ignored_and_asked_again(tmp_path):
    contests = contests_frame(2)
    with FakeOpenAI(picks_better) as srv:
        _judge(tmp_path, srv, contests)
        path = tmp_path / "cache.jsonl"
        text = path.read_text()
        path.write_text(text[: len(text) - 20])  # the last line half-written
        _judge(tmp_path, srv, contests)
        assert srv.count == 2 * len(contests) + 1


def test_cache_key_covers_every_part():
    base = dict(model_fingerprint="f", run=1, order="AB")
    sent = {"model": "m", "messages": [{"role": "user", "content": "s a b"}]}
    key = cache_key(sent, **base)
    assert key == cache_key(dict(sent), **base)
    for change in [dict(run=2), dict(order="BA"), dict(model_fingerprint="g")]:
        assert cache_key(sent, **{**base, **change}) != key
    assert cache_key({**sent, "messages": [{"role": "user", "content": "s b a"}]}, **base) != key


def test_a_judge_s_fingerprint_follows_its_weights_and_config_not_its_training_s_clock(tmp_path):
    """The same weights trained twice (another wall-clock time in training_summary.json) keep their cached
    replies; another weight or config byte asks again."""
    def judge_folder(name: str, weights: bytes, seconds: float, layers: int = 2) -> str:
        folder = tmp_path / name
        folder.mkdir()
        (folder / "model.safetensors").write_bytes(weights)
        (folder / "config.json").write_text(json.dumps({"num_hidden_layers": layers}))
        (folder / "training_summary.json").write_text(json.dumps({"train_seconds": seconds}))
        return str(folder)

    first = model_fingerprint(judge_folder("a", b"\x01" * 64, 4.31))
    assert model_fingerprint(judge_folder("b", b"\x01" * 64, 3.97)) == first
    assert model_fingerprint(judge_folder("c", b"\x02" * 64, 4.31)) != first
    assert model_fingerprint(judge_folder("d", b"\x01" * 64, 4.31, layers=3)) != first


def test_what_is_sent_covers_messages_and_decoding_but_not_the_verdict_pattern(tmp_path):
    conv = [{"role": "user", "content": "RESPONSE A:\nx\n\nRESPONSE B:\ny"}]
    base = openai_judge(tmp_path / "a", "http://127.0.0.1:9/v1")
    other_pattern = openai_judge(tmp_path / "b", "http://127.0.0.1:9/v1",
                                 verdict={"pattern": r"DECISION:\s*(A|B|tie)", "max_unparseable_share": 1})
    other_decoding = openai_judge(tmp_path / "c", "http://127.0.0.1:9/v1", decoding={"max_new_tokens": 9})
    assert base.sent(conv) == other_pattern.sent(conv)
    assert base.sent(conv) != other_decoding.sent(conv)
    assert base.sent(conv) != base.sent([{"role": "user", "content": "RESPONSE A:\ny\n\nRESPONSE B:\nx"}])


def test_a_fixed_verdict_pattern_re_reads_the_cached_replies_without_asking_again(tmp_path):
    contests = contests_frame(3)
    n = 2 * len(contests)
    with FakeOpenAI(picks_better) as srv:
        wrong, s1 = _judge(tmp_path, srv, contests, verdict={"pattern": r"DECISION:\s*(A|B|tie)"})
        assert srv.count == n and (wrong["verdict"] == "error").all()
        fixed, s2 = _judge(tmp_path, srv, contests)  # the demo judge's pattern: VERDICT: (A|B|tie)
        assert srv.count == n  # zero new requests: the replies were cached raw, parsed on read
    assert (s2.cached, s2.asked) == (n, 0)
    assert (fixed["verdict"] != "error").all()
    assert position_consistency(fixed)["consistency"] == 1.0
    assert list(fixed["raw"]) == list(wrong["raw"])


def _verdicts(judge: str, verdicts: list[str]) -> pd.DataFrame:
    return pd.DataFrame({"judge": judge, "verdict": verdicts,
                         "raw": [f"reply {i}: " + "no verdict here. " * 30 for i in range(len(verdicts))]})


def test_more_unparseable_verdicts_than_the_judges_share_stop_with_one_line_quoting_a_reply(tmp_path):
    spec = openai_judge(tmp_path, "http://127.0.0.1:9/v1")  # max_unparseable_share: the schema's 0.5
    assert spec.max_unparseable_share == 0.5
    check_parseable(_verdicts("fake-judge", ["A", "error", "B", "error"]), spec)  # exactly half: fine
    check_parseable(_verdicts("other-judge", ["error"] * 4), spec)  # another judge's rows are not this judge's
    with pytest.raises(UnparseableVerdicts) as info:
        check_parseable(_verdicts("fake-judge", ["A", "error", "error", "error"]), spec)
    message = str(info.value)
    assert "\n" not in message and "fake-judge.yaml" in message
    assert "3 of 4 verdicts of judge 'fake-judge' are unparseable" in message
    quoted = message.split("replies such as ")[1]
    assert quoted.startswith("'reply 1: no verdict here.") and len(quoted.split("'…")[0]) <= 1 + QUOTE_CHARS
    lenient = openai_judge(tmp_path / "lenient", "http://127.0.0.1:9/v1", verdict={"max_unparseable_share": 1})
    check_parseable(_verdicts("fake-judge", ["error"] * 4), lenient)


def test_consensus_is_the_majority_of_parseable_verdicts():
    rows = []
    for judge, verdicts in {"j1": ["A", "A", "error"], "j2": ["A", "B", "error"], "j3": ["B", "tie", "error"]}.items():
        for i, v in enumerate(verdicts):
            rows.append({"run": 1, "judge": judge, "judge_kind": "heldout", "contest_id": f"c{i}", "vignette_id": "v",
                         "pool": "train", "model": "m", "opponent": "o", "order": "AB", "verdict": v, "raw": v,
                         "model_answer_id": "x", "opponent_answer_id": "y"})
    out = consensus(pd.DataFrame(rows), ["j1", "j2", "j3"]).set_index("contest_id")
    assert out.loc["c0", "verdict"] == "A"      # 2 of 3
    assert out.loc["c1", "verdict"] == "tie"    # A, B, tie: no majority
    assert out.loc["c2", "verdict"] == "error"  # nobody gave one
    assert (out["judge"] == "consensus").all() and (out["judge_kind"] == "consensus").all()
