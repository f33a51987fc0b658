"""Benchmark: the project's CPU decoder vs transformers' ``generate`` and continuous batching (``generate_batch``).

The demo's policy decodes its prompts at the demo's shapes, one thread, float32 on the CPU:

* **eval-256**: a batch of ``evaluation.generation.batch_size`` (256) prompts, the demo's scenarios in turn, at
  ``evaluation.generation`` (``max_new_tokens`` 96, temperature and top_p);
* **truth-256**: 256 samples of one scenario (a batch of the truth's draws);
* **grpo-8**: a GRPO step's completions: ``policy.per_device_train_batch_size`` (8) rows, train scenarios each
  ``policy.num_generations`` (4) times, at ``policy.max_completion_length`` (96), temperature and top_p;
* **grpo-32**: 8 train-scenario prompts × 4 generations.

The decoders:

* **project**: :func:`reappraisal.batched_generation.generate_token_ids` (what the evaluation and, through
  ``decode_batch``, GRPO run);
* **project (module calls)**: the same with the model called at every decoding step, instead of
  :func:`reappraisal.compat.transformers.lean_decoding_step`;
* **generate**: ``model.generate`` on the left-padded batch (``torch.manual_seed(seed)`` first when sampling),
  and the same with ``cache_implementation="static"``;
* **generate_batch**: transformers' continuous batching, its cache sized for the batch
  (``ContinuousBatchingConfig(num_blocks=rows + 8, max_batch_tokens=4096, max_requests_per_batch=rows, seed=seed)``;
  left to itself it sizes the cache from the host's memory and spends seconds filling it: ``--cb-default`` times
  that too, once per shape).

``--decoders`` picks some of them. Each decoder runs ``--repeats`` times per shape, sampling with one seed; the
table gives the best wall time.
Tokens are checked: greedy decoding once per decoder (every row's new tokens against the project's), and the
sampled repeats against each other (the same seed twice) and against the project's.

    .venv/bin/python benchmarks/bench_decoder.py --root /tmp/clean --repeats 2

``--root``: a checkout where the demo's ``results/policy/warm_start`` (``--model``) and
``data/interim/vignettes.parquet`` were built (``snakemake results/policy/warm_start``); its ``config.yaml``
gives the settings.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def project(model, tokenizer, prompts, *, max_new_tokens, temperature, top_p, seed, batch_size):
    from reappraisal.batched_generation import generate_token_ids

    out = generate_token_ids(model, tokenizer, prompts, max_new_tokens=max_new_tokens, batch_size=batch_size,
                             temperature=temperature, top_p=top_p, seed=seed)
    return [g.ids for g in out]


def project_module_calls(model, tokenizer, prompts, **decoding):
    from unittest import mock

    from reappraisal import batched_generation

    with mock.patch.object(batched_generation, "lean_decoding_step", lambda model: None):
        return project(model, tokenizer, prompts, **decoding)


def _cut(row, stop):
    end = next((j for j, t in enumerate(row) if t in stop), None)
    return row if end is None else row[:end + 1]


def hf_generate(model, tokenizer, prompts, *, max_new_tokens, temperature, top_p, seed, batch_size, static=False):
    import torch
    from transformers import GenerationConfig

    from reappraisal.batched_generation import stop_token_ids

    stop = stop_token_ids(model, tokenizer)
    sample = temperature > 0
    config = GenerationConfig(do_sample=sample, max_new_tokens=max_new_tokens, pad_token_id=tokenizer.pad_token_id,
                              eos_token_id=stop, **({"temperature": temperature, "top_p": top_p, "top_k": 0}
                                                    if sample else {}),
                              **({"cache_implementation": "static"} if static else {}))
    out = []
    for start in range(0, len(prompts), batch_size):
        batch = tokenizer(list(prompts[start:start + batch_size]), add_special_tokens=False, padding=True,
                          return_tensors="pt")
        if sample:
            torch.manual_seed(seed + start)
        with torch.inference_mode():
            ids = model.generate(**batch, generation_config=config)
        out += [_cut(row, stop) for row in ids[:, batch["input_ids"].shape[1]:].tolist()]
    return out


def hf_generate_static(*args, **kwargs):
    return hf_generate(*args, **kwargs, static=True)


def continuous_batching(model, tokenizer, prompts, *, max_new_tokens, temperature, top_p, seed, batch_size,
                        sized=True):
    from transformers import ContinuousBatchingConfig, GenerationConfig

    from reappraisal.batched_generation import stop_token_ids

    stop = stop_token_ids(model, tokenizer)
    sample = temperature > 0
    config = GenerationConfig(do_sample=sample, max_new_tokens=max_new_tokens, pad_token_id=tokenizer.pad_token_id,
                              eos_token_id=stop, **({"temperature": temperature, "top_p": top_p, "top_k": 0}
                                                    if sample else {}))
    ids = tokenizer(list(prompts), add_special_tokens=False)["input_ids"]
    out = []
    for start in range(0, len(ids), batch_size):
        chunk = ids[start:start + batch_size]
        sizes = {"num_blocks": len(chunk) + 8, "max_batch_tokens": 4096, "max_requests_per_batch": len(chunk)}
        cb = ContinuousBatchingConfig(seed=seed + start, **(sizes if sized else {}))
        results = model.generate_batch(inputs=chunk, generation_config=config, continuous_batching_config=cb)
        out += [_cut(list(r.generated_tokens), stop) for r in results.values()]
    return out


def continuous_batching_default(*args, **kwargs):
    return continuous_batching(*args, **kwargs, sized=False)


DECODERS = {"project": project, "project (module calls)": project_module_calls, "generate": hf_generate,
            "generate, static cache": hf_generate_static, "generate_batch": continuous_batching}


def shapes(settings, scenarios: list[str], train: list[str]) -> dict[str, dict]:
    gen, policy = settings.evaluation.generation, settings.policy
    n = int(gen.batch_size)
    evaluation = {"max_new_tokens": int(gen.max_new_tokens), "temperature": float(gen.temperature),
                  "top_p": float(gen.top_p), "batch_size": n}
    k = int(policy.num_generations)
    grpo = {"max_new_tokens": int(policy.max_completion_length), "temperature": float(policy.temperature),
            "top_p": float(policy.top_p)}
    rows = int(policy.per_device_train_batch_size)
    return {
        "eval-256": {"scenarios": [scenarios[i % len(scenarios)] for i in range(n)], **evaluation},
        "truth-256": {"scenarios": [scenarios[0]] * n, **evaluation},
        "grpo-8": {"scenarios": [s for s in train[:rows // k] for _ in range(k)], "batch_size": rows, **grpo},
        "grpo-32": {"scenarios": [train[i % len(train)] for i in range(8) for _ in range(k)], "batch_size": 8 * k,
                    **grpo},
    }


def main(argv=None) -> int:
    import torch

    from reappraisal.batched_generation import load_causal_lm
    from reappraisal.config import load_config
    from reappraisal.evaluation.generation import render_prompts
    from reappraisal.input_tables import read_table
    from reappraisal.policy.prompts import build_messages
    from reappraisal.settings import Settings

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=Path("."))
    ap.add_argument("--model", default="results/policy/warm_start")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--shapes", default="eval-256,truth-256,grpo-8,grpo-32")
    ap.add_argument("--decoders", nargs="+", choices=list(DECODERS), default=list(DECODERS),
                    help="the decoders to time (project always among them: the others are compared with it)")
    ap.add_argument("--cb-default", action="store_true", help="also time generate_batch with its own cache sizing")
    ap.add_argument("--out", type=Path, default=Path("/tmp/bench_decoder.json"))
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    settings = Settings.from_params(load_config(args.root / "config.yaml"))
    vignettes = read_table(args.root / "data/interim/vignettes.parquet")
    scenarios = [str(t) for t in vignettes["text"]]
    train = [str(t) for t in vignettes.loc[vignettes["pool"] == "train", "text"]]
    decoders = {name: decode for name, decode in DECODERS.items() if name == "project" or name in args.decoders}
    if args.cb_default:
        decoders["generate_batch, default cache sizing"] = continuous_batching_default
    # one model per decoder: continuous batching switches the model it runs to its own attention
    models = {name: load_causal_lm(args.root / args.model, device="cpu") for name in decoders}
    seed = int(settings.seed)
    record = {}
    for shape, spec in shapes(settings, scenarios, train).items():
        if shape not in args.shapes.split(","):
            continue
        _, tokenizer = models["project"]
        prompts = render_prompts(tokenizer, [build_messages(s) for s in spec["scenarios"]])
        decoding = {k: spec[k] for k in ("max_new_tokens", "temperature", "top_p", "batch_size")}
        rows = {}
        for name, decode in decoders.items():
            model, tok = models[name]
            entry = {}
            try:
                greedy = decode(model, tok, prompts, **{**decoding, "temperature": 0.0}, seed=seed)
                seconds, sampled = [], []
                for _ in range(args.repeats if not name.endswith("default cache sizing") else 1):
                    t0 = time.perf_counter()
                    sampled.append(decode(model, tok, prompts, **decoding, seed=seed))
                    seconds.append(time.perf_counter() - t0)
                entry = {"seconds": seconds, "greedy": greedy, "sampled": sampled}
            except Exception as exc:  # the error is what the table reports
                entry = {"error": f"{type(exc).__name__}: {exc}"}
            rows[name] = entry
            print(shape, name, entry.get("error") or f"{min(entry['seconds']):.3f} s", flush=True)
        record[shape] = {"rows": len(prompts), "decoding": decoding, "decoders": rows}
    args.out.write_text(json.dumps(record))
    print("\n| shape | decoder | best wall time | ratio to project | greedy tokens = project's | "
          "sampled, same seed twice = | sampled = project's |")
    print("|---|---|---|---|---|---|---|")
    for shape, rec in record.items():
        ref = rec["decoders"]["project"]
        for name, entry in rec["decoders"].items():
            if "error" in entry:
                print(f"| {shape} ({rec['rows']} rows) | {name} | {entry['error']} | | | | |")
                continue
            best = min(entry["seconds"])
            same_greedy = sum(a == b for a, b in zip(entry["greedy"], ref["greedy"]))
            reps = entry["sampled"]
            twice = (f"{sum(a == b for a, b in zip(reps[0], reps[1]))}/{len(reps[0])}" if len(reps) > 1 else "")
            same_sampled = sum(a == b for a, b in zip(reps[0], ref["sampled"][0]))
            print(f"| {shape} ({rec['rows']} rows) | {name} | {best:.3f} s | {best / min(ref['seconds']):.1f} | "
                  f"{same_greedy}/{rec['rows']} | {twice} | {same_sampled}/{rec['rows']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
