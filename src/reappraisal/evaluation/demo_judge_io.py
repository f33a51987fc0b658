"""train_demo_judge stage: the demo's stand-in for the held-out evaluation judge.

The paper's judge (Llama-3.1-70B-Instruct) never touched training. The
demo's stand-in must be just as independent of the reward path:

- different weights: it starts from the ``judge`` base model (its own random
  initialisation, seed and tokenizer copy; :mod:`reappraisal.base_models.prepare_io`),
  not from the reward models, the GRM or the policy;
- no human data in common with the reward path: it learns only from the
  ``judge_train`` half of the validation split's human pairs
  (:mod:`.human_pairs`), which no reward model or GRM trains on, and it is
  calibrated on the other half.

It is taught (TRL ``SFTTrainer``, loss on the completion only) to answer the
judge YAML's own prompt with its verdict line for clearly separated pairs
(``|human margin| >= demo_judge.min_margin``), in both orders. It is small
and weak; the calibration table says how weak.
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path
from typing import Sequence

import pandas as pd

from ..errors import PipelineInputError
from ..params import parse_params
from ..settings import DemoJudgeSettings, Settings, as_config
from ..input_tables import read_table
from ..training.length_parts import in_length_parts
from ..training.run import finished_model, run_training
from ..training.settings import checkpointing_args, model_dtype, set_cpu_threads, sft_args, use_bf16
from ..training.tracking import LIVE_DIR_HELP, OFF, Tracking
from ..training.work_dir import fingerprint, open_work_dir, remove_stale_temporaries, work_dir_beside
from .human_pairs import human_pairs
from .judge_spec import JudgeSpec, load_judge

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


def verdict_completion(prompt: str, label: str, prefill: str | None = None) -> str:
    """The reply the judge is taught after ``prompt``.

    With a ``prefill`` (the judge YAML's reply start, already at the end of
    ``prompt``) only the verdict letter is taught, so the whole loss falls on
    the decision; otherwise an opened thinking block is closed, then the
    verdict line.
    """
    if prefill:
        return f" {label}"
    line = f"VERDICT: {label}"
    return f"{THINK_CLOSE}\n{line}" if prompt.rstrip().endswith(THINK_OPEN) else line


def training_examples(pairs: pd.DataFrame, scenarios: dict[str, str], spec: JudgeSpec, tokenizer,
                      min_margin: float, both_orders: bool = True) -> dict[str, list[str]]:
    """Prompt/completion texts: every clearly separated ``judge_train`` pair, in both orders (or only in
    the pair's own order, which :mod:`.human_pairs` already randomised)."""
    clear = pairs[(pairs["half"] == "judge_train") & (pairs["margin"].abs() >= min_margin)]
    prompts, completions = [], []
    for p in clear.itertuples(index=False):
        first_wins = p.margin > 0
        orders = ((p.first, p.second, "A" if first_wins else "B"), (p.second, p.first, "B" if first_wins else "A"))
        for a, b, label in orders if both_orders else orders[:1]:
            prompt = tokenizer.apply_chat_template(spec.messages(scenarios[p.vignette_id], a, b), tokenize=False,
                                                   add_generation_prompt=True) + (spec.prefill or "")
            prompts.append(prompt)
            completions.append(verdict_completion(prompt, label, spec.prefill))
    return {"prompt": prompts, "completion": completions}


def judge_training_args(judge: DemoJudgeSettings, output_dir: str | Path, *, seed: int, bf16: bool, use_cpu: bool,
                        tracking: Tracking) -> dict:
    """Keyword arguments of the demo judge's ``trl.SFTConfig`` (checkpointing and reporting as every trainer here)."""
    return dict(
        **checkpointing_args(output_dir, seed=seed, save_steps=int(judge.save_steps), save_total_limit=2, bf16=bf16,
                             use_cpu=use_cpu, activation_checkpointing=False, tracking=tracking),
        **sft_args(judge),
        logging_steps=10,
        disable_tqdm=False,
    )


def train_demo_judge(base_dir: str, targets: pd.DataFrame, vignettes: pd.DataFrame, spec: JudgeSpec, *,
                     judge: DemoJudgeSettings, judge_train_fraction: float, dimension: str, seed: int, out_dir: Path,
                     callbacks=(), tracking: Tracking = OFF) -> dict:
    """Fine-tune the judge base on the judge-train pairs; save model + tokenizer + training summary.

    ``judge``: the ``evaluation.demo_judge`` settings; ``judge_train_fraction``:
    ``evaluation.calibration.judge_train_fraction`` (the share of the validation
    split's reappraisals whose pairs may teach it).

    Checkpoints and resumes through the shared training plumbing
    (:mod:`reappraisal.training`) like every trainer here: a killed run
    continues from its last complete checkpoint in ``.judge.work`` beside
    the output (locked by ``.judge.work.lock`` while a run uses it), and the
    summary lists every training segment.
    """
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, set_seed
    from trl import SFTConfig, SFTTrainer

    set_seed(seed)
    pairs = human_pairs(targets, dimension=dimension, judge_train_fraction=float(judge_train_fraction), seed=seed)
    scenarios = dict(zip(vignettes["vignette_id"].astype(str), vignettes["text"].astype(str)))
    tokenizer = AutoTokenizer.from_pretrained(base_dir)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    both_orders = bool(judge.both_orders)
    examples = training_examples(pairs, scenarios, spec, tokenizer, float(judge.min_margin), both_orders=both_orders)
    if not examples["prompt"]:
        raise PipelineInputError("no clearly separated judge-train pairs to learn from; lower "
                                 "evaluation.demo_judge.min_margin or raise judge_train_fraction",
                                 where="config evaluation.demo_judge")
    gpu = torch.cuda.is_available()
    bf16 = use_bf16("auto", where="evaluation.demo_judge")
    set_cpu_threads(judge.cpu_threads, use_cpu=not gpu)
    run_spec = {"base": base_dir, "cfg": {**as_config(judge), "judge_train_fraction": judge_train_fraction}, "seed": seed,
                "data": fingerprint(examples)}
    with open_work_dir(work_dir_beside(out_dir), run_spec) as work:  # locked until the output is in place
        remove_stale_temporaries(out_dir)
        model = AutoModelForCausalLM.from_pretrained(base_dir, dtype=getattr(torch, model_dtype(bf16)))
        args = SFTConfig(**judge_training_args(judge, work.path, seed=seed, bf16=bf16, use_cpu=not gpu, tracking=tracking))
        trainer = in_length_parts(SFTTrainer)(model=model, args=args, train_dataset=Dataset.from_dict(examples),
                                              processing_class=tokenizer, callbacks=list(callbacks))
        result = run_training(trainer, work, where="train_demo_judge", tracking=tracking)
        summary = {
            "base": base_dir,
            "judge_spec": spec.path,
            "examples": len(examples["prompt"]),
            "pairs": int(len(examples["prompt"]) // (2 if both_orders else 1)),
            "judge_train_reappraisals": int(pd.unique(pairs.loc[pairs["half"] == "judge_train",
                                                                ["first_id", "second_id"]].to_numpy().ravel()).size),
            "train_loss": result.train_loss,
            "steps": result.global_step,
            **result.record(),  # resumed_from, segments (killed ones too), train_seconds (their total)
            "data": "judge_train half of the validation split's human pairs; never seen by the reward path",
        }
        with finished_model(trainer, result, work, out_dir, tokenizer=tokenizer) as tmp:
            (tmp / "training_summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True))
    return summary


def cli_main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="reappraisal train-demo-judge", description=__doc__.splitlines()[0])
    for name in ("base-dir", "targets", "vignettes", "judge", "out", "params"):
        ap.add_argument(f"--{name}", required=True)
    ap.add_argument("--live-dir", default=None, help=LIVE_DIR_HELP)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    settings = Settings.from_params(parse_params(args.params))
    ev = settings.evaluation
    if settings.data is None:
        raise PipelineInputError("--params must carry the 'data' section (its primary_dimension)")
    spec = load_judge(args.judge, ev.judges_dir)
    summary = train_demo_judge(args.base_dir, read_table(args.targets), read_table(args.vignettes), spec,
                               judge=ev.demo_judge, judge_train_fraction=ev.calibration.judge_train_fraction,
                               dimension=settings.data.primary_dimension, seed=int(settings.seed),
                               out_dir=Path(args.out), tracking=Tracking.from_settings(settings.training, args.live_dir))
    print(f"train_demo_judge: {summary['examples']} examples ({summary['pairs']} pairs), {summary['steps']} steps, "
          f"train loss {summary['train_loss']:.4f} -> {args.out}")
    return 0
