"""GRPO training of one policy arm (thin wiring around TRL's GRPOTrainer).

``train_policy`` turns the ``policy`` settings (:class:`~reappraisal.settings.PolicySettings`,
built once by the command) into a ``GRPOConfig`` (:func:`grpo_settings`),
builds the prompt dataset from the train pool's vignettes, wraps the committee (:class:`~reappraisal.policy.reward_adapter.CommitteeReward`)
as the only reward function and trains. Checkpoints (model, optimizer,
scheduler, RNG and trainer state) go to a work directory every
``save_steps`` steps; a rerun with the same settings resumes from the last
complete one and never trains past ``max_steps`` (:mod:`reappraisal.training`).
On success the final model is moved into place, the per-step log and the
health verdict are written next to it, and the work directory is removed.
The main process holds the work directory's lock (beside it:
``.checkpoints.lock``) from before it touches anything until then, so a
second run of the arm waits for the first; ``health.json`` lists every
training segment (``segments``; ``train_seconds`` is their total).

Several processes (``accelerate launch``): the ``GRPOConfig`` is built before
anything else touches the distributed state, so every check sees every
process; a batch layout the prompts cannot fill is refused before training.

Outputs of arm ``<arm>``: ``results/policy/<arm>/model/`` (weights +
tokenizer), ``training_log.csv`` and ``health.json``. An external arm (a
checkpoint trained elsewhere) gets the same three paths: ``model/EXTERNAL.json``
pointing at the checkpoint, a log without rows and a ``health.json`` saying it
was not trained here.
"""

from __future__ import annotations

import argparse
import contextlib
import json
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from reappraisal.config import check_kl_beta
from reappraisal.errors import ConfigError, PipelineInputError
from reappraisal.settings import PolicySettings, Settings, as_config
from reappraisal.training.run import finished_model, run_training
from reappraisal.training.settings import checkpointing_args, model_dtype, set_cpu_threads, use_bf16
from reappraisal.training.tracking import LIVE_DIR_HELP, OFF, TRACKING_KEYS, Tracking
from reappraisal.training.vllm_colocate import vllm_settings
from reappraisal.training.work_dir import fingerprint, open_work_dir, remove_stale_temporaries

from .arms import ArmInstance, ArmSpec, arm_instance
from .proxy_scorers import build_scorers, judge_settings
from .committee import FormatGate
from .gold import GoldQualityLog, check_gold_scorer
from .health import health_verdict, training_log_rows
from .prompts import prompt_rows
from .reward_adapter import CommitteeReward, GRMScorer, RMScorer

#: Builds the judges on a device: ``scorers(device) -> (ensemble or None, GRM or None)``.
ScorerFactory = Callable[[Any], "tuple[RMScorer | None, GRMScorer | None]"]


def grpo_settings(policy: PolicySettings, *, seed: int, output_dir: str | Path,
                  bf16_capable: bool | None = None, arm_beta: float | None = None,
                  tracking: Tracking = OFF) -> dict[str, Any]:
    """Keyword arguments of ``trl.GRPOConfig`` for the ``policy`` settings.

    The paper preset gives the model card's settings (lr 8e-6, β 0.04, 12
    generations, 500 steps, bf16); β must be > 0. ``bf16_capable`` lays the
    settings out for another machine (default: this one's GPU decides
    whether ``bf16: true`` is possible). ``arm_beta``: the arm's own KL
    coefficient (:class:`~reappraisal.policy.arms.ArmSpec`), which may be 0
    (the β = 0 ablation an arm declares). ``tracking``: where the logged steps are reported (the
    committee's figures among them: TRL logs them with the loss).
    """
    bf16 = use_bf16(policy.bf16, where="config key 'policy.bf16'", capable=bf16_capable)
    kwargs: dict[str, Any] = dict(
        **checkpointing_args(output_dir, seed=seed, save_steps=policy.save_steps,
                             save_total_limit=policy.save_total_limit, bf16=bf16, use_cpu=policy.use_cpu,
                             activation_checkpointing=policy.gradient_checkpointing, tracking=tracking),
        learning_rate=float(policy.learning_rate),
        beta=check_kl_beta(policy.beta, where="config key 'policy.beta'") if arm_beta is None else float(arm_beta),
        num_generations=int(policy.num_generations),
        max_completion_length=int(policy.max_completion_length),
        per_device_train_batch_size=int(policy.per_device_train_batch_size),
        gradient_accumulation_steps=int(policy.gradient_accumulation_steps),
        max_steps=int(policy.max_steps),
        logging_steps=1,
        temperature=float(policy.temperature),
        top_p=float(policy.top_p),
        warmup_steps=int(policy.warmup_steps),
        lr_scheduler_type=str(policy.lr_scheduler_type),
        max_grad_norm=float(policy.max_grad_norm),
        model_init_kwargs={"dtype": model_dtype(bf16)},
        # The committee is the reward; a configured gold scorer is logged with weight 0 (reappraisal.policy.gold).
        reward_weights=[1.0, 0.0] if policy.gold_scorer else None,
        remove_unused_columns=False,
        log_completions=False,
        disable_tqdm=True,
    )
    # TRL's vLLM generation when policy.vllm is on; the project's decoder then stands aside
    # (reappraisal.policy.generation.decoder_applies is false under use_vllm)
    kwargs.update(vllm_settings(policy.vllm, max_completion_length=int(policy.max_completion_length)))
    return kwargs


def check_batch_fits(policy: PolicySettings, n_prompts: int, world_size: int) -> None:
    """Refuse a batch layout GRPO cannot fill from ``n_prompts`` prompts.

    One generation batch holds ``per_device × processes × accumulation``
    completions, i.e. that many / ``num_generations`` distinct prompts; TRL's
    sampler drops incomplete batches, so a batch larger than the prompt set
    would never be drawn and training would silently do nothing.
    """
    g = int(policy.num_generations)
    per_gen = int(policy.per_device_train_batch_size) * world_size * int(policy.gradient_accumulation_steps)
    layout = (f"per_device_train_batch_size {policy.per_device_train_batch_size} × {world_size} process(es) × "
              f"gradient_accumulation_steps {policy.gradient_accumulation_steps} = {per_gen} completions")
    if per_gen % g:
        raise ConfigError(
            f"{layout} is not a multiple of num_generations = {g}: the batch cannot hold whole prompt groups",
            where="config key 'policy.per_device_train_batch_size'",
        )
    if per_gen // g > n_prompts:
        raise ConfigError(
            f"{layout} need {per_gen // g} distinct prompts per batch but the train pool has {n_prompts} "
            "vignettes: GRPO could not fill one batch and would train no step",
            where="config key 'policy.per_device_train_batch_size'",
        )


def train_policy(
    *,
    arm: ArmSpec | ArmInstance,
    policy: PolicySettings,
    model_dir: str | Path,
    vignettes,
    out_dir: str | Path,
    scorers: ScorerFactory,
    seed: int,
    work_dir: str | Path | None = None,
    callbacks: Sequence[Any] = (),
    judges_spec: Mapping[str, Any] | None = None,
    rewards_log: str | Path | None = None,
    preset: str = "demo",
    data_source: str | None = "bundled",
    tracking: Tracking = OFF,
) -> dict[str, Any]:
    """Train ``arm`` from ``model_dir``; write ``out_dir/{model/, training_log.csv, health.json}``.

    ``vignettes`` is the data contract's table; prompts are its ``train``
    pool. ``scorers(device)`` builds the judges once the device is known.
    Resumes from the last complete checkpoint in ``work_dir`` (default
    ``out_dir/checkpoints``) when it was made with the same settings, prompts
    and judges (``judges_spec`` describes the judges for that comparison).
    ``rewards_log``: see :class:`~reappraisal.policy.reward_adapter.CommitteeReward`.
    ``policy.gold_scorer`` (checked against ``preset`` and its ``data_source``) adds a log-only gold
    reward function (:mod:`reappraisal.policy.gold`). ``tracking``: where every logged step (loss, KL, the
    committee's figures, gold: what ``training_log.csv`` records) is reported while it trains.
    ``arm``: an instance (the arm and its policy seed; ``seed`` is then the config seed, and GRPO trains
    with config seed + policy seed), or an arm (trained with ``seed`` as given).
    Returns the health verdict (on the main process; ``{}`` on the others).
    """
    import pandas as pd
    from accelerate import PartialState
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from .epoch_sampler import epoch_ordered
    from .generation import decoder_applies, with_project_decoder
    from .shared_prompts import with_shared_prompts
    from .snapshots import SNAPSHOT_WORK_DIR, STEPS_DIR, publish_snapshots, snapshot_callback

    from reappraisal.atomic import atomic_path, write_json

    if isinstance(arm, ArmSpec):
        arm = ArmInstance(arm.name, arm, 0)
    instance, arm = arm, arm.arm
    seed = instance.training_seed(seed)
    if not arm.trained:
        raise PipelineInputError(f"arm {arm.name!r} is external ({arm.external}); it is not trained here", where="policy.arms")
    out_dir = Path(out_dir)
    work_dir = Path(work_dir) if work_dir is not None else out_dir / "checkpoints"
    pool = vignettes[vignettes["pool"] == "train"].sort_values("vignette_id")
    rows = prompt_rows(pool.to_dict("records"))
    if not rows:
        raise PipelineInputError("no vignette of pool 'train'", where="vignettes")
    gold_scorer = policy.gold_scorer
    check_gold_scorer(gold_scorer, preset=preset, data_source=data_source)
    beyond = sorted(s for s in policy.snapshot_steps if s > policy.max_steps)
    if beyond:
        raise PipelineInputError(f"steps {beyond} are beyond max_steps {policy.max_steps}: no snapshot there",
                                 where="config key 'policy.snapshot_steps'")
    settings = grpo_settings(policy, seed=seed, output_dir=work_dir, arm_beta=arm.beta, tracking=tracking)
    args = GRPOConfig(**settings)  # first: it sets up the distributed state every later check reads
    state = PartialState()
    check_batch_fits(policy, len(rows), state.num_processes)

    # where it reports is no part of a run: another reporter resumes the same checkpoints
    grpo_spec = {k: v for k, v in settings.items() if k != "output_dir" and k not in TRACKING_KEYS}
    spec = {"arm": instance.name, "reward": arm.reward, "weights": vars(arm.weights), "grpo": grpo_spec,
            "model_dir": str(model_dir), "prompts": fingerprint(rows), "format_gate": as_config(policy.format_gate),
            "judges": judges_spec or {}, "num_processes": state.num_processes,
            "snapshot_steps": sorted(int(s) for s in policy.snapshot_steps),
            # whose sampler drew the completions (a checkpoint of the other one is not this run's)
            "decoder": "project" if decoder_applies(args, is_vlm=False) else "trl"}
    with contextlib.ExitStack() as held:
        if state.is_main_process:  # the lock is held until the outputs are in place and the work folder is gone
            # several processes cannot all be told that an orphan finished the run: they train again
            work = held.enter_context(open_work_dir(work_dir, spec, take_finished=state.num_processes == 1))
            remove_stale_temporaries(out_dir / "model", out_dir / "training_log.csv", out_dir / "health.json")
        state.wait_for_everyone()
        if not state.is_main_process:
            work = open_work_dir(work_dir, spec, main_process=False)
        tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
        rm_scorer, grm_scorer = scorers(args.device)
        reward = CommitteeReward(
            weights=arm.weights, gate=FormatGate.from_settings(policy.format_gate), num_generations=args.num_generations,
            rm_scorer=rm_scorer, grm_scorer=grm_scorer, tokenizer=tokenizer, rewards_log=rewards_log,
            log_from_step=int(work.state["global_step"]) if work.resume and work.state else 0,
        )
        reward_funcs: list[Any] = [reward]
        if gold_scorer:
            reward_funcs.append(GoldQualityLog(tokenizer=tokenizer))  # weight 0 (grpo_settings): logged, never optimized
        kept = ([snapshot_callback(policy.snapshot_steps, work.path / SNAPSHOT_WORK_DIR, tokenizer=tokenizer)]
                if policy.snapshot_steps else [])
        trainer = epoch_ordered(with_project_decoder(with_shared_prompts(GRPOTrainer)))(
            model=str(model_dir), reward_funcs=reward_funcs, args=args,
            train_dataset=Dataset.from_list(rows), processing_class=tokenizer, callbacks=[*callbacks, *kept],
        )
        if work.resume and state.is_main_process:
            print(f"resuming {instance.name} from {work.resume}", flush=True)
        result = run_training(trainer, work, where=f"policy arm {instance.name}", tracking=tracking)

        health: dict[str, Any] = {}
        # every process exports (DeepSpeed gathers); the main one writes the records, then the model goes in place
        with finished_model(trainer, result, work, out_dir / "model", tokenizer=tokenizer,
                            wait_for_everyone=state.wait_for_everyone) as model_tmp:
            if model_tmp is not None:
                log_rows = training_log_rows(result.log_history)
                health = health_verdict(log_rows, policy.health)
                health.update(
                    arm=instance.name, arm_name=arm.name, policy_seed=instance.seed, training_seed=seed,
                    reward=arm.reward, trained_here=True, weights=vars(arm.weights).copy() if arm.weights else None,
                    format_gate={"max_sentences": reward.gate.max_sentences, "penalty": reward.gate.penalty},
                    base_model=str(model_dir), global_step=result.global_step,
                    # every training segment, killed ones too; train_seconds is their total; resumed_from (the
                    # last segment's) stays the checkpoint's path, as before
                    **{**result.record(), "resumed_from": str(work.resume) if work.resume else None},
                    grpo={k: settings[k] for k in ("learning_rate", "beta", "num_generations", "max_steps",
                                                    "max_completion_length", "per_device_train_batch_size", "bf16")},
                    num_processes=state.num_processes,
                )
                with atomic_path(out_dir / "training_log.csv", suffix=".csv") as tmp:
                    pd.DataFrame(log_rows).to_csv(tmp, index=False)
                write_json(health, out_dir / "health.json")
                publish_snapshots(work.path / SNAPSHOT_WORK_DIR, out_dir / STEPS_DIR, policy.snapshot_steps)
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
    from .snapshots import STEPS_DIR, publish_snapshots

    out_dir = Path(out_dir)
    with atomic_dir(out_dir / "model") as tmp:
        (tmp / EXTERNAL_POINTER).write_text(json.dumps({"arm": arm.name, "checkpoint": arm.external}, indent=2) + "\n")
    with atomic_path(out_dir / "training_log.csv", suffix=".csv") as tmp:
        pd.DataFrame(columns=["step", *LOG_COLUMNS]).to_csv(tmp, index=False)
    publish_snapshots(None, out_dir / STEPS_DIR, [])
    health = external_health(arm)
    write_json(health, out_dir / "health.json")
    return health


def cli_main(argv: Sequence[str]) -> int:
    """``train-policy``: train one arm, or record an external arm's checkpoint (see module doc)."""
    from reappraisal.params import parse_params
    from reappraisal.input_tables import read_table

    ap = argparse.ArgumentParser(prog="reappraisal train-policy", description=__doc__.splitlines()[0])
    ap.add_argument("--arm", required=True)
    ap.add_argument("--model-dir", help="base policy (demo: the warm-started tiny model); not for external arms")
    ap.add_argument("--vignettes", help="prompts: the train pool's vignettes")
    ap.add_argument("--targets", help="for the GRM's reference reappraisals")
    ap.add_argument("--rm-dirs", nargs="*", default=[])
    ap.add_argument("--grm-dir", default=None)
    ap.add_argument("--out-dir", required=True, help="results/policy/<arm>")
    ap.add_argument("--params", default="{}")
    ap.add_argument("--live-dir", default=None, help=LIVE_DIR_HELP)
    ap.add_argument("--rewards-log", default=None,
                    help="optional JSON lines: every committee call's global batch (answers, gate, scores, rewards)")
    args = ap.parse_args(argv)
    params = parse_params(args.params)
    settings = Settings.from_params(params)
    policy = settings.policy
    tracking = Tracking.from_settings(settings.training, args.live_dir)
    set_cpu_threads(policy.cpu_threads, use_cpu=policy.use_cpu)
    instance = arm_instance(policy, args.arm)
    arm = instance.arm
    if not arm.trained:
        health = record_external(arm, args.out_dir)
        print(json.dumps({"arm": arm.name, "verdict": health["verdict"], "checkpoint": arm.external}))
        return 0
    for flag, value in (("--model-dir", args.model_dir), ("--vignettes", args.vignettes), ("--targets", args.targets)):
        if not value:
            raise PipelineInputError(f"{flag} is required to train arm {arm.name!r}", where="train-policy")
    vignettes = read_table(args.vignettes, ["vignette_id", "text", "pool"])
    targets = read_table(args.targets)
    judges = judge_settings(arm, reward=settings.reward, grm=settings.grm,
                            primary_dimension=settings.data.primary_dimension if settings.data else None,
                            rm_dirs=args.rm_dirs, grm_dir=args.grm_dir)
    health = train_policy(
        arm=instance, policy=policy, model_dir=args.model_dir, vignettes=vignettes, out_dir=args.out_dir,
        scorers=lambda device: build_scorers(judges, targets=targets, vignettes=vignettes, device=device),
        seed=int(settings.seed), judges_spec=judges, rewards_log=args.rewards_log,
        preset=str(settings.preset), data_source=settings.data.source if settings.data else None, tracking=tracking,
    )
    if health:
        print(json.dumps({"arm": instance.name, "verdict": health["verdict"], "failed": health["failed"]}))
    from accelerate import PartialState

    # Several processes: end their group here, each process's outputs written, not in the interpreter's teardown,
    # where gloo's threads can abort a process after its work is done.
    PartialState().destroy_process_group()
    return 0
