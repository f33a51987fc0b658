"""The tiny tokenizer behaves like Qwen3's where the pipeline depends on it."""

from __future__ import annotations

from reappraisal.base_models.tiny import train_tokenizer


def test_think_tags_are_single_tokens_that_survive_skip_special_tokens():
    tok = train_tokenizer(["Maybe they were busy. <think>\nplan</think>\n\nYou could ask."] * 20, vocab_size=400)
    ids = tok("<think>\nplan</think>\n\nMaybe you.")["input_ids"]
    tokens = tok.convert_ids_to_tokens(ids)
    assert tokens[0] == "<think>" and "</think>" in tokens
    # TRL decodes completions with skip_special_tokens=True; the answer boundary must survive.
    assert "</think>" in tok.decode(ids, skip_special_tokens=True)
    # while the chat markers are special and dropped
    chat = tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=True, add_generation_prompt=True)
    ids = chat["input_ids"] if hasattr(chat, "keys") else chat
    assert "<|im_start|>" not in tok.decode(ids, skip_special_tokens=True)
