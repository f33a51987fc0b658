"""Tiny Qwen3-architecture models for the offline ``demo`` preset.

They are random-init ``Qwen3ForCausalLM`` checkpoints with a byte-level BPE
tokenizer trained on the demo corpus and a Qwen3-style chat template that
supports ``<think>…</think>``. They are written with ``save_pretrained`` so
every later stage loads them with the same ``from_pretrained(path)`` code it
uses for ``Qwen/Qwen3-1.7B``; a sequence-classification head (reward model)
is added by ``AutoModelForSequenceClassification.from_pretrained`` exactly as
for the real checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
#: Added as single tokens but NOT special, as in Qwen3: decoding with
#: ``skip_special_tokens=True`` keeps them, so ``</think>`` reaches the reward.
THINK_TOKENS = ["<think>", "</think>"]

#: Qwen3-style ChatML template. The generation prompt opens a thinking block
#: (as Qwen3-4B-Thinking-2507 does), so a completion is ``reasoning</think>
#: answer<|im_end|>``; ``enable_thinking=False`` closes the block instead.
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}"
    "{{- '<think>\\n\\n</think>\\n\\n' }}"
    "{%- else %}"
    "{{- '<think>\\n' }}"
    "{%- endif %}"
    "{%- endif %}"
)


@dataclass(frozen=True)
class TinyArchitecture:
    """Sizes of a tiny Qwen3 model (defaults: ~0.3M parameters besides embeddings)."""

    hidden_size: int = 64
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    head_dim: int = 16
    intermediate_size: int = 128
    max_position_embeddings: int = 1024


def train_tokenizer(texts: Iterable[str], vocab_size: int = 2048):
    """Train a byte-level BPE tokenizer on ``texts``; return a ``PreTrainedTokenizerFast``.

    Pad is ``<|endoftext|>`` and EOS is ``<|im_end|>``, as in Qwen3 chat models.
    """
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    texts = [t for t in texts if t]
    if not texts:
        raise ValueError("cannot train a tokenizer on an empty corpus")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in THINK_TOKENS])
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="<|endoftext|>",
        eos_token="<|im_end|>",
        unk_token=None,
        model_max_length=1024,
        padding_side="left",
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def build_causal_lm(tokenizer, arch: TinyArchitecture = TinyArchitecture(), seed: int = 0):
    """A random-init ``Qwen3ForCausalLM`` sized by ``arch`` for ``tokenizer`` (float32)."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=arch.hidden_size,
        intermediate_size=arch.intermediate_size,
        num_hidden_layers=arch.num_hidden_layers,
        num_attention_heads=arch.num_attention_heads,
        num_key_value_heads=arch.num_key_value_heads,
        head_dim=arch.head_dim,
        max_position_embeddings=arch.max_position_embeddings,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model


def save_tiny_model(out_dir: str | Path, tokenizer, arch: TinyArchitecture = TinyArchitecture(), seed: int = 0) -> Path:
    """Build a tiny causal LM and save it with its tokenizer via ``save_pretrained``."""
    out_dir = Path(out_dir)
    model = build_causal_lm(tokenizer, arch, seed)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir
