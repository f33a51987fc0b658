"""Demo only: warm-start the random-init tiny policy with a short SFT (TRL ``SFTTrainer``).

A random-init policy never emits ``</think>``, so every answer would be empty,
every committee reward equal and GRPO would have no signal. A real thinking
model starts well-formed; this stage brings the tiny one there: supervised
fine-tuning on the train split's human reappraisals, rendered exactly as the
policy will be prompted (the card's system and user turns through the
model's chat template, whose generation prompt opens ``<think>\\n``) and
completed in the thinking format ``reasoning\\n</think>\\n\\nreappraisal<eos>``
(TRL appends the EOS). The loss covers the completion tokens only (TRL's
completion-only loss on prompt/completion data). Only answers that pass the
two-sentence format gate are used. The reasoning is a short line chosen
from :data:`THINKING_LINES` so that the model learns the shape of a thought,
not its content. Only train-split human texts are used, as everywhere in
training (held-out and GPT-4 answers never are).

The optimizer and schedule: AdamW without weight decay at
``policy.warm_start.learning_rate``, the learning rate times
``min(1, (s + 1) / (max_steps // 10))`` at 0-based step ``s`` (a linear
warm-up over the first tenth of the steps, then constant: :func:`warmup_factor`),
gradients clipped to norm 1. The batches (:func:`batch_order`): permutations of
the examples from ``random.Random(seed)`` laid end to end and cut into
``per_device_train_batch_size`` examples a step (a batch may span two
passes), fed to the trainer in that order. Neither is a TRL argument (every
``lr_scheduler_type`` warm-up starts at 0; the Trainer's sampler draws a torch
permutation per pass and drops a pass's remainder), so they reach it through
its public ``optimizers`` and a sequential sampler over the examples laid out
in batch order. Every step's loss and learning rate go to the job's reporter
(``training.report_to``). The run checkpoints every
``policy.warm_start.save_steps`` into ``.warm_start.work`` beside the output
and a killed run resumes from the last complete checkpoint
(:mod:`reappraisal.training`).
"""

from __future__ import annotations

import argparse
import json
import logging
import random
from pathlib import Path
from typing import Any, Mapping, Sequence

from reappraisal.errors import PipelineInputError
from reappraisal.settings import WarmStartSettings, as_config
from reappraisal.training.length_parts import in_length_parts
from reappraisal.training.run import finished_model, run_training
from reappraisal.training.settings import checkpointing_args, set_cpu_threads
from reappraisal.training.tracking import LIVE_DIR_HELP, OFF, Tracking
from reappraisal.training.work_dir import fingerprint, open_work_dir, remove_stale_temporaries, work_dir_beside

from .committee import FormatGate
from .prompts import build_messages

THINKING_LINES = (
    "They feel {emotion}. Offer a kinder reading.",
    "The feeling is {emotion}. What else could explain it?",
    "Speak to them. Keep it short and kind.",
    "A gentler view could ease the {emotion}.",
)
#: The record written beside the model.
RECORD_FILE = "warm_start.json"
#: The learning rate warms up over ``max_steps // WARMUP_DIVISOR`` steps.
WARMUP_DIVISOR = 10


def batch_order(n_examples: int, steps: int, batch_size: int, seed: int) -> list[int]:
    """The examples' indices in the order the steps take them, ``steps * batch_size`` of them.

    Permutations of ``range(n_examples)`` from ``random.Random(seed)`` laid end to end: a step takes the next
    ``batch_size``; a new permutation is drawn when fewer than ``batch_size`` are left, so a batch may span two
    passes and no example is dropped.
    """
    if n_examples < 1 or batch_size < 1:
        raise ValueError(f"batch_order needs examples and a batch size (got {n_examples}, {batch_size})")
    rng = random.Random(seed)
    pending: list[int] = []
    order: list[int] = []
    for _ in range(steps):
        if len(pending) < batch_size:
            pending += rng.sample(range(n_examples), n_examples)
        order += pending[:batch_size]
        pending = pending[batch_size:]
    return order


def warmup_factor(steps: int):
    """The learning rate's factor at 0-based step ``s``: ``min(1, (s + 1) / max(1, steps // WARMUP_DIVISOR))``."""
    warmup = max(1, steps // WARMUP_DIVISOR)
    return lambda s: min(1.0, (s + 1) / warmup)


def warm_start_examples(targets, vignettes, *, seed: int, gate: FormatGate) -> list[dict[str, str]]:
    """SFT examples (``scenario``, ``thinking``, ``answer``) from train-split human reappraisals.

    ``targets``/``vignettes`` follow the data contract; only vignettes of pool
    ``train`` are used and answers failing ``gate`` are dropped.
    """
    need_t = {"vignette_id", "author_type", "split", "text"}
    need_v = {"vignette_id", "text", "pool"}
    if missing := need_t - set(targets.columns):
        raise PipelineInputError(f"missing column(s) {sorted(missing)}", where="targets")
    if missing := need_v - set(vignettes.columns):
        raise PipelineInputError(f"missing column(s) {sorted(missing)}", where="vignettes")
    vig = vignettes[vignettes["pool"] == "train"].set_index("vignette_id")
    rows = targets[(targets["author_type"] == "human") & (targets["split"] == "train") & targets["vignette_id"].isin(vig.index)]
    rng = random.Random(seed)
    out = []
    for r in rows.sort_values(["vignette_id", "text"]).itertuples(index=False):
        answer = " ".join(str(r.text).split())
        if not gate.check(answer).passed:
            continue
        v = vig.loc[r.vignette_id]
        emotion = str(v["emotion"]) if "emotion" in vig.columns and isinstance(v.get("emotion"), str) else "upset"
        thinking = rng.choice(THINKING_LINES).format(emotion=emotion)
        out.append({"vignette_id": str(r.vignette_id), "scenario": str(v["text"]), "thinking": thinking, "answer": answer})
    if not out:
        raise PipelineInputError("no human train-split reappraisal of a train-pool vignette passes the format gate", where="targets")
    return out


def prompt_completion(tokenizer, examples: Sequence[Mapping[str, str]]) -> dict[str, list[str]]:
    """The ``prompt``/``completion`` texts of ``examples``: the policy's prompt as the chat template renders it
    (ending in the opened ``<think>``), and ``thinking\\n</think>\\n\\nanswer`` (TRL appends the EOS)."""
    return {
        "prompt": [tokenizer.apply_chat_template(build_messages(ex["scenario"]), tokenize=False,
                                                 add_generation_prompt=True) for ex in examples],
        "completion": [f"{ex['thinking']}\n</think>\n\n{ex['answer']}" for ex in examples],
    }


def warm_start_args(warm_start: WarmStartSettings, output_dir: str | Path, *, seed: int, use_cpu: bool,
                    tracking: Tracking) -> dict[str, Any]:
    """Keyword arguments of the warm start's ``trl.SFTConfig`` (float32; checkpointing and reporting as every
    trainer here; every step logged; the examples taken in the order given: :func:`batch_order`). The optimizer
    and schedule are not among them: :func:`run_warm_start` gives them to the trainer."""
    return dict(
        **checkpointing_args(output_dir, seed=seed, save_steps=int(warm_start.save_steps), save_total_limit=2,
                             bf16=False, use_cpu=use_cpu, activation_checkpointing=False, tracking=tracking),
        max_steps=int(warm_start.max_steps),
        learning_rate=float(warm_start.learning_rate),
        per_device_train_batch_size=int(warm_start.per_device_train_batch_size),
        max_length=int(warm_start.max_length),
        max_grad_norm=1.0,
        use_cache=True,  # the saved config keeps generation's KV cache on, as the base model's (training passes False)
        train_sampling_strategy="sequential",
        dataloader_drop_last=True,
        logging_steps=1,
        disable_tqdm=True,
    )


def run_warm_start(
    base_dir: str | Path,
    examples: Sequence[Mapping[str, str]],
    out_dir: str | Path,
    *,
    warm_start: WarmStartSettings,
    seed: int,
    use_cpu: bool = True,
    tracking: Tracking = OFF,
    callbacks: Sequence = (),
) -> dict[str, Any]:
    """SFT the causal LM in ``base_dir`` on ``examples``; model, tokenizer and :data:`RECORD_FILE` to ``out_dir``.

    ``warm_start``: the ``policy.warm_start`` settings. Checkpoints into ``.<out name>.work`` beside the output
    (locked by ``.<out name>.work.lock`` while a run uses it) and resumes a killed run from its last complete
    checkpoint; the output is put in place whole at the end and the work folder removed. The record lists
    every training segment (:meth:`reappraisal.training.run.RunResult.record`) and every step's logged figures.
    """
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, set_seed
    from trl import SFTConfig, SFTTrainer

    set_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(base_dir)
    data = prompt_completion(tokenizer, examples)
    spec = {"base": str(base_dir), "cfg": as_config(warm_start), "seed": int(seed), "use_cpu": bool(use_cpu),
            "data": fingerprint(data)}
    with open_work_dir(work_dir_beside(out_dir), spec) as work:  # locked until the output is in place
        remove_stale_temporaries(out_dir)  # what a killed earlier run left beside the output
        model = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32)
        args = SFTConfig(**warm_start_args(warm_start, work.path, seed=seed, use_cpu=use_cpu, tracking=tracking))
        steps = int(warm_start.max_steps)
        order = batch_order(len(examples), steps, int(warm_start.per_device_train_batch_size), seed)
        in_order = Dataset.from_dict({key: [values[i] for i in order] for key, values in data.items()})
        optimizer = torch.optim.AdamW(model.parameters(), lr=float(warm_start.learning_rate), weight_decay=0.0)
        schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_factor(steps))
        trainer = in_length_parts(SFTTrainer)(model=model, args=args, train_dataset=in_order,
                                              processing_class=tokenizer, optimizers=(optimizer, schedule),
                                              callbacks=list(callbacks))
        result = run_training(trainer, work, where="warm_start_policy", tracking=tracking)
        logged = [e for e in result.log_history if "loss" in e]
        losses = [float(e["loss"]) for e in logged]
        summary = {
            "n_examples": len(examples),
            "steps": result.global_step,
            "batch_size": int(warm_start.per_device_train_batch_size),
            "lr": float(warm_start.learning_rate),
            "train_loss": result.train_loss,
            "loss_first": losses[0] if losses else None,
            "loss_last": sum(losses[-10:]) / len(losses[-10:]) if losses else None,
            "log": logged,
            **result.record(),  # resumed_from, segments (killed ones too), train_seconds (their total)
        }
        with finished_model(trainer, result, work, out_dir, tokenizer=tokenizer) as tmp:
            (tmp / RECORD_FILE).write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    return summary


def cli_main(argv: Sequence[str]) -> int:
    from reappraisal.params import parse_params
    from reappraisal.settings import Settings
    from reappraisal.input_tables import read_table

    ap = argparse.ArgumentParser(prog="reappraisal warm-start-policy", description=__doc__.splitlines()[0])
    ap.add_argument("--base-dir", required=True, help="the random-init tiny policy (prepare_base_models)")
    ap.add_argument("--targets", required=True)
    ap.add_argument("--vignettes", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--params", default="{}")
    ap.add_argument("--live-dir", default=None, help=LIVE_DIR_HELP)
    args = ap.parse_args(argv)
    # the shared plumbing's lines (resuming from <checkpoint> (step N), waiting for a work folder's holder)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    settings = Settings.from_params(parse_params(args.params))
    policy = settings.policy
    tracking = Tracking.from_settings(settings.training, args.live_dir)
    set_cpu_threads(policy.cpu_threads, use_cpu=policy.use_cpu)
    seed = int(settings.seed)
    examples = warm_start_examples(read_table(args.targets), read_table(args.vignettes), seed=seed,
                                   gate=FormatGate.from_settings(policy.format_gate))
    summary = run_warm_start(args.base_dir, examples, args.out, warm_start=policy.warm_start, seed=seed,
                             use_cpu=bool(policy.use_cpu), tracking=tracking)
    print(f"warm-start-policy: {summary['n_examples']} examples, {summary['steps']} steps, "
          f"loss {summary['loss_first']:.4f} -> {summary['loss_last']:.4f} -> {args.out}")
    return 0
