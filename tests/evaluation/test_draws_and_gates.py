"""Contest draws, opponents, the calibration/judge-train halves and the OOD disjointness gate (pure parts)."""

from __future__ import annotations

import pandas as pd
import pytest

from reappraisal.errors import ConfigError, PipelineInputError
from reappraisal.evaluation.calibration import decide
from reappraisal.evaluation.draw import draw_contests
from reappraisal.evaluation.human_pairs import human_pairs
from reappraisal.evaluation.ood_gate import ood_disjointness
from reappraisal.evaluation.opponents import answer_pools, parse_opponents
from reappraisal.evaluation.seeds import derived_seed
from reappraisal.settings import EvaluationSettings


def _answers(arm, scenarios=("v1", "v2"), n=5, pool="train"):
    return pd.DataFrame([{"vignette_id": v, "pool": pool, "sample": k, "answer_id": f"{arm}-{v}-{k}",
                          "answer": f"{arm} {v} {k}"} for v in scenarios for k in range(n)])


def _pool(v, n):
    return pd.DataFrame({"answer_id": [f"o-{v}-{i}" for i in range(n)], "text": [f"opp {v} {i}" for i in range(n)]})


def test_every_arm_answer_plays_once_and_opponent_answers_are_used_evenly():
    mine = _answers("a", n=6)
    theirs = {"v1": _pool("v1", 3), "v2": _pool("v2", 2)}
    c = draw_contests(mine, theirs, arm="a", opponent="o", run=1, seed=7, pools=("train",))
    assert len(c) == 12 and c["model_answer_id"].is_unique and c["contest_id"].is_unique
    assert c[c.vignette_id == "v1"]["opponent_answer_id"].value_counts().tolist() == [2, 2, 2]
    assert c[c.vignette_id == "v2"]["opponent_answer_id"].value_counts().tolist() == [3, 3]
    again = draw_contests(mine, theirs, arm="a", opponent="o", run=1, seed=7, pools=("train",))
    pd.testing.assert_frame_equal(c, again)
    orders = {tuple(draw_contests(mine, theirs, arm="a", opponent="o", run=r, seed=7, pools=("train",))
                    ["opponent_answer_id"]) for r in (1, 2, 3, 4, 5)}
    assert len(orders) > 1  # each run draws afresh


def test_head_to_head_pairs_sample_k_with_sample_k_and_pools_filter():
    mine, other = _answers("a", n=3), _answers("b", n=3)
    theirs = {v: g.rename(columns={"answer": "text"})[["answer_id", "text"]] for v, g in other.groupby("vignette_id")}
    c = draw_contests(mine, theirs, arm="a", opponent="arm:b", run=1, seed=1, pools=("train",), paired=True)
    assert (c["model_answer_id"].str.replace("a-", "") == c["opponent_answer_id"].str.replace("b-", "")).all()
    assert draw_contests(mine, theirs, arm="a", opponent="arm:b", run=1, seed=1, pools=("ood",)).empty


def test_opponent_config_errors_name_the_key():
    with pytest.raises(ConfigError, match="evaluation.opponents.x.*needs `author_type`"):
        parse_opponents(EvaluationSettings.from_config({"opponents": {"x": {"source": "answers", "pools": ["train"]}}}), ["a"])
    with pytest.raises(ConfigError, match=r"head_to_head\[0\].*'zzz' is not an evaluated arm"):
        parse_opponents(EvaluationSettings.from_config({"head_to_head": [{"arm": "a", "opponent_arm": "zzz", "pools": ["train"]}]}),
                        ["a", "b"])
    opps = parse_opponents(EvaluationSettings.from_config({"head_to_head": [{"arm": "a", "opponent_arm": "b",
                                                                             "pools": ["train"]}]}), ["a", "b"])
    assert opps["arm:b"].plays("a") and not opps["arm:b"].plays("b")


def test_an_opponent_without_an_answer_for_a_scenario_is_refused():
    opp = parse_opponents(EvaluationSettings.from_config({"opponents": {"r1": {"source": "answers", "author_type": "r1",
                                                                          "pools": ["train"]}}}),
                          ["a"])["r1"]
    vignettes = pd.DataFrame({"vignette_id": ["v1", "v2"], "pool": ["train", "train"], "text": ["x", "y"]})
    targets = pd.DataFrame({"reappraisal_id": ["r-1"], "vignette_id": ["v1"], "author_type": ["r1"], "text": ["t"]})
    with pytest.raises(PipelineInputError, match="opponent 'r1'.*no answer for scenario 'v2'") as info:
        answer_pools(opp, targets, vignettes)
    assert "config evaluation.opponents.r1" in str(info.value)


def test_derived_seeds_differ_by_arm_and_run_and_are_stable():
    seeds = {derived_seed(1, "generate", arm, run) for arm in ("a", "b") for run in (1, 2, 3)}
    assert len(seeds) == 6 and derived_seed(1, "generate", "a", 1) == derived_seed(1, "generate", "a", 1)


def _targets():
    rows = []
    for v in ("v1", "v2"):
        for i in range(10):
            rows.append({"reappraisal_id": f"{v}-r{i}", "vignette_id": v, "author_type": "human", "split": "val",
                         "text": f"text {v} {i}", "z_effectiveness": i / 3})
        rows.append({"reappraisal_id": f"{v}-train", "vignette_id": v, "author_type": "human", "split": "train",
                     "text": "train", "z_effectiveness": 0.0})
    return pd.DataFrame(rows)


def test_judge_train_and_calibration_halves_share_no_reappraisal_and_only_use_validation():
    pairs = human_pairs(_targets(), dimension="effectiveness", judge_train_fraction=0.5, seed=3)
    ids = {h: set(pairs.loc[pairs.half == h, ["first_id", "second_id"]].to_numpy().ravel())
           for h in ("judge_train", "calibration")}
    assert ids["judge_train"] and ids["calibration"] and not ids["judge_train"] & ids["calibration"]
    assert not any("train" in i for s in ids.values() for i in s)
    assert (pairs["margin"] == pairs["z_first"] - pairs["z_second"]).all()
    assert 0.2 < (pairs["margin"] > 0).mean() < 0.8  # which text comes first carries no information
    pd.testing.assert_frame_equal(pairs, human_pairs(_targets(), dimension="effectiveness",
                                                     judge_train_fraction=0.5, seed=3))
    only_cal = human_pairs(_targets(), dimension="effectiveness", judge_train_fraction=0.0, seed=3)
    assert set(only_cal["half"]) == {"calibration"} and len(only_cal) == 2 * 45


def test_calibration_decision_stops_a_weak_judge_unless_accepted_knowingly():
    numbers = {"good": {"agreement": {"half": 0.8}}, "weak": {"agreement": {"half": 0.55}}}
    ok = decide(numbers, selected=["good"], min_agreement=0.7, way="half", accept_weak=False)
    assert ok["ok"] and not ok["accepted_weak"] and ok["failed"] == []
    # a candidate the evaluation does not use is judged too, and cannot stop the stage
    assert ok["verdicts"]["weak"] == {"agreement": 0.55, "passed": False, "selected": False}
    bad = decide(numbers, selected=["good", "weak"], min_agreement=0.7, way="half", accept_weak=False)
    assert not bad["ok"] and bad["failed"] == ["weak"]
    accepted = decide(numbers, selected=["weak"], min_agreement=0.7, way="half", accept_weak=True)
    assert accepted["ok"] and accepted["accepted_weak"]


def _ood_tables(ood_texts):
    vignettes = pd.DataFrame({
        "vignette_id": ["t1", *[f"o{i}" for i in range(len(ood_texts))]],
        "pool": ["train", *["ood"] * len(ood_texts)],
        "text": ["Your friend forgot your birthday dinner and went to a concert with other people instead.",
                 *ood_texts],
    })
    targets = pd.DataFrame([
        {"reappraisal_id": "h1", "vignette_id": "t1", "split": "train", "author_type": "human",
         "text": "Maybe they simply lost track of time because the week had been chaotic for everyone involved."},
        {"reappraisal_id": "g1", "vignette_id": "t1", "split": "heldout", "author_type": "gpt4",
         "text": "It is possible that the invitation reached them late and they felt too awkward to cancel."},
    ])
    return vignettes, targets


FRESH = ["A colleague presented your idea in the team meeting without mentioning that it came from you at all.",
         "Your neighbour complained to the landlord about noise on the one evening you had guests over for dinner."]


def test_the_ood_gate_passes_disjoint_scenarios():
    report = ood_disjointness(*_ood_tables(FRESH), n=8)
    assert report["passed"] and report["overlaps"] == [] and report["too_short"] == []


@pytest.mark.parametrize("planted,kind", [
    ("Lately your friend forgot your birthday dinner and went to a concert with other people.", "training scenario"),
    ("At work maybe they simply lost track of time because the week had been chaotic for everyone.",
     "training reappraisal"),
    ("Think that the invitation reached them late and they felt too awkward to cancel the trip.",
     "held-out answer on a training scenario"),
    (FRESH[0].replace("A colleague", "One colleague"), "another OOD scenario"),
])
def test_a_planted_copy_fails_the_ood_gate_and_is_named(planted, kind):
    report = ood_disjointness(*_ood_tables([*FRESH, planted]), n=8)
    assert not report["passed"]
    assert kind in {h["other_kind"] for h in report["overlaps"]}


def test_scenarios_too_short_to_hold_an_ngram_are_reported_and_fail_unless_allowed():
    report = ood_disjointness(*_ood_tables([*FRESH, "Too short to check."]), n=8)
    assert report["too_short"] == ["o2"] and not report["passed"]
    assert ood_disjointness(*_ood_tables([*FRESH, "Too short to check."]), n=8, allow_short=True)["passed"]
