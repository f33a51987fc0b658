"""The card's prompt, thinking kept on, and answer extraction."""

from reappraisal.policy.answer import decode_completions, extract_answer
from reappraisal.policy.prompts import SYSTEM_PROMPT, USER_TEMPLATE, build_messages, prompt_rows


def test_prompt_is_the_model_cards_verbatim():
    assert SYSTEM_PROMPT == (
        "You are helping someone reduce a negative emotion they feel in a short interpersonal scenario by offering "
        "an alternative interpretation of the situation (a 'reappraisal' / 'rethinking'). Direct your response at "
        "the person in the scenario in second person. Limit your response to two sentences maximum. Do not list "
        "emotions; output only the reappraisal text."
    )
    assert USER_TEMPLATE.format(scenario="S") == (
        "SCENARIO:\nS\n\nWrite a reappraisal of this scenario in two sentences maximum, addressing the person in "
        "second person."
    )
    msgs = build_messages("S")
    assert [m["role"] for m in msgs] == ["system", "user"]


def test_prompt_rows_carry_group_keys():
    rows = prompt_rows([{"vignette_id": "v1", "text": "A scenario."}])
    assert rows[0]["vignette_id"] == "v1" and rows[0]["scenario"] == "A scenario."
    assert rows[0]["prompt"][1]["content"].startswith("SCENARIO:\nA scenario.")


def test_generation_prompt_opens_thinking(tiny_policy):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_policy)
    text = tok.apply_chat_template(build_messages("S"), tokenize=False, add_generation_prompt=True)
    assert text.endswith("<|im_start|>assistant\n<think>\n")


def test_extract_answer():
    assert extract_answer("reasoning</think>\n\n You matter.  ") == "You matter."
    assert extract_answer("a</think>b</think> final") == "final"
    assert extract_answer("reasoning that never closes. It goes on.") == ""
    assert extract_answer("reasoning</think>   ") == ""


def test_decode_keeps_think_close(tiny_policy):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_policy)
    ids = tok("They feel sad.\n</think>\n\nMaybe they forgot.<|im_end|><|endoftext|>", add_special_tokens=False)["input_ids"]
    # </think> is not a special token (as in Qwen3): TRL's decoding keeps it ...
    assert "</think>" in tok.decode(ids, skip_special_tokens=True)
    # ... and ours keeps it too, dropping only end-of-turn / padding markers
    (text,) = decode_completions(tok, [ids])
    assert text == "They feel sad.\n</think>\n\nMaybe they forgot."
    assert extract_answer(text) == "Maybe they forgot."
