"""A reply cache whose last line a kill cut: the torn line is dropped, the next reply is kept."""

from __future__ import annotations

import json

from reappraisal.atomic import cut_torn_tail
from reappraisal.evaluation.cache import ReplyCache


def test_a_reply_put_after_a_torn_line_is_read_back(tmp_path):
    path = tmp_path / "cache.jsonl"
    with ReplyCache(path) as cache:
        cache.put("k1", "VERDICT: A")
        cache.put("k2", "VERDICT: B")
    with path.open("a", encoding="utf-8") as fh:  # killed while writing k3's line: no newline
        fh.write(json.dumps({"key": "k3", "reply": "VERDICT: A"})[:-7])

    with ReplyCache(path) as cache:
        assert len(cache) == 2 and "k3" not in cache  # the torn line is not a reply: k3 is asked again
        cache.put("k4", "VERDICT: B")
    again = ReplyCache(path)
    assert {k: again.get(k) for k in ("k1", "k2", "k3", "k4")} == {
        "k1": "VERDICT: A", "k2": "VERDICT: B", "k3": None, "k4": "VERDICT: B"}
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    assert [json.loads(line)["key"] for line in lines] == ["k1", "k2", "k4"]  # every line whole, none glued
    assert all(line.endswith("\n") for line in lines)


def test_a_last_record_without_its_newline_is_not_trusted_and_is_cut(tmp_path):
    path = tmp_path / "cache.jsonl"
    whole = json.dumps({"key": "k1", "reply": "r1"}) + "\n"
    path.write_text(whole + json.dumps({"key": "k2", "reply": "r2"}), encoding="utf-8")  # kill before the newline
    cache = ReplyCache(path)
    assert "k2" not in cache  # what is read agrees with what the next append keeps
    cache.put("k3", "r3")
    cache.close()
    assert path.read_text(encoding="utf-8") == whole + json.dumps({"key": "k3", "reply": "r3"}) + "\n"


def test_cut_torn_tail_keeps_complete_files_and_handles_the_edges(tmp_path):
    path = tmp_path / "x.jsonl"
    assert cut_torn_tail(path) == 0 and not path.exists()  # nothing to cut: no file made
    path.write_bytes(b'{"a": 1}\n{"b": 2}\n')
    assert cut_torn_tail(path) == 0 and path.read_bytes() == b'{"a": 1}\n{"b": 2}\n'
    path.write_bytes(b'{"a": 1')  # the only line torn
    assert cut_torn_tail(path) == 7 and path.read_bytes() == b""
    big = b'{"r": "' + b"x" * 200_000 + b'"}\n'  # the last newline lies more than one read back
    path.write_bytes(big + b"y" * 100_000)
    assert cut_torn_tail(path) == 100_000 and path.read_bytes() == big
