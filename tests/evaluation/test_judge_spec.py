"""Judge YAMLs: validation with one clear line, and verdict parsing from the final marker."""

from __future__ import annotations

import pytest

from reappraisal.errors import ConfigError
from reappraisal.evaluation.judge_spec import JUDGES_DIR, load_judge

from .helpers import write_judge


@pytest.mark.parametrize("name", sorted(p.stem for p in JUDGES_DIR.glob("*.yaml")))
def test_every_shipped_judge_is_valid(name):
    spec = load_judge(name)
    msgs = spec.messages("SCEN", "FIRST", "SECOND")
    text = "\n".join(m["content"] for m in msgs)
    assert "SCEN" in text and text.index("FIRST") < text.index("SECOND")


@pytest.mark.parametrize("overrides,message", [
    ({"template": {"user": "SCENARIO: {scenario}\nA: {answer_a}"}}, "lacks the slot(s) {answer_b}"),
    ({"backend": "carrier-pigeon"}, "backend: 'carrier-pigeon' is not one of"),
    ({"verdict": {"pattern": "VERDICT: (A|B"}}, "not a regular expression"),
    ({"verdict": {"pattern": "VERDICT: [AB]"}}, "needs one capturing group"),
    ({"verdict": {"labels": {"A": "A", "C": "tie"}}}, "map some label to A and some label to B"),
    ({"backend": "openai", "base_url": None}, "base_url is required"),
    ({"decoding": {"temperature": -1}}, "decoding.temperature"),
    ({"surprise": 1}, "Additional properties are not allowed"),
    ({"decoding": {"logprob": True}, "template": {"prefill": None}}, "decoding.logprob needs the transformers backend"),
    ({"backend": "openai", "base_url": "http://127.0.0.1:9/v1",
      "template": {"prefill": "VERDICT:"}}, "prefill is supported by the transformers backend only"),
])
def test_bad_judge_files_are_refused_with_one_line_naming_the_file(tmp_path, overrides, message):
    write_judge(tmp_path, "bad", **overrides)
    with pytest.raises(ConfigError) as info:
        load_judge("bad", tmp_path)
    text = str(info.value)
    assert message in text and "bad.yaml" in text and "\n" not in text


def test_unknown_judge_names_the_known_ones(tmp_path):
    write_judge(tmp_path, "one")
    with pytest.raises(ConfigError, match=r"no judge named 'two' \(known: one\)"):
        load_judge("two", tmp_path)


def test_the_last_verdict_counts_and_unknown_labels_are_errors(tmp_path):
    write_judge(tmp_path, "j")
    spec = load_judge("j", tmp_path)
    assert spec.parse("VERDICT: A ... on reflection VERDICT: B") == "B"
    assert spec.parse("<think>VERDICT: A</think>\nverdict: tie") == "tie"
    assert spec.parse("no verdict here") == "error"
    assert spec.parse("") == "error" and spec.parse(None) == "error"
    write_judge(tmp_path, "k", verdict={"pattern": r"\[\[([A-Z])\]\]", "labels": {"A": "A", "B": "B", "C": "tie"}})
    spec = load_judge("k", tmp_path)
    assert spec.parse("[[C]]") == "tie" and spec.parse("[[D]]") == "error" and spec.parse("[[A]] [[B]]") == "B"


def test_slots_are_replaced_literally(tmp_path):
    write_judge(tmp_path, "j", template={"user": "{scenario} | {answer_a} | {answer_b} | {not_a_slot}"})
    msgs = load_judge("j", tmp_path).messages("s {answer_b}", "a", "b")
    assert msgs[-1]["content"] == "s {answer_b} | a | b | {not_a_slot}"
