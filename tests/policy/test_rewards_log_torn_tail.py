"""The rewards log (append-only JSON lines): a line a kill cut is dropped before the next is appended."""

from __future__ import annotations

import json

from reappraisal.policy.committee import CommitteeWeights, FormatGate
from reappraisal.policy.reward_adapter import CommitteeReward

from .fakes import FakeRM


def _call(log_path, step):
    reward = CommitteeReward(weights=CommitteeWeights(1.0, 0.0, 0.5), gate=FormatGate(), num_generations=2,
                             rm_scorer=FakeRM(), rewards_log=log_path)
    state = type("State", (), {"global_step": step})()
    return reward(prompts=[None] * 2, completions=["t</think>Maybe they forgot.", "t</think>Ask them kindly."],
                  vignette_id=["v1", "v1"], scenario=["s", "s"], trainer_state=state)


def test_a_torn_last_line_is_cut_and_the_next_line_is_whole(tmp_path):
    log = tmp_path / "rewards.jsonl"
    _call(log, 1)
    with log.open("a") as fh:  # the run was killed while writing step 2's line
        fh.write('{"step": 2, "vignette_id": ["v1", "v1"], "answ')
    rewards = _call(log, 3)  # the resumed run's first call
    lines = log.read_text().splitlines()
    records = [json.loads(line) for line in lines]  # every line parses: nothing glued to the torn one
    assert [r["step"] for r in records] == [1, 3]
    assert records[-1]["reward"] == rewards
    assert log.read_text().endswith("\n")
