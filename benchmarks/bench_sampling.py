"""Benchmark: sampled answers by inverse-CDF draws vs transformers' ``do_sample=True`` (``torch.multinomial``).

The policy's own prompts for the demo's scenarios (each repeated ``--per-scenario``
times), the evaluation's decoding (temperature, top_p, max_new_tokens, batch size
from ``config.yaml``), one thread; the two paths alternate ``--repeats`` times
and the best time of each is compared. Both paths sample from the same
distribution with different random streams, so the script reports what that
must leave alone: the mean answer length and the share of answers that stop
before the limit.

    .venv/bin/python benchmarks/bench_sampling.py --model results/policy/committee/model --repeats 3

Needs a demo build's model (``results/policy/<arm>/model`` or ``results/policy/warm_start``) and
``data/interim/vignettes.parquet``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def hf_multinomial(model, tokenizer, prompts, *, max_new_tokens, batch_size, temperature, top_p, seed):
    """The reference: transformers' own sampling, batched and padded as :func:`generate_token_ids` does."""
    import torch
    from transformers import GenerationConfig

    from reappraisal.batched_generation import prepare_for_batches, stop_token_ids

    prepare_for_batches(tokenizer)
    stop = stop_token_ids(model, tokenizer)
    config = GenerationConfig(do_sample=True, temperature=temperature, top_p=top_p, top_k=0,
                              max_new_tokens=max_new_tokens, pad_token_id=tokenizer.pad_token_id, eos_token_id=stop)
    lengths, stopped = [], []
    for b, start in enumerate(range(0, len(prompts), batch_size)):
        batch = tokenizer(list(prompts[start:start + batch_size]), add_special_tokens=False, padding=True,
                          return_tensors="pt")
        torch.manual_seed(seed + b)
        with torch.inference_mode():
            out = model.generate(**batch, generation_config=config)
        for row in out[:, batch["input_ids"].shape[1]:].tolist():
            end = next((j for j, t in enumerate(row) if t in stop), None)
            lengths.append(end + 1 if end is not None else len(row))
            stopped.append(end is not None)
    return lengths, stopped


def inverse_cdf(model, tokenizer, prompts, *, max_new_tokens, batch_size, temperature, top_p, seed):
    from reappraisal.batched_generation import generate_token_ids

    out = generate_token_ids(model, tokenizer, prompts, max_new_tokens=max_new_tokens, batch_size=batch_size,
                             temperature=temperature, top_p=top_p, seed=seed)
    return [len(g.ids) for g in out], [g.stopped for g in out]


def main(argv=None) -> int:
    import torch

    from reappraisal.config import load_config
    from reappraisal.evaluation.generation import load_generator, render_prompts
    from reappraisal.policy.prompts import build_messages
    from reappraisal.input_tables import read_table

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="results/policy/committee/model")
    ap.add_argument("--vignettes", default="data/interim/vignettes.parquet")
    ap.add_argument("--per-scenario", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    gen = load_config("config.yaml")["evaluation"]["generation"]
    decoding = {"max_new_tokens": int(gen["max_new_tokens"]), "batch_size": int(gen["batch_size"]),
                "temperature": float(gen["temperature"]), "top_p": float(gen["top_p"])}
    model, tokenizer = load_generator(args.model)
    scenarios = read_table(args.vignettes)["text"].tolist()
    prompts = render_prompts(tokenizer, [build_messages(s) for s in scenarios for _ in range(args.per_scenario)])
    best = {"transformers do_sample (multinomial)": np.inf, "inverse-CDF draw (project)": np.inf}
    shape = {}
    for r in range(args.repeats):
        for name, fn in (("transformers do_sample (multinomial)", hf_multinomial),
                         ("inverse-CDF draw (project)", inverse_cdf)):
            t0 = time.perf_counter()
            lengths, stopped = fn(model, tokenizer, prompts, seed=1000 * r, **decoding)
            best[name] = min(best[name], time.perf_counter() - t0)
            shape.setdefault(name, []).append((np.mean(lengths), np.mean(stopped)))
    print(f"{len(prompts)} answers ({len(scenarios)} scenarios x {args.per_scenario}), {decoding}, 1 thread, "
          f"best of {args.repeats}\n")
    print("| path | ms per answer | mean new tokens | stopped before the limit |\n|---|---|---|---|")
    for name, seconds in best.items():
        length, stop = np.mean(shape[name], axis=0)
        print(f"| {name} | {1000 * seconds / len(prompts):.2f} | {length:.1f} | {stop:.3f} |")
    ref, new = best.values()
    print(f"\nspeed-up: {ref / new:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
