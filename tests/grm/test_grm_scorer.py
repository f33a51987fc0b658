"""The GRM scorer: win rate over the reference in both orders, batched == one at a time."""

from __future__ import annotations

import numpy as np
import pytest

from reappraisal.errors import PipelineInputError
from reappraisal.grm.pairwise import PairwiseModel, Verdicts
from reappraisal.grm.scorer import GRMScorer, median_references
from reappraisal.grm.verdict import parse_verdict

from .conftest import SCENARIOS

CANDIDATES = [
    "Maybe they had a long day and forgot.", "Forget it.", "Perhaps they were scared to tell you.",
    "It could be that an emergency came up.", "Nothing matters.", "Maybe they value you a lot.",
    "Stop thinking about it.", "Perhaps they did not see your messages.", "It does not matter.",
    "Maybe they will explain tomorrow.", "People are like that.", "It could be that they felt shy.",
]


class ScriptedJudge:
    """Replies are fixed by the text in slot A (a stand-in to check the scoring arithmetic)."""

    def __init__(self, replies):
        self.replies = replies

    def judge(self, scenarios, firsts, seconds):
        texts = [self.replies(a, b) for a, b in zip(firsts, seconds)]
        verdicts = [parse_verdict(t) for t in texts]
        return Verdicts(verdicts, texts, np.array([{"A": 1.0, "B": 0.0}.get(v, 0.5) for v in verdicts]))

    judge_one_at_a_time = judge


def test_score_is_the_win_rate_over_both_orders_and_errors_count_half():
    ref = "REF"
    replies = {
        ("good", ref): "ANSWER: A", (ref, "good"): "ANSWER: B",  # wins both -> 1
        ("bad", ref): "ANSWER: B", (ref, "bad"): "ANSWER: A",  # loses both -> 0
        ("slot", ref): "ANSWER: A", (ref, "slot"): "ANSWER: A",  # first slot always -> 0.5
        ("err", ref): "ANSWER: A", (ref, "err"): "no idea",  # win + error(0.5) -> 0.75
    }
    scorer = GRMScorer(ScriptedJudge(lambda a, b: replies[(a, b)]), {"v1": ref})
    scores = scorer.score(["v1"] * 4, ["s"] * 4, ["good", "bad", "slot", "err"])
    np.testing.assert_allclose(scores, [1.0, 0.0, 0.5, 0.75])
    assert scorer.last_error_count == 1
    assert scorer.last_verdicts.shape == (4, 2) and scorer.last_verdicts[3, 1] == "error"


def test_scenario_without_a_train_reference_is_a_clear_error():
    scorer = GRMScorer(ScriptedJudge(lambda a, b: "ANSWER: A"), {"v1": "REF"})
    with pytest.raises(PipelineInputError, match=r"vignette ood7: scenario 'ood7' has no human reference"):
        scorer.score(["v1", "ood7"], ["s", "s"], ["x", "y"])
    with pytest.raises(PipelineInputError, match="no reference"):
        GRMScorer(ScriptedJudge(lambda a, b: ""), {})


def _inputs(n=12):
    vids = [list(SCENARIOS)[i % 3] for i in range(n)]
    return vids, [SCENARIOS[v] for v in vids], CANDIDATES[:n]


@pytest.mark.parametrize("mode", ["generate", "logprob"])
def test_batched_scores_equal_one_at_a_time_on_the_same_model(tiny_base, tables, mode):
    refs = median_references(tables["targets"], tables["vignettes"], "effectiveness")
    scorer = GRMScorer.from_dir(tiny_base, references=refs, max_new_tokens=12, batch_size=32, mode=mode)
    vids, scen, cands = _inputs()
    batched = scorer.score(vids, scen, cands)
    texts_batched, verdicts_batched = scorer.last_texts, scorer.last_verdicts.copy()
    single = scorer.score_one_at_a_time(vids, scen, cands)
    assert batched.shape == (12,) and ((batched >= 0) & (batched <= 1)).all()
    if mode == "generate":
        np.testing.assert_array_equal(batched, single)
        assert texts_batched == scorer.last_texts  # the same greedy tokens, padding or not
        assert (verdicts_batched == scorer.last_verdicts).all()
    else:
        np.testing.assert_allclose(batched, single, rtol=0, atol=1e-5)
        assert scorer.last_error_count == 0


def test_small_batches_give_the_same_scores(tiny_base, tables):
    refs = median_references(tables["targets"], tables["vignettes"], "effectiveness")
    vids, scen, cands = _inputs(5)
    big = GRMScorer.from_dir(tiny_base, references=refs, max_new_tokens=8, batch_size=64).score(vids, scen, cands)
    small = GRMScorer.from_dir(tiny_base, references=refs, max_new_tokens=8, batch_size=3).score(vids, scen, cands)
    np.testing.assert_array_equal(big, small)


def test_judge_rejects_bad_settings(tiny_base):
    with pytest.raises(ValueError, match="mode"):
        PairwiseModel.from_dir(tiny_base, max_new_tokens=4, mode="vibes")
    with pytest.raises(ValueError, match="max_new_tokens"):
        PairwiseModel.from_dir(tiny_base, max_new_tokens=0)
