"""Verdict parsing over a table of tricky judge outputs, the ±1 reward, and the prompt layout."""

from __future__ import annotations

import pytest

from reappraisal.grm.prompts import (
    SYSTEM_PROMPT,
    USER_TEMPLATE,
    answer_prefix,
    format_completion,
    judge_messages,
)
from reappraisal.grm.reward import trl_verdict_reward, verdict_reward
from reappraisal.grm.verdict import flip, parse_verdict, verdict_counts

CASES = [
    # (reply, verdict, why)
    ("ANSWER: A", "A", "the exact format"),
    ("Reasoning here.\nANSWER: B", "B", "after reasoning"),
    ("answer: b", "B", "lower case marker and letter"),
    ("Answer: a", "A", "mixed case"),
    ("ANSWER: (B).", "B", "parenthesised letter with a full stop"),
    ("ANSWER: [A]", "A", "bracketed"),
    ("**ANSWER: B**", "B", "markdown bold around the line"),
    ("**ANSWER:** A", "A", "markdown bold around the marker"),
    ("ANSWER: 'A'.", "A", "quoted"),
    ("ANSWER:B", "B", "no space"),
    ("ANSWER: B!\n\n", "B", "trailing punctuation and blank lines"),
    ("ANSWER: Reappraisal A", "A", "the word reappraisal before the letter"),
    ("ANSWER: B<|im_end|>", "B", "chat end token left in"),
    ("ANSWER: A\n</think>", "A", "a stray thinking tag after the verdict"),
    ("At first ANSWER: A seems right, but B is more specific.\nANSWER: B", "B",
     "verdict mentioned early, then changed: the last one counts"),
    ("ANSWER: B\nOn reflection, A.\nANSWER: A", "A", "changed twice: the last one counts"),
    ("A is warmer, B is more specific. ANSWER: A", "A", "both letters in the reasoning, one verdict"),
    ("ANSWER: A\nOn reflection B is better.", "error", "reasoning continues after the last verdict"),
    ("ANSWER: A or B", "error", "both letters in the verdict"),
    ("ANSWER: A/B", "error", "both letters, slash"),
    ("ANSWER: AB", "error", "two letters glued"),
    ("ANSWER: Both", "error", "a word starting with B"),
    ("ANSWER: C", "error", "another letter"),
    ("ANSWER:", "error", "marker without a letter"),
    ("B is more effective.", "error", "missing verdict marker"),
    ("The answer is B", "error", "no colon: not the verdict format"),
    ("", "error", "empty reply"),
    (None, "error", "no reply at all"),
]


@pytest.mark.parametrize("reply,expected,why", CASES, ids=[c[2] for c in CASES])
def test_parse_verdict_table(reply, expected, why):
    assert parse_verdict(reply) == expected, why


def test_flip_and_counts():
    assert flip("A") == "B" and flip("B") == "A" and flip("error") == "error"
    assert verdict_counts(["A", "error", "A"]) == {"A": 2, "B": 0, "error": 1}
    with pytest.raises(ValueError):
        verdict_counts(["A", "tie"])


def test_reward_is_plus_one_only_for_the_correct_final_verdict():
    assert verdict_reward("ANSWER: A", "A") == 1.0
    assert verdict_reward("ANSWER: B", "A") == -1.0
    assert verdict_reward("no verdict", "A") == -1.0
    assert verdict_reward("ANSWER: A\nwait\nANSWER: B", "B") == 1.0
    with pytest.raises(ValueError):
        verdict_reward("ANSWER: A", "tie")


def test_trl_adapter_signature_alignment_and_logging():
    logged = {}
    rewards = trl_verdict_reward(
        prompts=["p1", "p1", "p2", "p2"],
        completions=["ANSWER: A", "garbage", [{"role": "assistant", "content": "ANSWER: B"}], "ANSWER: A"],
        completion_ids=[[1], [2], [3], [4]],
        correct=["A", "A", "B", "B"],
        trainer_state=None,
        log_metric=lambda name, value: logged.__setitem__(name, value),
    )
    assert rewards == [1.0, -1.0, 1.0, -1.0]
    assert logged == {"grm/unparseable": 0.25}
    with pytest.raises(ValueError):
        trl_verdict_reward(prompts=["p"], completions=["ANSWER: A"], correct=["A", "B"])


def test_prompt_is_the_model_cards():
    assert SYSTEM_PROMPT.startswith("You judge cognitive reappraisals. ")
    assert SYSTEM_PROMPT.endswith("end your reply with exactly 'ANSWER: A' or 'ANSWER: B'.")
    assert USER_TEMPLATE == "SCENARIO:\n{v}\n\nREAPPRAISAL A:\n{a}\n\nREAPPRAISAL B:\n{b}\n\nWhich is more effective?"
    msgs = judge_messages("S", "first", "second")
    assert msgs[0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert msgs[1]["content"] == "SCENARIO:\nS\n\nREAPPRAISAL A:\nfirst\n\nREAPPRAISAL B:\nsecond\n\nWhich is more effective?"


@pytest.mark.parametrize("style", ["open", "tags", "plain"])
def test_formatted_completions_parse_back(style):
    for verdict in "AB":
        text = format_completion("Effectiveness A; empathy B.", verdict, style)
        assert parse_verdict(text) == verdict
    assert answer_prefix(style).endswith("ANSWER:")
    with pytest.raises(ValueError):
        format_completion("x", "tie", style)
