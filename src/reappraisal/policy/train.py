"""GRPO training of one policy arm (thin wiring around TRL's GRPOTrainer).

``train_policy`` turns the ``policy`` config section into a ``GRPOConfig``
(:func:`grpo_settings`), builds the prompt dataset from the train pool's
vignettes, wraps the committee (:class:`~reappraisal.policy.reward_adapter.CommitteeReward`)
as the only reward function and trains. Checkpoints (model, optimizer,
scheduler, RNG and trainer state) go to a work directory every
``save_steps`` steps; a rerun resumes from the last one. On success the final
model is moved into place, the per-step log and the health verdict are written
next to it, and the work directory is removed.

Outputs of arm ``<arm>``: ``results/policies/<arm>/model/`` (weights +
tokenizer), ``training_log.csv`` and ``health.json``. An external arm (a
checkpoint trained elsewhere) gets the same three paths: ``model/EXTERNAL.json``
pointing at the checkpoint, a log without rows and a ``health.json`` saying it
was not trained here.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from reappraisal.errors import ConfigError, PipelineInputError

from .arms import ArmSpec, arm_spec
from .committee import FormatGate
from .health import HealthThresholds, health_verdict, training_log_rows
from .prompts import prompt_rows
from .reward_adapter import CommitteeReward, GRMScorer, RMScorer


def set_cpu_threads(policy: Mapping[str, Any]) -> None:
    """Apply ``policy.cpu_threads`` (torch intra-op threads on CPU runs; null keeps torch's default)."""
    n = policy.get("cpu_threads")
    if n and policy.get("use_cpu"):
        import torch

        torch.set_num_threads(int(n))


def format_gate(policy: Mapping[str, Any]) -> FormatGate:
    g = policy.get("format_gate") or {}
    return FormatGate(max_sentences=int(g.get("max_sentences", 2)), penalty=float(g.get("penalty", -3.0)))


def grpo_settings(policy: Mapping[str, Any], *, seed: int, output_dir: str | Path) -> dict[str, Any]:
    """Keyword arguments of ``trl.GRPOConfig`` for the ``policy`` config section.

    The paper preset gives the model card's settings (lr 8e-6, β 0.04, 12
    generations, 500 steps, bf16); β must be > 0 (the config validation
    refuses anything else, see :func:`reappraisal.config.validate_config`).
    """
    beta = float(policy["beta"])
    if beta <= 0:
        raise ConfigError(
            f"beta must be > 0 (got {beta}): without a KL penalty GRPO drifts freely from the reference model "
            "and reward-hacks the committee",
            where="config key 'policy.beta'",
        )
    precision = policy.get("precision", "fp32")
    vllm = policy.get("vllm") or {}
    kwargs: dict[str, Any] = dict(
        output_dir=str(output_dir),
        learning_rate=float(policy["lr"]),
        beta=beta,
        num_generations=int(policy["num_generations"]),
        max_completion_length=int(policy["max_completion_length"]),
        per_device_train_batch_size=int(policy["per_device_train_batch_size"]),
        gradient_accumulation_steps=int(policy.get("gradient_accumulation_steps", 1)),
        max_steps=int(policy["max_steps"]),
        save_strategy="steps",
        save_steps=int(policy["save_steps"]),
        save_total_limit=int(policy.get("save_total_limit", 2)),
        logging_steps=1,
        report_to="none",
        seed=int(seed),
        temperature=float(policy.get("temperature", 1.0)),
        top_p=float(policy.get("top_p", 1.0)),
        warmup_steps=int(policy.get("warmup_steps", 0)),
        lr_scheduler_type=str(policy.get("lr_scheduler_type", "constant")),
        max_grad_norm=float(policy.get("max_grad_norm", 1.0)),
        bf16=precision == "bf16",
        use_cpu=bool(policy.get("use_cpu", False)),
        activation_checkpointing=bool(policy.get("gradient_checkpointing", False)),
        model_init_kwargs={"dtype": "bfloat16" if precision == "bf16" else "float32"},
        remove_unused_columns=False,
        log_completions=False,
        disable_tqdm=True,
    )
    if vllm.get("enabled"):
        kwargs.update(
            use_vllm=True,
            vllm_mode=str(vllm.get("mode", "colocate")),
            vllm_gpu_memory_utilization=float(vllm.get("gpu_memory_utilization", 0.3)),
        )
    return kwargs


def check_batch_fits(policy: Mapping[str, Any], n_prompts: int, world_size: int) -> None:
    """Refuse a batch layout GRPO cannot fill from ``n_prompts`` prompts.

    One generation batch holds ``per_device × processes × accumulation``
    completions, i.e. that many / ``num_generations`` distinct prompts; TRL's
    sampler drops incomplete batches, so a batch larger than the prompt set
    would never be drawn and training would silently do nothing.
    """
    g = int(policy["num_generations"])
    per_gen = int(policy["per_device_train_batch_size"]) * world_size * int(policy.get("gradient_accumulation_steps", 1))
    if per_gen % g:
        raise ConfigError(
            f"per_device_train_batch_size × processes × gradient_accumulation_steps = {per_gen} is not a multiple of "
            f"num_generations = {g}",
            where="config key 'policy.per_device_train_batch_size'",
        )
    if per_gen // g > n_prompts:
        raise ConfigError(
            f"one generation batch needs {per_gen // g} distinct prompts but the train pool has {n_prompts} vignettes",
            where="config key 'policy.per_device_train_batch_size'",
        )


def last_checkpoint(work_dir: str | Path) -> str | None:
    from transformers.trainer_utils import get_last_checkpoint

    work_dir = Path(work_dir)
    return get_last_checkpoint(str(work_dir)) if work_dir.is_dir() else None


def train_policy(
    *,
    arm: ArmSpec,
    policy: Mapping[str, Any],
    model_dir: str | Path,
    vignettes,
    out_dir: str | Path,
    rm_scorer: RMScorer | None,
    grm_scorer: GRMScorer | None,
    seed: int,
    work_dir: str | Path | None = None,
    callbacks: Sequence[Any] = (),
) -> dict[str, Any]:
    """Train ``arm`` from ``model_dir``; write ``out_dir/{model/, training_log.csv, health.json}``.

    ``vignettes`` is the data contract's table; prompts are its ``train``
    pool. Resumes from the last checkpoint in ``work_dir`` (default
    ``out_dir/checkpoints``) when there is one. Returns the health verdict.
    """
    import pandas as pd
    from accelerate import PartialState
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from reappraisal.atomic import atomic_path, write_json

    if not arm.trained:
        raise PipelineInputError(f"arm {arm.name!r} is external ({arm.external}); it is not trained here", where="policy.arms")
    out_dir = Path(out_dir)
    work_dir = Path(work_dir) if work_dir is not None else out_dir / "checkpoints"
    pool = vignettes[vignettes["pool"] == "train"].sort_values("vignette_id")
    rows = prompt_rows(pool.to_dict("records"))
    if not rows:
        raise PipelineInputError("no vignette of pool 'train'", where="vignettes")
    state = PartialState()
    check_batch_fits(policy, len(rows), state.num_processes)

    settings = grpo_settings(policy, seed=seed, output_dir=work_dir)
    args = GRPOConfig(**settings)
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
    reward = CommitteeReward(
        weights=arm.weights, gate=format_gate(policy), num_generations=args.num_generations,
        rm_scorer=rm_scorer, grm_scorer=grm_scorer, tokenizer=tokenizer,
    )
    trainer = GRPOTrainer(
        model=str(model_dir), reward_funcs=[reward], args=args,
        train_dataset=Dataset.from_list(rows), processing_class=tokenizer, callbacks=list(callbacks),
    )
    resume = last_checkpoint(work_dir)
    if resume and state.is_main_process:
        print(f"resuming {arm.name} from {resume}", flush=True)
    t0 = time.perf_counter()
    trainer.train(resume_from_checkpoint=resume)
    seconds = time.perf_counter() - t0

    final_tmp = work_dir / "final"
    trainer.save_model(str(final_tmp))  # every process calls it (DeepSpeed gathers); the main one writes
    state.wait_for_everyone()
    health: dict[str, Any] = {}
    if state.is_main_process:
        tokenizer.save_pretrained(str(final_tmp))
        log_rows = training_log_rows(trainer.state.log_history)
        thresholds = HealthThresholds.from_config(policy.get("health"))
        health = health_verdict(log_rows, thresholds)
        health.update(
            arm=arm.name, trained_here=True, weights=vars(arm.weights).copy() if arm.weights else None,
            format_gate={"max_sentences": reward.gate.max_sentences, "penalty": reward.gate.penalty},
            base_model=str(model_dir), resumed_from=resume, train_seconds=round(seconds, 2),
            global_step=int(trainer.state.global_step),
            grpo={k: settings[k] for k in ("learning_rate", "beta", "num_generations", "max_steps",
                                            "max_completion_length", "per_device_train_batch_size", "bf16")},
            num_processes=state.num_processes,
        )
        model_out = out_dir / "model"
        if model_out.exists():
            shutil.rmtree(model_out)
        model_out.parent.mkdir(parents=True, exist_ok=True)
        os.replace(final_tmp, model_out)
        with atomic_path(out_dir / "training_log.csv", suffix=".csv") as tmp:
            pd.DataFrame(log_rows).to_csv(tmp, index=False)
        write_json(health, out_dir / "health.json")
        shutil.rmtree(work_dir, ignore_errors=True)
    state.wait_for_everyone()
    return health


def external_health(arm: ArmSpec) -> dict[str, Any]:
    """The health record of an external arm: not trained here, where its checkpoint is."""
    return {
        "arm": arm.name,
        "trained_here": False,
        "verdict": "not_trained_here",
        "checkpoint": arm.external,
        "note": "checkpoint trained elsewhere; evaluated without training, so no training log or health checks",
    }


def record_external(arm: ArmSpec, out_dir: str | Path) -> dict[str, Any]:
    """Outputs of an external arm: ``model/EXTERNAL.json`` (pointer), an empty log, ``health.json``.

    Downstream stages resolve the pointer with
    :func:`reappraisal.policy.arms.resolve_model_dir`.
    """
    import pandas as pd

    from reappraisal.atomic import atomic_dir, atomic_path, write_json

    from .arms import EXTERNAL_POINTER
    from .health import LOG_COLUMNS

    out_dir = Path(out_dir)
    with atomic_dir(out_dir / "model") as tmp:
        (tmp / EXTERNAL_POINTER).write_text(json.dumps({"arm": arm.name, "checkpoint": arm.external}, indent=2) + "\n")
    with atomic_path(out_dir / "training_log.csv", suffix=".csv") as tmp:
        pd.DataFrame(columns=["step", *LOG_COLUMNS]).to_csv(tmp, index=False)
    health = external_health(arm)
    write_json(health, out_dir / "health.json")
    return health


def build_scorers(arm: ArmSpec, params: Mapping[str, Any], *, rm_dirs, grm_dir, targets, vignettes):
    """The real judges an arm needs (lazy imports; each process puts them on its own device).

    Each judge runs with the settings it is evaluated with: the ensemble with
    the ``reward_model`` section (``ensemble.penalty``, ``ensemble.lam``,
    ``ensemble.batch_size``, ``max_length``), the GRM with the ``grm`` section
    (``scorer_mode``, ``engine``, ``max_new_tokens``, ``batch_size``), its
    references being the median human train-split reappraisal on
    ``data.primary_dimension``.
    """
    from accelerate import PartialState

    device = PartialState().device
    rm = grm = None
    if arm.weights.uses_rm:
        from reappraisal.reward.ensemble import EnsembleScorer

        if not rm_dirs:
            raise PipelineInputError("the arm weights the reward-model ensemble but no --rm-dirs were given", where=arm.name)
        rm_cfg = params.get("reward_model") or {}
        ens = rm_cfg.get("ensemble") or {}
        rm = EnsembleScorer.from_dirs(
            list(rm_dirs), penalty=str(ens.get("penalty", "std")), lam=float(ens.get("lam", 0.5)),
            batch_size=int(ens.get("batch_size", 32)), max_length=int(rm_cfg.get("max_length", 512)), device=device,
        )
    if arm.weights.uses_grm:
        from reappraisal.grm.scorer import GRMScorer as RealGRM, median_references

        if not grm_dir:
            raise PipelineInputError("the arm weights the GRM but no --grm-dir was given", where=arm.name)
        grm_cfg = params.get("grm") or {}
        dim = (params.get("data") or {}).get("primary_dimension", "effectiveness")
        refs = median_references(targets, vignettes, dim)
        grm = RealGRM.from_dir(
            grm_dir, references=refs, max_new_tokens=int(grm_cfg.get("max_new_tokens", 512)),
            batch_size=int(grm_cfg.get("batch_size", 32)), mode=str(grm_cfg.get("scorer_mode", "generate")),
            engine=str(grm_cfg.get("engine", "hf")), device=device,
        )
    return rm, grm


def cli_main(argv: Sequence[str]) -> int:
    """``train-policy``: train one arm, or record an external arm's checkpoint (see module doc)."""
    import pandas as pd

    from reappraisal.params import parse_params

    ap = argparse.ArgumentParser(prog="reappraisal train-policy", description=__doc__.splitlines()[0])
    ap.add_argument("--arm", required=True)
    ap.add_argument("--model-dir", help="base policy (demo: the warm-started tiny model); not for external arms")
    ap.add_argument("--vignettes", help="prompts: the train pool's vignettes")
    ap.add_argument("--targets", help="for the GRM's reference reappraisals")
    ap.add_argument("--rm-dirs", nargs="*", default=[])
    ap.add_argument("--grm-dir", default=None)
    ap.add_argument("--out-dir", required=True, help="results/policies/<arm>")
    ap.add_argument("--params", default="{}")
    args = ap.parse_args(argv)
    params = parse_params(args.params)
    policy = params.get("policy") or {}
    set_cpu_threads(policy)
    arm = arm_spec(policy, args.arm)
    if not arm.trained:
        health = record_external(arm, args.out_dir)
        print(json.dumps({"arm": arm.name, "verdict": health["verdict"], "checkpoint": arm.external}))
        return 0
    for flag, value in (("--model-dir", args.model_dir), ("--vignettes", args.vignettes), ("--targets", args.targets)):
        if not value:
            raise PipelineInputError(f"{flag} is required to train arm {arm.name!r}", where="train-policy")
    vignettes = pd.read_parquet(args.vignettes)
    targets = pd.read_parquet(args.targets)
    rm, grm = build_scorers(arm, params, rm_dirs=args.rm_dirs, grm_dir=args.grm_dir, targets=targets, vignettes=vignettes)
    health = train_policy(
        arm=arm, policy=policy, model_dir=args.model_dir, vignettes=vignettes, out_dir=args.out_dir,
        rm_scorer=rm, grm_scorer=grm, seed=int(params.get("seed", 0)),
    )
    if health:
        print(json.dumps({"arm": arm.name, "verdict": health["verdict"], "failed": health["failed"]}))
    return 0
