"""Demo only: warm-start the random-init tiny policy with a short SFT.

A random-init policy never emits ``</think>``, so every answer would be empty,
every committee reward equal and GRPO would have no signal. A real thinking
model starts well-formed; this stage brings the tiny one there: supervised
fine-tuning on the train split's human reappraisals, rendered exactly as the
policy will be prompted (the card's system and user turns through the
model's chat template, whose generation prompt opens ``<think>\\n``) and
completed in the thinking format ``reasoning\\n</think>\\n\\nreappraisal<eos>``.
The loss covers the completion tokens only. Only answers that pass the
two-sentence format gate are used. The reasoning is a short line chosen
from :data:`THINKING_LINES` so that the model learns the shape of a thought,
not its content. Only train-split human texts are used, as everywhere in
training (held-out and GPT-4 answers never are). Each step's loss and
learning rate go to the job's reporter (``training.report_to``:
:meth:`reappraisal.training.tracking.Tracking.step_log`) as it trains.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from reappraisal.errors import PipelineInputError
from reappraisal.training.batches import pad_right
from reappraisal.training.fused_head import score_labelled_positions_only
from reappraisal.training.length_parts import fused_head_loss_in_parts
from reappraisal.training.locks import lock_work_dir
from reappraisal.training.segments import segment_record
from reappraisal.training.settings import set_cpu_threads
from reappraisal.training.tracking import LIVE_DIR_HELP, OFF, Tracking
from reappraisal.training.work_dir import remove_stale_temporaries, work_dir_beside

from .committee import FormatGate
from .prompts import build_messages

THINKING_LINES = (
    "They feel {emotion}. Offer a kinder reading.",
    "The feeling is {emotion}. What else could explain it?",
    "Speak to them. Keep it short and kind.",
    "A gentler view could ease the {emotion}.",
)


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


def encode_example(tokenizer, example: Mapping[str, str], max_length: int) -> tuple[list[int], list[int]]:
    """Token ids and labels (-100 on the prompt) of one example in the thinking format."""
    prompt = tokenizer.apply_chat_template(build_messages(example["scenario"]), tokenize=False, add_generation_prompt=True)
    completion = f"{example['thinking']}\n</think>\n\n{example['answer']}{tokenizer.eos_token}"
    p_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    c_ids = tokenizer(completion, add_special_tokens=False)["input_ids"]
    ids = (p_ids + c_ids)[:max_length]
    labels = ([-100] * len(p_ids) + c_ids)[:max_length]
    return ids, labels


def run_warm_start(
    base_dir: str | Path,
    examples: Sequence[Mapping[str, str]],
    out_dir: str | Path,
    *,
    steps: int,
    lr: float,
    batch_size: int,
    max_length: int,
    seed: int,
    tracking: Tracking = OFF,
) -> dict[str, Any]:
    """SFT the causal LM in ``base_dir`` on ``examples``; save model + tokenizer to ``out_dir`` atomically.

    Holds the lock of the output's work folder (``.<out name>.work.lock`` beside it; no folder is made: the loop
    keeps no checkpoints) from before a killed run's leftovers are removed until the output is in place, so a
    second run waits for the first instead of removing its temporary output.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl.trainer.utils import add_fused_lm_head

    from reappraisal.atomic import atomic_dir

    with lock_work_dir(work_dir_beside(out_dir)):
        remove_stale_temporaries(out_dir)  # what a killed earlier run left beside the output
        torch.manual_seed(seed)
        tok = AutoTokenizer.from_pretrained(base_dir)
        model = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32)
        model.train()
        # the loss from TRL's fused LM head, which projects only the answer's positions (the prompt's carry no label)
        add_fused_lm_head(model, outputs=("log_probs",))
        score_labelled_positions_only()
        encoded = [encode_example(tok, ex, max_length) for ex in examples]
        opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / max(1, steps // 10)))
        rng = random.Random(seed)
        pad = tok.pad_token_id
        losses = []
        t0 = time.perf_counter()
        order: list[int] = []
        reported = tracking.step_log()
        for step in range(1, steps + 1):
            if len(order) < batch_size:
                order += rng.sample(range(len(encoded)), len(encoded))
            idx, order = order[:batch_size], order[batch_size:]
            batch = [encoded[i] for i in idx]
            padded = pad_right([ids for ids, _ in batch], pad, labels=[lab for _, lab in batch])
            loss = fused_head_loss_in_parts(model, padded)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            learning_rate = sched.get_last_lr()[0]
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
            losses.append(float(loss.detach()))
            reported.log(step, {"loss": losses[-1], "learning_rate": learning_rate})
        reported.close()
        seconds = time.perf_counter() - t0
        segment = segment_record(resumed_from=None, start_step=0, end_step=steps, seconds=seconds, completed=True)
        summary = {
            "n_examples": len(examples),
            "steps": steps,
            "batch_size": batch_size,
            "lr": lr,
            "loss_first": losses[0] if losses else None,
            "loss_last": sum(losses[-10:]) / len(losses[-10:]) if losses else None,
            "seconds": round(seconds, 2),
            # the same record as the checkpointed trainers': one segment (this loop never resumes)
            "segments": [segment],
            "train_seconds": segment["seconds"],
            "resumed_from": None,
        }
        with atomic_dir(out_dir) as tmp:
            model.save_pretrained(tmp)
            tok.save_pretrained(tmp)
            (tmp / "warm_start.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
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
    params = parse_params(args.params)
    settings = Settings.from_params(params)
    policy = settings.policy
    tracking = Tracking.from_settings(settings.training, args.live_dir)
    set_cpu_threads(policy.cpu_threads, use_cpu=policy.use_cpu)
    ws = policy.warm_start
    seed = int(settings.seed)
    examples = warm_start_examples(read_table(args.targets), read_table(args.vignettes), seed=seed,
                                   gate=FormatGate.from_settings(policy.format_gate))
    summary = run_warm_start(
        args.base_dir, examples, args.out,
        steps=int(ws.max_steps), lr=float(ws.learning_rate), batch_size=int(ws.per_device_train_batch_size),
        max_length=int(ws.max_length), seed=seed, tracking=tracking,
    )
    print(json.dumps(summary, sort_keys=True))
    return 0
