"""Batched text generation for evaluation: policy answers and local judge replies.

:func:`generate_hf` runs a transformers causal LM over many chat prompts in
padded batches (left padding; prompts sorted by length so a batch wastes
little padding; the caller's order restored), greedy or sampled. Each output
keeps what the evaluation tables need: the decoded text (``</think>`` kept,
end-of-turn and padding markers removed, as in training), the finish reason
(``stop`` when the model ended its turn, ``length`` when it hit
``max_new_tokens``) and prompt/completion token counts.

Sampling is seeded per batch from ``seed`` (``torch.manual_seed(seed +
batch index)``), so a run is reproducible on the same hardware and versions,
and two seeds give two independent samples.

:func:`generate_vllm` is the GPU path (vLLM offline ``LLM.chat``); it builds
the same records. vLLM is an optional dependency of the paper preset.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from ..policy.answer import decode_completions


@dataclass(frozen=True)
class Completion:
    text: str
    finish_reason: str  # "stop" | "length"
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True)
class Decoding:
    max_new_tokens: int
    temperature: float = 0.0
    top_p: float = 1.0

    @property
    def sample(self) -> bool:
        return self.temperature > 0

    @classmethod
    def from_mapping(cls, cfg: Mapping) -> "Decoding":
        return cls(int(cfg["max_new_tokens"]), float(cfg.get("temperature", 0.0)), float(cfg.get("top_p", 1.0)))


def render_prompts(tokenizer, conversations: Sequence[Sequence[Mapping[str, str]]]) -> list[str]:
    """Each conversation through the tokenizer's own chat template, with the generation prompt."""
    return [tokenizer.apply_chat_template(list(c), tokenize=False, add_generation_prompt=True) for c in conversations]


def load_generator(model_dir: str, device=None):
    """``(model, tokenizer)`` ready for batched generation (float32 on CPU, bfloat16 on GPU, left padding)."""
    from ..grm.pairwise import load_causal_lm

    return load_causal_lm(model_dir, device)


def _stop_ids(model, tokenizer) -> set[int]:
    eos = model.generation_config.eos_token_id
    if eos is None:
        eos = tokenizer.eos_token_id
    ids = set(eos if isinstance(eos, (list, tuple)) else [eos])
    return {int(i) for i in ids if i is not None}


def generate_hf(model, tokenizer, prompts: Sequence[str], decoding: Decoding, *, batch_size: int, seed: int = 0,
                progress: Callable[[int], None] | None = None) -> list[Completion]:
    """Completions of ``prompts`` (already rendered), batched and length-sorted (see module doc)."""
    import torch
    from transformers import GenerationConfig

    if not prompts:
        return []
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    stop = _stop_ids(model, tokenizer)
    config = GenerationConfig(
        do_sample=decoding.sample,
        temperature=decoding.temperature if decoding.sample else None,
        top_p=decoding.top_p if decoding.sample else None,
        top_k=0 if decoding.sample else None,
        max_new_tokens=decoding.max_new_tokens,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=sorted(stop),
    )
    encoded = tokenizer(list(prompts), add_special_tokens=False)["input_ids"]
    order = sorted(range(len(prompts)), key=lambda i: -len(encoded[i]))
    out: list[Completion | None] = [None] * len(prompts)
    for b, start in enumerate(range(0, len(order), batch_size)):
        idx = order[start:start + batch_size]
        batch = tokenizer.pad({"input_ids": [encoded[i] for i in idx]}, padding=True, return_tensors="pt")
        batch = {k: v.to(model.device) for k, v in batch.items()}
        if decoding.sample:
            torch.manual_seed(int(seed) + b)
        with torch.inference_mode():
            generated = model.generate(**batch, generation_config=config)
        new = generated[:, batch["input_ids"].shape[1]:].tolist()
        kept = []
        for row in new:
            ended = next((j for j, t in enumerate(row) if t in stop), None)
            kept.append((row[: ended + 1] if ended is not None else row, ended is not None))
        texts = decode_completions(tokenizer, [ids for ids, _ in kept])
        for i, (ids, ended), text in zip(idx, kept, texts):
            out[i] = Completion(text, "stop" if ended else "length", len(encoded[i]), len(ids))
        if progress is not None:
            progress(len(idx))
    return [c for c in out if c is not None]


def vllm_sampling_kwargs(decoding: Decoding, seed: int) -> dict:
    """Keyword arguments of ``vllm.SamplingParams`` for ``decoding`` (temperature 0 = greedy)."""
    return {
        "n": 1,
        "temperature": decoding.temperature,
        "top_p": decoding.top_p,
        "max_tokens": decoding.max_new_tokens,
        "seed": int(seed),
    }


def generate_vllm(model_dir: str, conversations: Sequence[Sequence[Mapping[str, str]]], decoding: Decoding, *,
                  seed: int, engine_kwargs: Mapping | None = None) -> list[Completion]:
    """The same records as :func:`generate_hf`, from vLLM's offline chat API (GPU)."""
    try:
        from vllm import LLM, SamplingParams
    except ImportError:
        from ..errors import ConfigError

        raise ConfigError("the vllm generation backend needs the `vllm` package (add it to envs/train.yaml on "
                          "a GPU machine) or set evaluation.generation.backend: transformers",
                          where="config evaluation.generation.backend") from None
    llm = LLM(model=str(model_dir), seed=int(seed), **dict(engine_kwargs or {}))
    outputs = llm.chat([list(c) for c in conversations], SamplingParams(**vllm_sampling_kwargs(decoding, seed)))
    records = []
    for o in outputs:
        best = o.outputs[0]
        reason = "length" if best.finish_reason == "length" else "stop"
        records.append(Completion(best.text, reason, len(o.prompt_token_ids or []), len(best.token_ids or [])))
    return records
