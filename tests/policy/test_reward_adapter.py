"""The TRL adapter: batched judges, gate, group logic, metrics (one process)."""

import numpy as np
import pytest
from .fakes import FakeGRM, FakeRM

from reappraisal.policy.committee import CommitteeWeights, FormatGate, committee_rewards
from reappraisal.policy.reward_adapter import CommitteeReward

G = 4


def _batch():
    vids = ["v01"] * G + ["v02"] * G
    answers = ["Maybe they forgot.", "", "One. Two. Three.", "Ask them kindly.",
               "They care.", "It was a hard day for them.", "You matter.", "Perhaps they were shy. Ask."]
    completions = [f"think</think>{a}" if a else "never closes" for a in answers]
    return vids, [f"scenario {v}" for v in vids], completions, answers


def test_adapter_scores_passing_answers_once_per_judge_and_logs():
    vids, scen, comps, answers = _batch()
    rm, grm = FakeRM(), FakeGRM()
    logged = {}
    reward = CommitteeReward(weights=CommitteeWeights(0.5, 0.5, 0.5), gate=FormatGate(2, -3.0), num_generations=G, rm_scorer=rm, grm_scorer=grm)
    out = reward(prompts=[None] * 8, completions=comps, vignette_id=vids, scenario=scen,
                 log_metric=lambda k, v: logged.__setitem__(k, v), trainer_state=None)
    assert rm.calls == [6] and grm.calls == [6]  # one batched call each, passing answers only
    assert out[1] == -3.0 and out[2] == -3.0
    # equals the pure committee on the same scores
    passed = [bool(a) and a != "One. Two. Three." for a in answers]
    rm_s = np.full(8, np.nan)
    grm_s = np.full(8, np.nan)
    idx = [i for i in range(8) if passed[i]]
    rm_s[idx] = FakeRM().score([scen[i] for i in idx], [answers[i] for i in idx])
    grm_s[idx] = FakeGRM().score([vids[i] for i in idx], [scen[i] for i in idx], [answers[i] for i in idx])
    ref = committee_rewards(vids, passed, rm_s, grm_s, group_size=G, weights=CommitteeWeights(0.5, 0.5, 0.5), penalty=-3.0)
    assert out == pytest.approx(ref.rewards.tolist())
    assert logged["committee/gate_pass_rate"] == pytest.approx(6 / 8)
    assert logged["committee/gate_empty_rate"] == pytest.approx(1 / 8)
    assert logged["committee/gate_too_long_rate"] == pytest.approx(1 / 8)
    assert {"committee/rm_score", "committee/grm_score", "committee/guard", "committee/rm_flat_rate",
            "committee/grm_flat_rate"} <= set(logged)


def test_rm_only_never_calls_the_grm():
    vids, scen, comps, _ = _batch()
    rm = FakeRM()
    reward = CommitteeReward(weights=CommitteeWeights(1.0, 0.0, 0.5), gate=FormatGate(), num_generations=G, rm_scorer=rm, grm_scorer=None)
    out = reward(prompts=[None] * 8, completions=comps, vignette_id=vids, scenario=scen)
    assert len(out) == 8 and rm.calls == [6]


def test_conversational_completions_are_read():
    reward = CommitteeReward(weights=CommitteeWeights(1.0, 0.0, 0.5), gate=FormatGate(), num_generations=2, rm_scorer=FakeRM())
    comps = [[{"role": "assistant", "content": "t</think>Maybe they forgot."}], [{"role": "assistant", "content": "no close"}]]
    assert reward(prompts=[None] * 2, completions=comps, vignette_id=["v", "v"], scenario=["s", "s"])[1] == -3.0


def test_partial_groups_are_refused():
    vids, scen, comps, _ = _batch()
    reward = CommitteeReward(weights=CommitteeWeights(0.5, 0.5, 0.5), gate=FormatGate(), num_generations=G, rm_scorer=FakeRM(), grm_scorer=FakeGRM())
    with pytest.raises(ValueError, match="whole groups"):
        reward(prompts=[None] * 6, completions=comps[:6], vignette_id=vids[:6], scenario=scen[:6])


def test_simulated_two_processes_match_one():
    """Two threads stand in for two processes; the middle group straddles them (6 + 6 of 3 groups x 4)."""
    import threading

    vids = ["v01"] * G + ["v02"] * G + ["v03"] * G
    scen = [f"scenario {v}" for v in vids]
    answers = ["Maybe they forgot.", "", "Ask them kindly.", "One. Two. Three.", "They care.", "A hard day.",
               "You matter.", "Perhaps they were shy.", "It is not about you.", "Maybe.", "They were busy.", "Ask."]
    comps = [f"t</think>{a}" for a in answers]

    def adapter(**kw):
        return CommitteeReward(weights=CommitteeWeights(0.5, 0.5, 0.5), gate=FormatGate(), num_generations=G,
                               rm_scorer=FakeRM(), grm_scorer=FakeGRM(), **kw)

    ref = adapter()(prompts=[None] * 12, completions=comps, vignette_id=vids, scenario=scen)

    barrier = threading.Barrier(2)
    slots: dict[int, list] = {}
    out: dict[int, list] = {}

    def run(rank):
        def gather(records):
            slots[rank] = records
            barrier.wait()
            return slots[0] + slots[1]

        sl = slice(rank * 6, (rank + 1) * 6)
        out[rank] = adapter(process_info=lambda: (rank, 2), gather=gather)(
            prompts=[None] * 6, completions=comps[sl], vignette_id=vids[sl], scenario=scen[sl])

    threads = [threading.Thread(target=run, args=(r,)) for r in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out[0] + out[1] == pytest.approx(ref)
