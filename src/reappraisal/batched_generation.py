"""Batched generation with a transformers causal LM (core layer): the one padding-and-sorting loop.

The GRM's pairwise judge and the evaluation (policy answers, a local judge)
both decode many prompts. :func:`generate_token_ids` does it once for both:
prompts are tokenized once, sorted longest first so a batch wastes little
padding, left-padded per batch, decoded, cut at the first stop token and
returned in the caller's order. What the new tokens mean (decoded how, kept
which way) is the caller's business.

The decoding loop is ``model.generate``'s greedy search with a KV cache, with
one difference: rows that have emitted their stop token leave the batch (their
cache rows are dropped) once they are a quarter of it, where ``generate`` keeps
feeding them padding until the longest row is done. Answers vary in length (a
demo batch's mean is about half its longest), so that halves the decoding work;
every row's tokens are those
``generate`` gives (a test compares the two, greedy and sampled). Its KV cache writes into reserved positions
and its steps hand the model a prebuilt attention mask (:func:`~reappraisal.compat.transformers.reserved_cache`,
:func:`~reappraisal.compat.transformers.decoding_step_mask`: seams into transformers' cache and masks). A plain
Qwen3 model's steps run as its own torch operations without its module calls
(:func:`~reappraisal.compat.transformers.lean_decoding_step`: the same bytes, about a quarter less time at GRPO's
shapes; ``benchmarks/README.md``, "The decoder"). A prompt
that stands in a batch several times (sampled answers to one scenario) is read
once and its cache copied to its rows (:func:`distinct_prompts`). Prompts that share a long prefix (a
judge's instruction and scenario, before the two answers) are read in two passes: each shared prefix once,
then every row's rest (:func:`prefill`, :func:`plan_shared_prefixes`); the GRM's verdicts on a GRPO step's
16 prompts took 97 ms instead of 131 ms.

Sampling draws each token by inverse CDF (:func:`sampling_processors`): one
uniform number per row against the cumulative softmax of the tempered (and
nucleus-filtered) scores, handed to greedy search as the only finite score.
That is a draw from the same distribution as ``do_sample=True`` without
``torch.multinomial``, whose random numbers for the whole vocabulary took about
a third of a tiny model's decoding step on CPU. The uniforms come from a
generator seeded per batch (``seed + batch index``), one per row the batch
started with at every step, so a row's draws do not depend on when the others
stop and a run is reproducible; greedy decoding needs no seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from .compat.transformers import decoding_step_mask, lean_decoding_step, reserved_cache


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


@dataclass
class RowsOfBatch:
    """Which rows of a batch of ``batch_size`` a decoding step's scores belong to (None: every row, in order)."""

    batch_size: int
    rows: object = None


def sampling_processors(temperature: float, top_p: float, generator, rows_of_batch: RowsOfBatch | None = None):
    """Logits processors that turn greedy search into sampling at ``temperature`` (and ``top_p``): temperature,
    nucleus filter, then one inverse-CDF draw per row from ``generator`` (float64 uniforms against the
    float64 cumulative sum of the float32 softmax), returned as scores that are 0 at the drawn token and -inf
    elsewhere, so the argmax greedy search takes is the draw (:func:`next_tokens` takes the drawn tokens
    directly). With ``rows_of_batch`` set, uniforms are drawn for the whole batch and its live rows take
    theirs."""
    import torch
    from transformers import LogitsProcessor, LogitsProcessorList, TemperatureLogitsWarper, TopPLogitsWarper

    class InverseCdfDraw(LogitsProcessor):
        def draw(self, scores):
            """One token per row, ``(rows, 1)``: the row's uniform against its cumulative softmax."""
            cdf = torch.softmax(scores, dim=-1).to(torch.float64).cumsum_(dim=-1)
            live = rows_of_batch.rows if rows_of_batch is not None else None
            n = scores.shape[0] if live is None else rows_of_batch.batch_size
            u = torch.rand((n, 1), dtype=torch.float64, generator=generator).to(cdf.device)
            u = (u if live is None else u[live]) * cdf[:, -1:]
            return torch.searchsorted(cdf, u, right=True).clamp_max_(scores.shape[-1] - 1)

        def __call__(self, input_ids, scores):
            return torch.full_like(scores, float("-inf")).scatter_(1, self.draw(scores), 0.0)

    processors = [TemperatureLogitsWarper(float(temperature))]
    if top_p < 1.0:
        processors.append(TopPLogitsWarper(float(top_p)))
    return LogitsProcessorList([*processors, InverseCdfDraw()])


def _accepts(model, argument: str) -> bool:
    import inspect

    return argument in inspect.signature(model.forward).parameters


def distinct_prompts(input_ids, attention_mask):
    """``(distinct, copies)``: the first row of each distinct padded prompt of a batch, and for every row the
    position of its prompt among them (``input_ids[distinct][copies]`` is the batch); ``(None, None)`` when
    every prompt is distinct. Sampled answers repeat their prompt many times (the truth's draws, best-of-N)."""
    import torch

    n = input_ids.shape[0]
    if n < 2:
        return None, None
    _, copies = torch.unique(torch.cat([input_ids, attention_mask.to(input_ids.dtype)], dim=1), dim=0,
                             return_inverse=True)
    k = int(copies.max()) + 1
    if k == n:
        return None, None
    distinct = torch.full((k,), n, dtype=torch.long, device=input_ids.device)
    distinct.scatter_reduce_(0, copies, torch.arange(n, device=input_ids.device), reduce="amin")
    return distinct, copies


@dataclass(frozen=True)
class SharedPrefixes:
    """Rows split into groups that share a prefix: ``groups[g]`` lists its rows, ``lengths[g]`` its shared prefix's
    length (every row keeps at least one token after it)."""

    groups: list[list[int]]
    lengths: list[int]

    def group_of_rows(self, n: int) -> list[int]:
        out = [0] * n
        for g, rows in enumerate(self.groups):
            for r in rows:
                out[r] = g
        return out


#: A split prefill is used when it reads at most this share of the plain prefill's padded positions ...
SHARED_PREFIX_MAX_SHARE = 0.75
#: ... and saves at least this many positions (a second forward pass costs a tiny model about that much).
SHARED_PREFIX_MIN_SAVING = 256


def _common_length(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def plan_shared_prefixes(rows: Sequence[Sequence[int]]) -> SharedPrefixes | None:
    """How to read distinct prompts ``rows`` (token ids, no padding) in two passes: each group's shared prefix
    once, then every row's rest; None when that does not save enough (:data:`SHARED_PREFIX_MAX_SHARE`,
    :data:`SHARED_PREFIX_MIN_SAVING`).

    Judge prompts repeat an instruction and a scenario before the two answers that differ. The rows are sorted;
    for each threshold among neighbours' common lengths, the runs of neighbours sharing at least that many tokens
    form the groups; the plan reading the fewest padded positions (``groups × longest prefix + rows × longest
    rest``) wins."""
    n = len(rows)
    if n < 2:
        return None
    order = sorted(range(n), key=lambda i: list(rows[i]))
    shared = [_common_length(rows[a], rows[b]) for a, b in zip(order, order[1:])]
    plain = n * max(len(r) for r in rows)
    best: tuple[int, SharedPrefixes] | None = None
    for threshold in sorted({s for s in shared if s > 0}):
        groups, lengths, run, run_shared = [], [], [order[0]], None
        for k in range(1, n + 1):
            if k < n and shared[k - 1] >= threshold:
                run.append(order[k])
                run_shared = shared[k - 1] if run_shared is None else min(run_shared, shared[k - 1])
                continue
            shortest = min(len(rows[i]) for i in run)
            lengths.append(min(run_shared if run_shared is not None else shortest, shortest - 1))
            groups.append(run)
            if k < n:
                run, run_shared = [order[k]], None
        if min(lengths) < 1:
            continue
        rest = max(len(rows[i]) - length for rows_of, length in zip(groups, lengths) for i in rows_of)
        cost = len(groups) * max(lengths) + n * rest
        if best is None or cost < best[0]:
            best = (cost, SharedPrefixes(groups, lengths))
    if best is None or best[0] > SHARED_PREFIX_MAX_SHARE * plain or plain - best[0] < SHARED_PREFIX_MIN_SAVING:
        return None
    return best[1]


def next_tokens(processors, input_ids, scores):
    """Each row's next token: the argmax of ``processors``' scores (greedy search's choice). When the last
    processor draws (:func:`sampling_processors`), its drawn tokens are taken as they are, without the scores
    built for ``generate`` (the same tokens)."""
    if processors is None:
        return scores.argmax(dim=-1)
    *warpers, last = processors
    if not hasattr(last, "draw"):
        return processors(input_ids, scores).argmax(dim=-1)
    for warper in warpers:
        scores = warper(input_ids, scores)
    return last.draw(scores).squeeze(1)


#: Finished rows leave the batch together once they are 1/COMPACT_WHEN_FINISHED of it: dropping them copies every
#: live row's cache, so doing it at every finished row (nearly every step of a batch of 256) cost more than
#: decoding the finished rows a few steps longer.
COMPACT_WHEN_FINISHED = 4


def _left_padded(rows: Sequence[Sequence[int]], pad: int, device):
    """``(input_ids, attention_mask, position_ids)`` of token rows, left-padded (pads at position 1, as
    ``generate`` numbers them)."""
    import torch

    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad, dtype=torch.long, device=device)
    mask = torch.zeros((len(rows), width), dtype=torch.long, device=device)
    for i, r in enumerate(rows):
        ids[i, width - len(r):] = torch.as_tensor(list(r), dtype=torch.long)
        mask[i, width - len(r):] = 1
    return ids, mask, (mask.cumsum(-1) - 1).masked_fill_(mask == 0, 1)


def prefill(model, input_ids, attention_mask, cache, **forward):
    """Read a left-padded batch's prompts into ``cache``: ``(last-position logits per row, the attention mask the
    cache's positions follow)``. A prompt repeated in the batch is read once and its cache copied to its rows
    (:func:`distinct_prompts`); prompts that share long prefixes (a judge's instruction and scenario) are read in
    two passes, each shared prefix once and then every row's rest after it (:func:`plan_shared_prefixes`), which
    leaves padding between the two in the mask. Either way every row's keys and values are those of its own
    prompt at its own positions, rounded as another split of the same arithmetic rounds."""
    import torch

    distinct, copies = distinct_prompts(input_ids, attention_mask)
    ids, mask = (input_ids, attention_mask) if distinct is None else (input_ids[distinct], attention_mask[distinct])
    rows = [r[len(r) - int(m.sum()):] for r, m in zip(ids.tolist(), mask)]
    plan = plan_shared_prefixes(rows)
    if plan is None:
        positions = (mask.long().cumsum(-1) - 1).masked_fill_(mask == 0, 1)
        logits = model(input_ids=ids, attention_mask=mask, position_ids=positions, past_key_values=cache,
                       use_cache=True, **forward).logits[:, -1, :]
    else:
        pad = 0  # any id: padded positions are masked
        group = plan.group_of_rows(len(rows))
        prefixes = [rows[members[0]][:length] for members, length in zip(plan.groups, plan.lengths)]
        p_ids, p_mask, p_positions = _left_padded(prefixes, pad, ids.device)
        model(input_ids=p_ids, attention_mask=p_mask, position_ids=p_positions, past_key_values=cache,
              use_cache=True, **forward)
        index = torch.tensor(group, dtype=torch.long, device=ids.device)
        cache.batch_select_indices(index)
        lengths = torch.tensor(plan.lengths, dtype=torch.long, device=ids.device)[index]
        s_ids, s_mask, s_positions = _left_padded([r[plan.lengths[g]:] for r, g in zip(rows, group)], pad,
                                                  ids.device)
        s_positions = torch.where(s_mask == 1, s_positions + lengths[:, None], s_positions)
        mask = torch.cat([p_mask[index], s_mask], dim=1).to(attention_mask.dtype)
        logits = model(input_ids=s_ids, attention_mask=mask, position_ids=s_positions, past_key_values=cache,
                       use_cache=True, **forward).logits[:, -1, :]
    if copies is not None:
        cache.batch_select_indices(copies)
        logits, mask = logits[copies], mask[copies]
    return logits, mask


def decode_batch(model, input_ids, attention_mask, *, max_new_tokens: int, stop: Sequence[int],
                 processors=None, rows_of_batch: RowsOfBatch | None = None) -> list[list[int]]:
    """Each left-padded row's new tokens (up to and including its first stop token): greedy search over
    ``processors``' scores with a KV cache, finished rows leaving the batch (module doc). Runs under
    ``torch.inference_mode`` whatever the caller's mode (GRPO samples under ``no_grad``, whose bookkeeping cost a
    width-64 policy's decoding step 0.07 of its 0.8 ms)."""
    import torch

    with torch.inference_mode():  # only Python lists leave: nothing made here is used by autograd
        return _decode(model, input_ids, attention_mask, max_new_tokens=max_new_tokens, stop=stop,
                       processors=processors, rows_of_batch=rows_of_batch)


def _decode(model, input_ids, attention_mask, *, max_new_tokens, stop, processors, rows_of_batch):
    import torch

    stop_ids = torch.tensor(sorted(set(stop)), dtype=torch.long, device=input_ids.device)
    rows = torch.arange(input_ids.shape[0], device=input_ids.device)
    new: list[list[int]] = [[] for _ in range(input_ids.shape[0])]
    cache = reserved_cache(model, int(max_new_tokens))
    last_only = {"logits_to_keep": 1} if _accepts(model, "logits_to_keep") else {}
    step_input = input_ids
    live = torch.ones(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
    logits, mask = prefill(model, input_ids, attention_mask, cache, **last_only)
    step_mask = decoding_step_mask(model)
    lean = lean_decoding_step(model)
    for step in range(int(max_new_tokens)):
        if step > 0:
            positions = mask.long().sum(dim=-1, keepdim=True) - 1
            if lean is not None:
                logits = lean(step_input, step_mask(mask), positions, cache)
            else:
                logits = model(input_ids=step_input, attention_mask=step_mask(mask), position_ids=positions,
                               past_key_values=cache, use_cache=True).logits[:, -1, :]
        if processors is not None and rows_of_batch is not None:
            rows_of_batch.rows = rows
        tokens = next_tokens(processors, step_input, logits.float())
        for row, token, on in zip(rows.tolist(), tokens.tolist(), live.tolist()):
            if on:
                new[row].append(token)
        live &= ~torch.isin(tokens, stop_ids)
        if step == max_new_tokens - 1 or not bool(live.any()):
            break
        if int((~live).sum()) * COMPACT_WHEN_FINISHED >= live.numel():  # drop the finished rows together
            keep = live.nonzero().squeeze(1)
            cache.batch_select_indices(keep)
            mask, rows, tokens, live = mask[keep], rows[keep], tokens[keep], live[keep]
        mask = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=1)
        step_input = tokens[:, None]
    return new


def generate_token_ids(model, tokenizer, prompts: Sequence[str], *, max_new_tokens: int, batch_size: int,
                       temperature: float = 0.0, top_p: float = 1.0, seed: int = 0,
                       progress: Callable[[int], None] | None = None) -> list[GeneratedIds]:
    """New token ids for each of ``prompts`` (rendered text, no special tokens added), in their order."""
    import torch

    if not prompts:
        return []
    if batch_size < 1 or max_new_tokens < 1:
        raise ValueError("batch_size and max_new_tokens must be >= 1")
    prepare_for_batches(tokenizer)
    stop = stop_token_ids(model, tokenizer)
    sample = temperature > 0
    distinct = list(dict.fromkeys(prompts))  # sampled answers repeat their prompt: each is tokenized once
    ids_of = dict(zip(distinct, tokenizer(distinct, add_special_tokens=False)["input_ids"]))
    encoded = [ids_of[p] for p in prompts]
    order = sorted(range(len(prompts)), key=lambda i: -len(encoded[i]))
    out: list[GeneratedIds | None] = [None] * len(prompts)
    for b, start in enumerate(range(0, len(order), batch_size)):
        idx = order[start:start + batch_size]
        # what tokenizer.pad gives (left padding, the pad id), without its per-token Python walk
        input_ids, attention_mask, _ = _left_padded([encoded[i] for i in idx], tokenizer.pad_token_id, model.device)
        processors, rows_of_batch = None, None
        if sample:
            rows_of_batch = RowsOfBatch(len(idx))
            generator = torch.Generator().manual_seed(int(seed) + b)
            processors = sampling_processors(temperature, top_p, generator, rows_of_batch)
        rows = decode_batch(model, input_ids, attention_mask, max_new_tokens=max_new_tokens, stop=stop,
                            processors=processors, rows_of_batch=rows_of_batch)
        for i, row in zip(idx, rows):
            out[i] = GeneratedIds(row, len(encoded[i]), row[-1] in stop)  # a row has at least one token
        if progress is not None:
            progress(len(idx))
    return [g for g in out if g is not None]


def default_device():
    import torch

    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def load_causal_lm(model_dir: str | Path, device=None):
    """``(model, tokenizer)`` from a directory or hub id: float32 on CPU, bfloat16 on GPU, eval mode."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    device = torch.device(device) if device is not None else default_device()
    dtype = torch.float32 if device.type == "cpu" else torch.bfloat16
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    prepare_for_batches(tokenizer)
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=dtype).to(device)
    model.eval()
    return model, tokenizer
