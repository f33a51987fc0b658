"""Train the generative reward model (GRM) in two stages, as RM-R1 does.

Stage 1, distillation SFT (TRL ``SFTTrainer``): the judge learns to answer
the model card's prompt with reasoning that ends in ``ANSWER: A|B``, from a
teacher's traces file (``grm.traces_file``) or, when none is given, from
short templated rationales written from the human ratings
(:mod:`reappraisal.grm.traces`). Stage 2, RL with a verifiable reward (TRL
``GRPOTrainer``, β > 0): +1 when the final verdict matches the human
preference, −1 when wrong or unparseable (:mod:`reappraisal.grm.reward`).
With ``grm.vllm`` on (the paper preset), TRL samples stage 2's replies with
vLLM, colocated in the training process, as the policy arms do
(:mod:`reappraisal.training.vllm_colocate`).

Both stages see only train-split pairs (checked against ``targets``), each
pair in both orders; the templated traces and the RL prompts use only the
clearly separated pairs (human margin ≥ ``grm.delta``). Outputs are written
atomically: the stage-1 model to ``--sft-out``, the final model (with
``training_summary.json``) to ``--out``; a failed run leaves neither, and a
rerun resumes both stages from their last complete checkpoints (stage 2
saves one every ``grm.grpo.save_steps``; the rerun logs ``resuming from
<checkpoint> (step N)``).
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from reappraisal.atomic import atomic_dir
from reappraisal.config import check_kl_beta
from reappraisal.settings import DataSettings, GrmSettings, Settings, as_config
from reappraisal.errors import DataValidationError, PipelineInputError
from reappraisal.input_tables import read_table
from reappraisal.params import parse_params
from reappraisal.training.length_parts import in_length_parts
from reappraisal.training.run import RunResult, export_model, finished_outputs, run_training
from reappraisal.training.segments import total_seconds
from reappraisal.training.settings import checkpointing_args, model_dtype, set_cpu_threads, sft_args, use_bf16
from reappraisal.training.tracking import LIVE_DIR_HELP, OFF, Tracking
from reappraisal.training.vllm_colocate import vllm_settings
from reappraisal.training.work_dir import (
    WorkDir,
    fingerprint,
    open_work_dir,
    remove_stale_temporaries,
    work_dir_beside,
)

from .pairs import both_orders, check_pairs, select_pairs
from .prompts import completion_style, format_completion, judge_prompt, scenario_texts
from .reward import trl_verdict_reward
from .traces import teacher_traces, templated_traces
from .training_summary import SUMMARY_FILE


# --------------------------------------------------------------------------- data
def check_train_only(pairs: pd.DataFrame, targets: pd.DataFrame) -> None:
    """Every reappraisal of ``pairs`` must be a train-split reappraisal in ``targets``."""
    for col in ("reappraisal_id", "split"):
        if col not in targets.columns:
            raise DataValidationError(f"missing column {col!r}", where="targets")
    split = dict(zip(targets["reappraisal_id"], targets["split"]))
    ids = pd.unique(pd.concat([pairs["id_a"], pairs["id_b"]]))
    bad = [i for i in ids if split.get(i) != "train"]
    if bad:
        raise PipelineInputError(
            f"{len(bad)} reappraisal(s) of the GRM's training pairs are not train-split reappraisals "
            f"in targets (e.g. {bad[0]!r}: split {split.get(bad[0])!r}); the GRM trains on train only",
            where="pairs",
        )


def sft_rows(
    pairs: pd.DataFrame,
    targets: pd.DataFrame,
    *,
    grm: GrmSettings,
    data: DataSettings,
    seed: int,
    traces: pd.DataFrame | None = None,
    traces_where: str = "config key 'grm.traces_file'",
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Judged items with ``reasoning`` for stage 1, and what was used (for the summary)."""
    train = pairs[pairs["split"] == "train"]
    if traces is not None:
        rows, dropped = teacher_traces(both_orders(train), traces, where=traces_where)
        return rows, {"source": "traces_file", "n_rows": len(rows), "n_dropped_wrong_verdict": dropped}
    separated = select_pairs(pairs, split="train", delta=float(grm.delta))
    cap = grm.sft.max_pairs
    if cap is not None and len(separated) > cap:
        separated = separated.sample(n=int(cap), random_state=seed).sort_index()
    rows = templated_traces(
        both_orders(separated),
        targets,
        dimensions=list(data.dimensions),
        primary=data.primary_dimension,
        tie=float(grm.rationale_tie),
    )
    return rows, {"source": "templated", "n_rows": len(rows), "n_pairs": len(separated)}


# ------------------------------------------------------------------------ training
def _trainer_args(work: WorkDir, *, seed: int, save_steps: int, tracking: Tracking) -> dict[str, Any]:
    """Checkpointing, reporting and precision of both stages: bf16 (and activation checkpointing) where a GPU
    supports it, float32 on CPU."""
    import torch

    gpu = torch.cuda.is_available()
    return checkpointing_args(work.path, seed=seed, save_steps=save_steps, save_total_limit=2,
                              bf16=use_bf16("auto", where="grm"), use_cpu=not gpu, activation_checkpointing=gpu,
                              tracking=tracking)


def run_sft(base_model: str, rows: pd.DataFrame, scenarios: Mapping[str, str], *, grm: GrmSettings, seed: int,
            out_dir: Path, work: WorkDir, callbacks: Sequence = (), tracking: Tracking = OFF) -> RunResult:
    """Stage 1: SFT on prompt/completion text, checkpointed in ``work``; model + tokenizer to ``out_dir``."""
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, set_seed
    from trl import SFTConfig, SFTTrainer

    set_seed(seed)
    sft = grm.sft
    common = _trainer_args(work, seed=seed, save_steps=sft.save_steps, tracking=tracking)
    tokenizer = AutoTokenizer.from_pretrained(base_model)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    style = completion_style(tokenizer)
    data = Dataset.from_dict({
        "prompt": [judge_prompt(tokenizer, scenarios[v], a, b)
                   for v, a, b in zip(rows["vignette_id"], rows["first"], rows["second"])],
        "completion": [format_completion(r, c, style) for r, c in zip(rows["reasoning"], rows["correct"])],
    })
    model = AutoModelForCausalLM.from_pretrained(base_model, dtype=getattr(torch, model_dtype(common["bf16"])))
    args = SFTConfig(
        **common,
        **sft_args(sft),
        warmup_steps=0,
        logging_steps=int(sft.logging_steps),
        disable_tqdm=True,
    )
    trainer = in_length_parts(SFTTrainer)(model=model, args=args, train_dataset=data, processing_class=tokenizer,
                                          callbacks=list(callbacks))
    result = run_training(trainer, work, where="grm SFT", tracking=tracking)
    export_model(trainer, result, out_dir, tokenizer=tokenizer)
    return result


def run_grpo(sft_dir: Path, items: pd.DataFrame, scenarios: Mapping[str, str], *, grm: GrmSettings, seed: int,
             out_dir: Path, work: WorkDir, callbacks: Sequence = (), tracking: Tracking = OFF) -> RunResult:
    """Stage 2: GRPO from the SFT model with the ±1 verdict reward, checkpointed in ``work``; saves to ``out_dir``."""
    from datasets import Dataset
    from transformers import AutoTokenizer, set_seed
    from trl import GRPOConfig, GRPOTrainer

    set_seed(seed)
    g = grm.grpo
    common = _trainer_args(work, seed=seed, save_steps=g.save_steps, tracking=tracking)
    tokenizer = AutoTokenizer.from_pretrained(str(sft_dir))
    tokenizer.padding_side = "left"
    items = items.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    data = Dataset.from_dict({
        "prompt": [judge_prompt(tokenizer, scenarios[v], a, b)
                   for v, a, b in zip(items["vignette_id"], items["first"], items["second"])],
        "correct": list(items["correct"]),
    })
    n_gen = int(g.num_generations)
    args = GRPOConfig(
        **common,
        max_steps=int(g.max_steps),
        per_device_train_batch_size=int(g.prompts_per_step) * n_gen,
        num_generations=n_gen,
        max_completion_length=int(g.max_completion_length),
        learning_rate=float(g.learning_rate),
        beta=check_kl_beta(g.beta, where="config key 'grm.grpo.beta'"),
        temperature=float(g.temperature),
        logging_steps=1,
        model_init_kwargs={"dtype": model_dtype(common["bf16"])},
        remove_unused_columns=False,
        disable_tqdm=True,
        # TRL samples the replies with vLLM when grm.vllm is on (the paper preset), as the policy arms do
        **vllm_settings(grm.vllm, max_completion_length=int(g.max_completion_length)),
    )
    trainer = GRPOTrainer(
        model=str(sft_dir), reward_funcs=[trl_verdict_reward], args=args, train_dataset=data,
        processing_class=tokenizer, callbacks=list(callbacks),
    )
    result = run_training(trainer, work, where="grm GRPO", tracking=tracking)
    export_model(trainer, result, out_dir, tokenizer=tokenizer)
    return result


def train_grm(
    base_model: str,
    pairs: pd.DataFrame,
    targets: pd.DataFrame,
    vignettes: pd.DataFrame,
    *,
    grm: GrmSettings,
    data: DataSettings,
    seed: int,
    out_dir: str | Path,
    sft_out_dir: str | Path,
    traces: pd.DataFrame | None = None,
    callbacks: Sequence = (),
    sft_tracking: Tracking = OFF,
    grpo_tracking: Tracking = OFF,
) -> dict[str, Any]:
    """Run both stages; write the SFT model and the final model atomically; return the summary.

    Both stages checkpoint into ``<out>/../.<out name>.work/`` (``sft/``,
    ``grpo/``, and the finished stage-1 model in ``sft_model/``); a rerun
    with the same settings and data resumes where a killed run stopped (see
    :mod:`reappraisal.training`). The work folder is locked for the whole run (a second run waits for the
    first) and removed on success. The summary lists every training segment of both stages (``segments``,
    each stage's too) and ``train_seconds``, their total.
    ``callbacks`` (``TrainerCallback``s) go to both stages' trainers; each stage reports its logged steps
    through its own ``*_tracking`` (:mod:`reappraisal.training.tracking`).
    """
    start = time.monotonic()
    out_dir, sft_out_dir = Path(out_dir), Path(sft_out_dir)
    check_pairs(pairs, "pairs")
    train = pairs[pairs["split"] == "train"]
    if train.empty:
        raise PipelineInputError("no train-split pairs", where="pairs")
    check_train_only(train, targets)
    separated = select_pairs(pairs, split="train", delta=float(grm.delta))
    scenarios = scenario_texts(vignettes, train["vignette_id"].unique())
    rows, sft_info = sft_rows(pairs, targets, grm=grm, data=data, seed=seed, traces=traces)
    rl_items = both_orders(separated)

    summary: dict[str, Any] = {
        "base_model": str(base_model),
        "delta": float(grm.delta),
        "n_train_pairs": int(len(train)),
        "n_separated_train_pairs": int(len(separated)),
        "sft": {**sft_info, "config": as_config(grm.sft)},
        "grpo": {"n_prompts_available": int(len(rl_items)), "config": as_config(grm.grpo),
                 "reward": "+1 final verdict == human preference, -1 wrong or unparseable"},
        "seed": int(seed),
    }
    spec = {
        "base_model": str(base_model), "cfg": as_config(grm), "data_cfg": as_config(data), "seed": int(seed),
        "data": fingerprint(rows.to_dict("records"), rl_items.to_dict("records"), dict(scenarios)),
    }
    # the work folder's lock is held for both stages and both exports (a second run waits for the first)
    with open_work_dir(work_dir_beside(out_dir), spec) as work:
        remove_stale_temporaries(out_dir, sft_out_dir)
        sft_model = work.path / "sft_model"
        t0 = time.monotonic()
        with atomic_dir(sft_model) as tmp:
            sft = run_sft(str(base_model), rows, scenarios, grm=grm, seed=seed, out_dir=tmp,
                          work=work.subdir("sft"), callbacks=callbacks, tracking=sft_tracking)
        summary["sft"].update(log=sft.log_history, train_loss=sft.train_loss, global_step=sft.global_step,
                              **sft.record(), seconds=round(time.monotonic() - t0, 2))
        segments = [{"stage": "sft", **s} for s in sft.segments]
        t0 = time.monotonic()
        with finished_outputs(work, out_dir, sft_out_dir) as (final_tmp, sft_tmp):
            shutil.copytree(sft_model, sft_tmp, dirs_exist_ok=True)
            if int(grm.grpo.max_steps) > 0:
                grpo = run_grpo(sft_model, rl_items, scenarios, grm=grm, seed=seed, out_dir=final_tmp,
                                work=work.subdir("grpo"), callbacks=callbacks, tracking=grpo_tracking)
                summary["grpo"].update(log=grpo.log_history, global_step=grpo.global_step, **grpo.record())
                segments += [{"stage": "grpo", **s} for s in grpo.segments]
            else:
                summary["grpo"]["log"] = []
                summary["grpo"]["skipped"] = "grm.grpo.max_steps = 0: the final model is the stage-1 model"
                shutil.copytree(sft_model, final_tmp, dirs_exist_ok=True)
            summary["grpo"]["seconds"] = round(time.monotonic() - t0, 2)
            summary["seconds"] = round(time.monotonic() - start, 2)
            summary["segments"] = segments  # both stages' training segments, killed ones included
            summary["train_seconds"] = total_seconds(segments)
            (final_tmp / SUMMARY_FILE).write_text(json.dumps(summary, indent=2, sort_keys=True, default=str) + "\n")
    return summary


# ------------------------------------------------------------------------------ CLI
def cli_main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="reappraisal train-grm", description=__doc__.splitlines()[0])
    ap.add_argument("--base-model", required=True, help="directory or hub id of the base causal LM")
    ap.add_argument("--pairs", required=True)
    ap.add_argument("--targets", required=True)
    ap.add_argument("--vignettes", required=True)
    ap.add_argument("--out", required=True, help="final GRM directory")
    ap.add_argument("--sft-out", required=True, help="stage-1 (SFT) model directory")
    ap.add_argument("--params", default=None, help="JSON with sections grm, data, training, seed")
    ap.add_argument("--live-dir", default=None, help=f"the GRPO stage's: {LIVE_DIR_HELP}")
    ap.add_argument("--sft-live-dir", default=None, help=f"the SFT stage's: {LIVE_DIR_HELP}")
    ns = ap.parse_args(argv)
    # the shared plumbing's lines (resuming from <checkpoint> (step N), waiting for a work folder's holder)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    params = parse_params(ns.params)
    if not params.get("grm") or not params.get("data"):
        raise PipelineInputError("--params must carry the 'grm' and 'data' sections")
    settings = Settings.from_params(params)
    grm = settings.grm
    set_cpu_threads(grm.cpu_threads)
    traces = None
    if grm.traces_file:
        traces = read_table(grm.traces_file, where=f"config key 'grm.traces_file' ({grm.traces_file})")
    summary = train_grm(
        ns.base_model,
        read_table(ns.pairs),
        read_table(ns.targets),
        read_table(ns.vignettes),
        grm=grm, data=settings.data, seed=int(settings.seed),
        out_dir=ns.out, sft_out_dir=ns.sft_out, traces=traces,
        sft_tracking=Tracking.from_settings(settings.training, ns.sft_live_dir),
        grpo_tracking=Tracking.from_settings(settings.training, ns.live_dir),
    )
    print(f"train-grm: SFT on {summary['sft']['n_rows']} {summary['sft']['source']} traces "
          f"({summary['sft']['seconds']} s), GRPO {grm.grpo.max_steps} steps ({summary['grpo']['seconds']} s); "
          f"wrote {ns.sft_out} and {ns.out}")
    return 0
