"""The judge stage's command line: a run judged end to end, and bad inputs as one line with no output left."""

from __future__ import annotations

import json
import time

import pandas as pd
import pytest

from reappraisal.cli import main
from reappraisal.data.quoting import quote
from reappraisal.table_contracts import CONTEST_COLUMNS

from .helpers import demo_params, write_judge
from .openai_fake import FakeOpenAI, Reply, slots

N_ANSWERS = 3


def _world(tmp_path, base_url, *, judge_overrides=None, opponents=None, api_key_env=None):
    judges = tmp_path / "judges"
    spec = {"backend": "openai", "model": "fake-model", "base_url": base_url, "api_key_env": api_key_env,
            "request": {"timeout_s": 0.5, "max_retries": 1, "backoff_s": 0.01, "max_backoff_s": 1, "concurrency": 4}}
    write_judge(judges, "fake-judge", **{**spec, **(judge_overrides or {})})
    vignettes = pd.DataFrame({"vignette_id": ["v1", "v2", "o1"], "pool": ["train", "train", "ood"],
                              "text": ["Scenario one.", "Scenario two.", "Scenario three."], "emotion": "anger"})
    targets = pd.DataFrame([
        {"reappraisal_id": f"g-{v}-{i}", "vignette_id": v, "author_type": "gpt4", "split": "heldout",
         "text": f"reference {v} {i}"} for v in ("v1", "v2") for i in range(2)])
    gen = tmp_path / "run1" / "generations"
    gen.mkdir(parents=True)
    pd.DataFrame([{"run": 1, "arm": "committee", "vignette_id": v, "pool": p, "sample": k,
                   "answer_id": f"committee|run1|{v}|{k}", "answer": f"GOOD {v} {k}"}
                  for v, p in (("v1", "train"), ("v2", "train"), ("o1", "ood")) for k in range(N_ANSWERS)]
                 ).to_parquet(gen / "committee.parquet")
    vignettes.to_parquet(tmp_path / "vignettes.parquet")
    targets.to_parquet(tmp_path / "targets.parquet")
    params = demo_params(arms=["committee"], head_to_head=[], best_of_n=[], judges=["fake-judge"], headline_judge="fake-judge",
                         judges_dir=str(judges), reward_path={"enabled": False, "opponents": None},
                         opponents=opponents or {"gpt-4-0314": {"source": "answers", "author_type": "gpt4",
                                                                "pools": ["train"]}})
    (tmp_path / "params.json").write_text(json.dumps(params))
    (tmp_path / "calibration.json").write_text(json.dumps(
        {"decision": {"verdicts": {"fake-judge": {"passed": True}}, "accepted_weak": False}}))
    out = {"judgments": tmp_path / "out" / "judgments.parquet", "contests": tmp_path / "out" / "contests.parquet"}
    argv = ["judge", "--run", "1", "--generations-dir", str(gen), "--targets", str(tmp_path / "targets.parquet"),
            "--vignettes", str(tmp_path / "vignettes.parquet"), "--calibration", str(tmp_path / "calibration.json"),
            "--cache-dir", str(tmp_path / "cache"), "--judgments", str(out["judgments"]),
            "--contests", str(out["contests"]), "--params", f"@{tmp_path / 'params.json'}"]
    return argv, out


def picks_better(body, n):
    a, _ = slots(body)
    return Reply("VERDICT: A" if a.startswith("GOOD") else "VERDICT: B")


def test_a_run_is_judged_end_to_end_through_the_command(tmp_path):
    with FakeOpenAI(picks_better) as srv:
        argv, out = _world(tmp_path, srv.base_url)
        assert main(argv) == 0
        assert srv.count == 2 * 2 * N_ANSWERS  # 2 train scenarios x N answers x both orders
        contests = pd.read_parquet(out["contests"])
        judgments = pd.read_parquet(out["judgments"])
        assert main(argv) == 0 and srv.count == 2 * 2 * N_ANSWERS  # rerun: all cached
    assert list(contests.columns) == CONTEST_COLUMNS
    assert len(contests) == 2 * N_ANSWERS and (contests["score"] == 1.0).all()
    assert set(contests["pool"]) == {"train"} and set(contests["judge_kind"]) == {"heldout"}
    assert len(judgments) == 2 * len(contests) and set(judgments["order"]) == {"AB", "BA"}
    assert judgments["raw"].str.startswith("VERDICT").all()


def _fails(argv, out, capfd, *needles):
    code = main(argv)
    err = capfd.readouterr().err.strip().splitlines()
    assert code == 2
    assert len([line for line in err if line.startswith("error:")]) == 1
    line = next(line for line in err if line.startswith("error:"))
    for needle in needles:
        assert needle in line, line
    assert not out["judgments"].exists() and not out["contests"].exists()
    assert not list(out["judgments"].parent.glob(".*")) if out["judgments"].parent.exists() else True


def test_an_opponent_with_no_answer_for_a_scenario(tmp_path, capfd):
    opponents = {"gpt-4-0314": {"source": "answers", "author_type": "gpt4", "pools": ["train", "ood"]}}
    argv, out = _world(tmp_path, "http://127.0.0.1:9/v1", opponents=opponents)
    _fails(argv, out, capfd, "no answer for scenario 'o1'", "evaluation.opponents.gpt-4-0314")


def test_a_judge_template_without_an_answer_slot(tmp_path, capfd):
    argv, out = _world(tmp_path, "http://127.0.0.1:9/v1",
                       judge_overrides={"template": {"user": "{scenario}\n{answer_a}\nWhich?"}})
    _fails(argv, out, capfd, "fake-judge.yaml", "{answer_b}")


def test_an_unknown_backend(tmp_path, capfd):
    argv, out = _world(tmp_path, "http://127.0.0.1:9/v1", judge_overrides={"backend": "telepathy"})
    _fails(argv, out, capfd, "fake-judge.yaml", "backend: 'telepathy'")


def test_an_endpoint_that_never_answers(tmp_path, capfd):
    with FakeOpenAI(lambda body, n: Reply("VERDICT: A", delay=2.0)) as srv:
        argv, out = _world(tmp_path, srv.base_url)
        _fails(argv, out, capfd, "call(s) to judge 'fake-judge'", "no answer within 0.5 s", "rerun")


def test_an_api_key_variable_that_is_not_set(tmp_path, capfd, monkeypatch):
    monkeypatch.delenv("UNSET_KEY_FOR_TEST", raising=False)
    argv, out = _world(tmp_path, "http://127.0.0.1:9/v1", api_key_env="UNSET_KEY_FOR_TEST")
    _fails(argv, out, capfd, "UNSET_KEY_FOR_TEST", "not set")


def test_a_judge_that_failed_calibration_is_refused(tmp_path, capfd):
    argv, out = _world(tmp_path, "http://127.0.0.1:9/v1")
    (tmp_path / "calibration.json").write_text(json.dumps(
        {"decision": {"verdicts": {"fake-judge": {"passed": False}}, "accepted_weak": False}}))
    _fails(argv, out, capfd, "did not pass calibration")


@pytest.mark.parametrize("missing", ["committee"])
def test_missing_generations(tmp_path, capfd, missing):
    argv, out = _world(tmp_path, "http://127.0.0.1:9/v1")
    (tmp_path / "run1" / "generations" / f"{missing}.parquet").unlink()
    _fails(argv, out, capfd, "no generations for ['committee']")


def test_a_judge_whose_replies_are_unparseable_stops_the_stage_with_one_line_quoting_one(tmp_path, capfd):
    chatty = "Both reappraisals have merit; on balance I lean towards the first one. " * 10
    with FakeOpenAI(lambda body, n: Reply(chatty)) as srv:
        argv, out = _world(tmp_path, srv.base_url)
        _fails(argv, out, capfd, "fake-judge.yaml", f"{2 * 2 * N_ANSWERS} of {2 * 2 * N_ANSWERS} verdicts of judge "
               "'fake-judge' are unparseable", "max_unparseable_share 0.5", quote(chatty))
        assert srv.count == 2 * 2 * N_ANSWERS
        # a judge allowed that many: the same replies, re-read from the cache (nothing asked again), are kept as errors
        argv, out = _world(tmp_path / "again", srv.base_url, judge_overrides={
            "verdict": {"max_unparseable_share": 1}})
        argv[argv.index("--cache-dir") + 1] = str(tmp_path / "cache")
        assert main(argv) == 0 and srv.count == 2 * 2 * N_ANSWERS
    assert pd.read_parquet(out["contests"])["error"].all()


def test_a_refused_key_mid_run_stops_at_once_with_one_line_and_never_shows_the_key(tmp_path, capfd, monkeypatch):
    secret = "sk-test-0d1e2f3a4b"
    monkeypatch.setenv("FAKE_JUDGE_KEY", secret)

    def responder(body, n):  # two answers, then the key is revoked; the calls in flight meanwhile dribble
        if n < 2:
            return picks_better(body, n)
        return Reply(status=401, delay=0.2) if n == 2 else Reply(trickle=0.05)

    with FakeOpenAI(responder) as srv:
        argv, out = _world(tmp_path, srv.base_url, api_key_env="FAKE_JUDGE_KEY", judge_overrides={"request": {
            "timeout_s": 10, "max_retries": 3, "backoff_s": 0.01, "max_backoff_s": 1, "concurrency": 2}})
        start = time.monotonic()
        code = main(argv)
        elapsed = time.monotonic() - start
        time.sleep(0.2)  # a cut call would be retried by now if it were going to be
        asked = srv.count
    stdout, stderr = capfd.readouterr()
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert code == 2 and len(errors) == 1
    assert "HTTP 401" in errors[0] and "$FAKE_JUDGE_KEY" in errors[0] and "fake-judge.yaml" in errors[0]
    assert secret not in stdout + stderr
    assert elapsed < 5 and asked <= 4  # the 10 s calls in flight were cut, not retried; nothing more was asked
    assert not out["judgments"].exists() and not out["contests"].exists()
    assert len([line for line in (tmp_path / "cache" / "fake-judge.jsonl").read_text().splitlines() if line]) == 2


def test_replies_that_did_not_parse_are_asked_again_after_forget_unparsed_replies(tmp_path, capfd):
    """A brief misbehaviour of the endpoint (garbled replies) is cached like any reply: the stage's error names
    the command that forgets those replies, and the rerun asks those calls again, and only those."""
    n_calls = 2 * 2 * N_ANSWERS
    garbled = {"on": True}

    def responder(body, n):
        if garbled["on"]:
            return Reply("<html>502 upstream</html>")
        return Reply("VERDICT: A" if "GOOD" in slots(body)[0] else "VERDICT: B")

    with FakeOpenAI(responder) as srv:
        argv, out = _world(tmp_path, srv.base_url)
        _fails(argv, out, capfd, "forget-unparsed-replies --judge fake-judge")
        garbled["on"] = False
        assert main(argv) == 2 and srv.count == n_calls  # a rerun re-reads the cached garbage, asks nothing
        capfd.readouterr()
        assert main(["forget-unparsed-replies", "--judge", "fake-judge", "--judges-dir", str(tmp_path / "judges"),
                     "--cache-root", str(tmp_path / "cache")]) == 0
        assert f"{n_calls} call(s) will be asked again" in capfd.readouterr().out
        assert main(argv) == 0 and srv.count == 2 * n_calls  # each call asked once more
    assert not pd.read_parquet(out["contests"])["error"].any()
