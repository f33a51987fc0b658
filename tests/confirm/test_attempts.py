"""The ledger of confirmation attempts: the first attempt on a pool spends it for every other registration."""

from reappraisal.confirm.attempts import attempt_record, describe, is_recorded, pool_id, spent_by

RESULT = {"system": "committee", "opponent": "gpt-4-0314", "win_rate": 0.196, "ci_low": 0.083, "ci_high": 0.424,
          "bar": 0.5, "verdict": "not confirmed"}


def test_a_pool_is_its_scenarios_whatever_their_order_or_repeats():
    assert pool_id(["c2", "c1", "c1"]) == pool_id(["c1", "c2"]) != pool_id(["c1", "c3"])


def test_another_registration_on_a_spent_pool_is_refused_the_same_one_is_the_same_attempt():
    pool = pool_id(["c1", "c2"])
    ledger = [attempt_record(RESULT, pool=pool, registration_sha256="a" * 64, date="2026-12-02T06:00:00+00:00")]
    assert spent_by(ledger, pool=pool, registration_sha256="a" * 64) is None  # a rerun of the same registration
    assert is_recorded(ledger, pool=pool, registration_sha256="a" * 64)
    assert spent_by(ledger, pool=pool, registration_sha256="b" * 64) == ledger[0]  # an edited registration
    assert spent_by(ledger, pool=pool_id(["c3", "c4"]), registration_sha256="b" * 64) is None  # a new pool
    text = describe(ledger[0])
    assert "2026-12-02" in text and "0.196 [0.083, 0.424] vs bar 0.5 not confirmed" in text and "a" * 12 in text
