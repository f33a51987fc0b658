"""Batched generation with a transformers causal LM (core layer): the one padding-and-sorting loop.

The GRM's pairwise judge and the evaluation (policy answers, a local judge)
both run many prompts through ``model.generate``. :func:`generate_token_ids`
does it once for both: prompts are tokenized once, sorted longest first so a
batch wastes little padding, left-padded per batch, generated, cut at the
first stop token and returned in the caller's order. What the new tokens
mean (decoded how, kept which way) is the caller's business.

Sampling draws each token by inverse CDF (:func:`sampling_processors`): one
uniform number per row against the cumulative softmax of the tempered (and
nucleus-filtered) scores, handed to greedy search as the only finite score.
That is a draw from the same distribution as ``do_sample=True`` without
``torch.multinomial``, whose random numbers for the whole vocabulary took about
a third of a tiny model's decoding step on CPU. The uniforms come from a
generator seeded per batch (``seed + batch index``), so a run is reproducible;
greedy decoding needs no seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence


@dataclass(frozen=True)
class GeneratedIds:
    """One prompt's result: the new token ids (up to and including the first stop token)."""

    ids: list[int]
    prompt_tokens: int
    #: True when the model emitted a stop token, False when it hit ``max_new_tokens``.
    stopped: bool


def prepare_for_batches(tokenizer) -> None:
    """Left padding (batched generation and last-position logits need it) and a pad token."""
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token


def stop_token_ids(model, tokenizer) -> list[int]:
    """The model's end-of-generation ids (its generation config's, else the tokenizer's EOS)."""
    eos = model.generation_config.eos_token_id
    if eos is None:
        eos = tokenizer.eos_token_id
    ids = eos if isinstance(eos, (list, tuple)) else [eos]
    return sorted({int(i) for i in ids if i is not None})


def sampling_processors(temperature: float, top_p: float, generator):
    """Logits processors that turn greedy search into sampling at ``temperature`` (and ``top_p``): temperature,
    nucleus filter, then one inverse-CDF draw per row from ``generator`` (float64), returned as scores that are
    0 at the drawn token and -inf elsewhere, so the argmax greedy search takes is the draw."""
    import torch
    from transformers import LogitsProcessor, LogitsProcessorList, TemperatureLogitsWarper, TopPLogitsWarper

    class InverseCdfDraw(LogitsProcessor):
        def __call__(self, input_ids, scores):
            cdf = torch.softmax(scores.to(torch.float64), dim=-1).cumsum_(dim=-1)
            u = torch.rand((scores.shape[0], 1), dtype=torch.float64, generator=generator) * cdf[:, -1:]
            drawn = torch.searchsorted(cdf, u, right=True).clamp_max_(scores.shape[-1] - 1)
            return torch.full_like(scores, float("-inf")).scatter_(1, drawn, 0.0)

    processors = [TemperatureLogitsWarper(float(temperature))]
    if top_p < 1.0:
        processors.append(TopPLogitsWarper(float(top_p)))
    return LogitsProcessorList([*processors, InverseCdfDraw()])


def generate_token_ids(model, tokenizer, prompts: Sequence[str], *, max_new_tokens: int, batch_size: int,
                       temperature: float = 0.0, top_p: float = 1.0, seed: int = 0,
                       progress: Callable[[int], None] | None = None) -> list[GeneratedIds]:
    """New token ids for each of ``prompts`` (rendered text, no special tokens added), in their order."""
    import torch
    from transformers import GenerationConfig

    if not prompts:
        return []
    if batch_size < 1 or max_new_tokens < 1:
        raise ValueError("batch_size and max_new_tokens must be >= 1")
    prepare_for_batches(tokenizer)
    stop = stop_token_ids(model, tokenizer)
    sample = temperature > 0
    config = GenerationConfig(
        do_sample=False,  # sampling is greedy search over Gumbel-perturbed scores (module doc)
        max_new_tokens=int(max_new_tokens),
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=stop,
    )
    encoded = tokenizer(list(prompts), add_special_tokens=False)["input_ids"]
    order = sorted(range(len(prompts)), key=lambda i: -len(encoded[i]))
    out: list[GeneratedIds | None] = [None] * len(prompts)
    stop_set = set(stop)
    for b, start in enumerate(range(0, len(order), batch_size)):
        idx = order[start:start + batch_size]
        batch = tokenizer.pad({"input_ids": [encoded[i] for i in idx]}, padding=True, return_tensors="pt")
        batch = {k: v.to(model.device) for k, v in batch.items()}
        processors = None
        if sample:
            generator = torch.Generator().manual_seed(int(seed) + b)
            processors = sampling_processors(temperature, top_p, generator)
        with torch.inference_mode():
            generated = model.generate(**batch, generation_config=config, logits_processor=processors)
        for i, row in zip(idx, generated[:, batch["input_ids"].shape[1]:].tolist()):
            ended = next((j for j, t in enumerate(row) if t in stop_set), None)
            kept = row[: ended + 1] if ended is not None else row
            out[i] = GeneratedIds(kept, len(encoded[i]), ended is not None)
        if progress is not None:
            progress(len(idx))
    return [g for g in out if g is not None]
