"""Batched text generation for evaluation: policy answers and local judge replies.

:func:`generate_hf` runs a transformers causal LM over many chat prompts in
padded batches (:func:`reappraisal.batched_generation.generate_token_ids`:
left padding; prompts sorted by length so a batch wastes little padding; the
caller's order restored), greedy or sampled. Each output
keeps what the evaluation tables need: the decoded text (``</think>`` kept,
end-of-turn and padding markers removed, as in training), the finish reason
(``stop`` when the model ended its turn, ``length`` when it hit
``max_new_tokens``) and prompt/completion token counts.

Sampling is seeded per batch from ``seed`` (``torch.manual_seed(seed +
batch index)``), so a run is reproducible on the same hardware and versions,
and two seeds give two independent samples.

:func:`generate_vllm` is the GPU path (vLLM offline ``LLM.chat``); it builds
the same records, each request sampled with its own seed (``seed + its
index``: vLLM seeds every request apart, so one seed would repeat a
scenario's samples); its two halves, :func:`vllm_engine` and :func:`chat_vllm`,
are what the GPU benchmark times apart. vLLM is installed from ``requirements-gpu.lock``; the
paper preset generates with it (``evaluation.generation.backend: vllm``),
every arm's answers and best-of-N's candidates alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from ..batched_generation import generate_token_ids
from ..policy.answer import decode_completions
from ..settings import GenerationSettings


@dataclass(frozen=True)
class Completion:
    text: str
    finish_reason: str  # "stop" | "length"
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True)
class Decoding:
    max_new_tokens: int
    temperature: float
    top_p: float

    @property
    def sample(self) -> bool:
        return self.temperature > 0

    @classmethod
    def from_mapping(cls, values: Mapping) -> "Decoding":
        """Decoding settings of a validated mapping (a judge YAML's ``decoding``)."""
        return cls(int(values["max_new_tokens"]), float(values["temperature"]), float(values["top_p"]))

    @classmethod
    def from_settings(cls, generation: GenerationSettings) -> "Decoding":
        """Decoding settings of the ``evaluation.generation`` settings."""
        return cls(int(generation.max_new_tokens), float(generation.temperature), float(generation.top_p))


def render_prompts(tokenizer, conversations: Sequence[Sequence[Mapping[str, str]]]) -> list[str]:
    """Each conversation through the tokenizer's own chat template, with the generation prompt."""
    return [tokenizer.apply_chat_template(list(c), tokenize=False, add_generation_prompt=True) for c in conversations]


def load_generator(model_dir: str, device=None):
    """``(model, tokenizer)`` ready for batched generation (float32 on CPU, bfloat16 on GPU, left padding)."""
    from ..batched_generation import load_causal_lm

    return load_causal_lm(model_dir, device)


def generate_hf(model, tokenizer, prompts: Sequence[str], decoding: Decoding, *, batch_size: int, seed: int = 0,
                progress: Callable[[int], None] | None = None) -> list[Completion]:
    """Completions of ``prompts`` (already rendered), batched and length-sorted (see module doc)."""
    generated = generate_token_ids(model, tokenizer, prompts, max_new_tokens=decoding.max_new_tokens,
                                   batch_size=batch_size, temperature=decoding.temperature, top_p=decoding.top_p,
                                   seed=seed, progress=progress)
    texts = decode_completions(tokenizer, [g.ids for g in generated])
    return [Completion(text, "stop" if g.stopped else "length", g.prompt_tokens, len(g.ids))
            for g, text in zip(generated, texts)]


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
    return chat_vllm(vllm_engine(model_dir, seed=seed, engine_kwargs=engine_kwargs), conversations, decoding,
                     seed=seed)


def vllm_engine(model_dir: str, *, seed: int, engine_kwargs: Mapping | None = None):
    """A ``vllm.LLM`` of ``model_dir`` (``engine_kwargs``: the config's ``evaluation.generation.vllm``)."""
    try:
        from vllm import LLM
    except ImportError:
        from ..errors import ConfigError

        raise ConfigError("the vllm generation backend needs the `vllm` package (requirements-gpu.lock and "
                          "envs/train.yaml install it on a GPU machine) or set evaluation.generation.backend: "
                          "transformers",
                          where="config evaluation.generation.backend") from None
    return LLM(model=str(model_dir), seed=int(seed), **dict(engine_kwargs or {}))


def chat_vllm(llm, conversations: Sequence[Sequence[Mapping[str, str]]], decoding: Decoding, *,
              seed: int) -> list[Completion]:
    """``llm``'s completions of ``conversations`` (through its chat template), as :func:`generate_hf` records."""
    from vllm import SamplingParams

    # One seed per request: vLLM seeds each request's sampler with its own seed, so the same conversation asked
    # k times (an answer's k samples, best-of-N's N candidates) under one seed would come back k times alike.
    params = [SamplingParams(**vllm_sampling_kwargs(decoding, seed + i)) for i in range(len(conversations))]
    outputs = llm.chat([list(c) for c in conversations], params)
    records = []
    for o in outputs:
        best = o.outputs[0]
        reason = "length" if best.finish_reason == "length" else "stop"
        records.append(Completion(best.text, reason, len(o.prompt_token_ids or []), len(best.token_ids or [])))
    return records
