"""The sentence splitter behind the two-sentence format gate."""

import pytest

from reappraisal.policy.committee import FormatGate
from reappraisal.sentences import count_sentences, split_sentences


@pytest.mark.parametrize(
    "text, n",
    [
        ("", 0),
        ("   \n ", 0),
        ("No punctuation at all", 1),
        ("Maybe they forgot. You could ask them.", 2),
        ("Really?! Yes.", 2),
        # abbreviations
        ("Dr. Lee may have been busy. You could ask again tomorrow.", 2),
        ("Mr. and Mrs. Smith were tired. It was late.", 2),
        ("Your friend, e.g. Sam, might be stressed. That is okay.", 2),
        ("They moved to the U.S. Last year was hard.", 1),
        ("J. Smith called. Good.", 2),
        ("It is 3.5 hours away. Relax.", 2),
        # ellipses
        ("Maybe they were tired... or just distracted. It is not about you.", 2),
        ("Maybe they were tired… or distracted.", 1),
        ("Wait... What if they forgot? Ask them!", 3),
        ("Maybe they forgot… You could ask.", 2),
        # quotes and lines
        ('She said "I am sorry." Then she left.', 2),
        ("- one\n- two\n- three", 3),
    ],
)
def test_count(text, n):
    assert count_sentences(text) == n


def test_pieces_keep_their_text():
    assert split_sentences("Dr. Lee was busy... or tired. Ask again!") == ["Dr. Lee was busy... or tired.", "Ask again!"]


def test_gate():
    gate = FormatGate(max_sentences=2, penalty=-3.0)
    assert gate.check("").reason == "empty"
    assert gate.check("One. Two.").passed
    v = gate.check("One. Two. Three.")
    assert (v.passed, v.reason, v.n_sentences) == (False, "too_long", 3)
    assert gate.check("Dr. Lee was busy, e.g. at work... or tired. Ask again!").passed
