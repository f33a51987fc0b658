"""Benchmark: the warm start's per-step losses, a hand-written SFT loop vs TRL's ``SFTTrainer`` as the stage runs it.

Three runs of ``policy.warm_start`` on the demo's data and random-init tiny policy, one thread:

* **loop**: a plain PyTorch loop (the stage's former implementation, kept here as the reference): the examples
  tokenized as prompt then completion, labels only on the completion, ``torch.optim.AdamW`` (no weight decay),
  ``LambdaLR`` with ``min(1, (s + 1) / (max_steps // 10))`` at 0-based step ``s``, gradients clipped to norm 1,
  batches taken from ``random.Random(seed)`` permutations laid end to end (a batch may span two passes), the loss
  through TRL's fused LM head on labelled positions, by length-sorted parts.
* **SFTTrainer (the stage)**: :func:`reappraisal.policy.warm_start_io.run_warm_start`, what the stage runs: TRL's
  trainer given the loop's batch order (a sequential sampler over the examples laid out by ``batch_order``) and
  its warm-up (``optimizers=(AdamW, LambdaLR)``).
* **SFTTrainer, its own sampler and warm-up**: the same trainer with TRL's defaults for both (a torch permutation
  per pass, the remainder dropped; ``constant_with_warmup`` over a tenth of the steps, ``s / warmup``): what the
  stage would train without the two things TRL's arguments cannot express.

    .venv/bin/python benchmarks/warm_start_losses.py --root /tmp/clean

``--root`` is a checkout where ``snakemake results/policy/warm_start`` ran (``data/processed/targets.parquet``,
``data/interim/vignettes.parquet``, the base model ``results/base_models/policy``); its ``config.yaml`` gives
the settings. Prints a Markdown table and writes the per-step losses to ``--out`` (JSON).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path


def loop_batches(n_examples: int, steps: int, batch_size: int, seed: int) -> list[list[int]]:
    """The loop's batches (the stage's ``batch_order`` cut into steps)."""
    from reappraisal.policy.warm_start_io import batch_order

    order = batch_order(n_examples, steps, batch_size, seed)
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]


def hand_written_loop(base_dir: Path, examples, warm_start, seed: int, work: Path) -> list[float]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl.trainer.utils import add_fused_lm_head

    from reappraisal.policy.warm_start_io import prompt_completion, warmup_factor
    from reappraisal.training.batches import pad_right
    from reappraisal.training.fused_head import score_labelled_positions_only
    from reappraisal.training.length_parts import batch_part, right_padded_parts

    torch.manual_seed(seed)
    tok = AutoTokenizer.from_pretrained(base_dir)
    model = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32)
    model.train()
    add_fused_lm_head(model, outputs=("log_probs",))
    score_labelled_positions_only()
    texts = prompt_completion(tok, examples)
    encoded = []
    for prompt, completion in zip(texts["prompt"], texts["completion"]):
        p_ids = tok(prompt, add_special_tokens=False)["input_ids"]
        c_ids = tok(completion + tok.eos_token, add_special_tokens=False)["input_ids"]
        encoded.append(((p_ids + c_ids)[:warm_start.max_length], ([-100] * len(p_ids) + c_ids)[:warm_start.max_length]))
    steps = int(warm_start.max_steps)
    opt = torch.optim.AdamW(model.parameters(), lr=float(warm_start.learning_rate), weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_factor(steps))
    losses = []
    for idx in loop_batches(len(encoded), steps, int(warm_start.per_device_train_batch_size), seed):
        batch = pad_right([encoded[i][0] for i in idx], tok.pad_token_id, labels=[encoded[i][1] for i in idx])
        parts = right_padded_parts(batch["attention_mask"])
        if parts is None:
            loss = model(**batch, fused_lm_head=True).loss
        else:
            n = max(int((batch["labels"][..., 1:] != -100).sum()), 1)
            loss = sum(model(**batch_part(batch, rows, width), fused_lm_head=True, num_items_in_batch=n).loss
                       for rows, width in parts)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad(set_to_none=True)
        losses.append(float(loss.detach()))
    return losses


def stage_trainer(base_dir: Path, examples, warm_start, seed: int, work: Path) -> list[float]:
    from reappraisal.policy.warm_start_io import run_warm_start

    summary = run_warm_start(base_dir, examples, work / "warm_start", warm_start=warm_start, seed=seed)
    return [float(e["loss"]) for e in summary["log"]]


def trainer_with_its_defaults(base_dir: Path, examples, warm_start, seed: int, work: Path) -> list[float]:
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, set_seed
    from trl import SFTConfig, SFTTrainer

    from reappraisal.policy.warm_start_io import WARMUP_DIVISOR, prompt_completion, warm_start_args
    from reappraisal.training.length_parts import in_length_parts
    from reappraisal.training.tracking import OFF

    import torch

    set_seed(seed)
    tok = AutoTokenizer.from_pretrained(base_dir)
    data = Dataset.from_dict(prompt_completion(tok, examples))
    args = SFTConfig(**{**warm_start_args(warm_start, work, seed=seed, use_cpu=True, tracking=OFF),
                        "train_sampling_strategy": "random", "save_strategy": "no", "optim": "adamw_torch",
                        "weight_decay": 0.0, "lr_scheduler_type": "constant_with_warmup",
                        "warmup_steps": 1 / WARMUP_DIVISOR})
    model = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32)
    trainer = in_length_parts(SFTTrainer)(model=model, args=args, train_dataset=data, processing_class=tok)
    trainer.train()
    return [float(e["loss"]) for e in trainer.state.log_history if "loss" in e]


RUNS = {"loop": hand_written_loop, "SFTTrainer (the stage)": stage_trainer,
        "SFTTrainer, its own sampler and warm-up": trainer_with_its_defaults}
SHOWN_STEPS = (1, 2, 3, 5, 10, 15, 16, 20, 30, 50, 75, 100, 125, 150)


def main(argv=None) -> int:
    import torch

    from reappraisal.config import load_config
    from reappraisal.input_tables import read_table
    from reappraisal.policy.committee import FormatGate
    from reappraisal.policy.warm_start_io import warm_start_examples
    from reappraisal.settings import Settings

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=Path("."))
    ap.add_argument("--out", type=Path, default=Path("/tmp/warm_start_losses.json"))
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    settings = Settings.from_params(load_config(args.root / "config.yaml"))
    policy, seed = settings.policy, int(settings.seed)
    examples = warm_start_examples(read_table(args.root / "data/processed/targets.parquet"),
                                   read_table(args.root / "data/interim/vignettes.parquet"), seed=seed,
                                   gate=FormatGate.from_settings(policy.format_gate))
    base = args.root / settings.base_models.policy_base
    losses, seconds = {}, {}
    for name, run in RUNS.items():
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            losses[name] = run(base, examples, policy.warm_start, seed, Path(tmp))
            seconds[name] = time.perf_counter() - t0
    args.out.write_text(json.dumps({"losses": losses, "seconds": seconds}, indent=1))
    names = list(RUNS)
    print(f"{len(examples)} examples, {policy.warm_start.max_steps} steps of {policy.warm_start.per_device_train_batch_size}, "
          f"seed {seed}; seconds: " + ", ".join(f"{n} {s:.1f}" for n, s in seconds.items()))
    print("| step | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for step in SHOWN_STEPS:
        if step <= len(losses["loop"]):
            print(f"| {step} | " + " | ".join(f"{losses[n][step - 1]:.4f}" for n in names) + " |")
    print("| mean of the last 10 | " + " | ".join(f"{sum(losses[n][-10:]) / 10:.4f}" for n in names) + " |")
    print("| mean of every step | " + " | ".join(f"{sum(losses[n]) / len(losses[n]):.4f}" for n in names) + " |")
    for name in names[1:]:
        diff = max(abs(a - b) for a, b in zip(losses[name], losses["loop"]))
        print(f"largest per-step difference from the loop, {name}: {diff:.2e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
