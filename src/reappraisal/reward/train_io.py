"""Train one reward-model seed: regression on per-reappraisal z targets.

``AutoModelForSequenceClassification.from_pretrained(base, num_labels=len(dims),
problem_type="regression")`` with ``transformers.Trainer`` (not TRL's
RewardTrainer, which is Bradley–Terry only). Input: the model card's prompt
(:mod:`.prompts`) truncated at ``max_length``; target: the reappraisal's mean
z per rating dimension; loss: MSE over the rated entries (an unrated
dimension is masked, not imputed). The seed sets the head's initialisation,
the data order and dropout (``effective seed = config seed + seed``).

Crash safety (:mod:`reappraisal.training`): training runs in
``<out>/../.<name>.work/`` with a Trainer checkpoint every ``save_steps``; a
rerun with the same settings and data resumes from the last complete
checkpoint (a run with different settings or data starts over) and reports
``train_loss`` over the whole run, and ``metrics.json`` lists every training
segment (``segments``; ``train_seconds`` is their total). The work folder is
locked for the whole stage: a second run of the same seed waits for the
first. The finished model is written to a temporary directory and renamed
into place, so ``<out>`` exists only when complete; the work directory is
removed afterwards.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Sequence

import numpy as np

from reappraisal.atomic import write_json
from reappraisal.settings import RewardSettings
from reappraisal.errors import ConfigError
from reappraisal.training.batches import pad_right
from reappraisal.training.length_parts import classifier_parts
from reappraisal.training.run import finished_model, run_training
from reappraisal.training.settings import checkpointing_args, schedule_args, set_cpu_threads, use_bf16
from reappraisal.training.tracking import OFF, Tracking
from reappraisal.training.work_dir import open_work_dir, remove_stale_temporaries, work_dir_beside

from .base_model import load_base
from .dataset import Examples, examples_for_split, pairs_for_split
from .prompts import encode_prompts, format_prompts
from .trainer_command import trainer_inputs

log = logging.getLogger("reappraisal.reward.train_io")


@dataclass(frozen=True)
class RewardTrainConfig:
    """Training settings: the ``reward`` config section; no defaults here (the schema has them).

    Build it with :meth:`from_settings` from the ``reward`` settings (whose
    defaults are ``workflow/schemas/config.schema.yaml``'s).
    """

    max_length: int
    learning_rate: float
    num_train_epochs: float
    per_device_train_batch_size: int
    per_device_eval_batch_size: int
    gradient_accumulation_steps: int
    weight_decay: float
    warmup_ratio: float
    lr_scheduler_type: str
    max_grad_norm: float
    save_steps: int
    save_total_limit: int
    eval_steps: int
    logging_steps: int
    early_stopping_patience: int
    bf16: str | bool
    gradient_checkpointing: bool
    cpu_threads: int | None

    @classmethod
    def from_settings(cls, reward: RewardSettings) -> "RewardTrainConfig":
        """The training settings of the ``reward`` settings."""
        return cls(**{f.name: getattr(reward, f.name) for f in fields(cls)})


def masked_mse(logits, labels):
    """Mean squared error over the entries of ``labels`` that are not NaN (unrated dimensions)."""
    squares, count = masked_squared_errors(logits, labels)
    return squares if count == 0 else squares / count  # no entry: a zero that keeps the graph


def masked_squared_errors(logits, labels):
    """``(sum of squared errors, number of entries)`` over the entries of ``labels`` that are not NaN."""
    import torch

    logits = logits.float()
    labels = labels.to(logits.device, torch.float32)
    mask = ~torch.isnan(labels)
    diff = (logits - torch.nan_to_num(labels)) * mask
    return (diff**2).sum(), int(mask.sum())


def _torch_dataset(ids: list[list[int]], targets: np.ndarray):
    import torch

    class _DS(torch.utils.data.Dataset):
        def __len__(self):
            return len(ids)

        def __getitem__(self, i):
            return {"input_ids": ids[i], "labels": targets[i]}

    return _DS()


def _collator(pad_id: int):
    import torch

    def collate(rows):
        batch = pad_right([r["input_ids"] for r in rows], pad_id)
        batch["labels"] = torch.tensor(np.stack([r["labels"] for r in rows]), dtype=torch.float32)
        return batch

    return collate


def _trainer_class():
    from transformers import Trainer

    class RegressionTrainer(Trainer):
        """Trainer whose loss is :func:`masked_mse` (a per-batch mean: the Trainer scales it for accumulation)."""

        loss_is_scaled_for_ga = False

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            labels = inputs.pop("labels")
            parts = None
            if model.training and not return_outputs and "attention_mask" in inputs:
                parts = classifier_parts(self, model, inputs)
            if parts is None:
                outputs = model(**inputs)
                loss = masked_mse(outputs.logits, labels)
                return (loss, outputs) if return_outputs else loss
            # the batch in length-sorted parts, each trimmed to its longest row and read after the rows' common
            # prefix (run once): the batch's mean, summed by part
            count = int((~labels.isnan()).sum())
            squares = 0
            for part in parts:
                rows = part.pop("rows")
                squares = squares + masked_squared_errors(model(**part).logits, labels[rows])[0]
            return squares if count == 0 else squares / count

    return RegressionTrainer


def training_arguments(cfg: RewardTrainConfig, output_dir: str | Path, *, seed: int, bf16: bool, use_cpu: bool,
                       tracking: Tracking) -> dict:
    """Keyword arguments of ``transformers.TrainingArguments`` for one seed (checkpointing, reporting, schedule,
    evaluation)."""
    early = cfg.early_stopping_patience > 0
    return dict(
        **checkpointing_args(output_dir, seed=seed, save_steps=cfg.save_steps,
                             save_total_limit=cfg.save_total_limit, bf16=bf16, use_cpu=use_cpu,
                             activation_checkpointing=cfg.gradient_checkpointing, tracking=tracking),
        **schedule_args(cfg),
        per_device_eval_batch_size=cfg.per_device_eval_batch_size,
        eval_strategy="steps",
        eval_steps=cfg.save_steps if early else cfg.eval_steps,
        load_best_model_at_end=early,
        metric_for_best_model="eval_loss" if early else None,
        greater_is_better=False if early else None,
        logging_steps=cfg.logging_steps,
        data_seed=seed,
        remove_unused_columns=False,
        dataloader_num_workers=0,
        label_names=["labels"],
        disable_tqdm=False,
    )


def _data_record(train: Examples, val: Examples, primary_dimension: str, *, train_trunc: int, val_trunc: int) -> dict:
    """What a seed was trained and validated on (part of its metrics.json)."""
    return {
        "dimensions": train.dimensions,
        "primary_dimension": primary_dimension,
        "n_train": len(train),
        "n_val": len(val),
        "n_train_dropped_unrated": train.n_dropped_unrated,
        "n_train_truncated": int(train_trunc),
        "n_val_truncated": int(val_trunc),
        "train_author_types": train.author_types,
    }


def train_reward_model(
    *,
    base: str,
    train: Examples,
    val: Examples,
    val_pairs,
    seed: int,
    global_seed: int,
    out_dir: str | Path,
    cfg: RewardTrainConfig,
    primary_dimension: str,
    callbacks: Sequence = (),
    tracking: Tracking = OFF,
) -> dict:
    """Train (or resume) one seed and write ``out_dir`` atomically; return its validation figures. ``tracking``:
    where its logged steps are reported (:mod:`reappraisal.training.tracking`)."""
    import torch
    from transformers import EarlyStoppingCallback, TrainingArguments

    from .card import write_model_card
    from .validation import validation_figures

    out_dir = Path(out_dir)
    dims = train.dimensions
    set_cpu_threads(cfg.cpu_threads, use_cpu=not torch.cuda.is_available())
    effective_seed = int(global_seed) + int(seed)
    t0 = time.time()
    tokenizer, model = load_base(base, len(dims), effective_seed)
    pad_id = model.config.pad_token_id
    train_ids, train_trunc = encode_prompts(tokenizer, format_prompts(train.scenarios, train.reappraisals), cfg.max_length)
    val_ids, val_trunc = encode_prompts(tokenizer, format_prompts(val.scenarios, val.reappraisals), cfg.max_length)
    if train_trunc:
        log.warning("%d of %d training prompts exceed max_length=%d and lose their end", train_trunc, len(train), cfg.max_length)

    bf16 = use_bf16(cfg.bf16, where="config key 'reward.bf16'")
    spec = {
        "base": str(base),
        "seed": int(seed),
        "effective_seed": effective_seed,
        "config": asdict(cfg),
        "bf16": bf16,
        "train_fingerprint": train.fingerprint(),
        "val_fingerprint": val.fingerprint(),
    }
    # locked from before the leftovers of a killed run are removed until the work folder is: a second
    # run of this seed (e.g. a rerun while an orphaned one still trains) waits for the first
    with open_work_dir(work_dir_beside(out_dir), spec) as work:
        remove_stale_temporaries(out_dir)

        early = cfg.early_stopping_patience > 0
        args = TrainingArguments(**training_arguments(cfg, work.path, seed=effective_seed, bf16=bf16,
                                                      use_cpu=not torch.cuda.is_available(), tracking=tracking))
        cbs = list(callbacks)
        if early:
            cbs.append(EarlyStoppingCallback(early_stopping_patience=cfg.early_stopping_patience))
        trainer = _trainer_class()(
            model=model,
            args=args,
            train_dataset=_torch_dataset(train_ids, train.targets),
            eval_dataset=_torch_dataset(val_ids, val.targets),
            data_collator=_collator(pad_id),
            callbacks=cbs,
        )
        result = run_training(trainer, work, where=f"reward model seed {seed}", tracking=tracking)

        with finished_model(trainer, result, work, out_dir, tokenizer=tokenizer) as tmp:
            # validation figures from the saved artifact, loaded back as every consumer will load it
            figures = validation_figures(
                tmp,
                val=val,
                val_pairs=val_pairs,
                primary_dimension=primary_dimension,
                max_length=cfg.max_length,
                batch_size=cfg.per_device_eval_batch_size,
            )
            summary = {
                "seed": int(seed),
                "effective_seed": effective_seed,
                "base": str(base),
                **_data_record(train, val, primary_dimension, train_trunc=train_trunc, val_trunc=val_trunc),
                "global_steps": result.global_step,
                **result.record(),  # resumed_from, segments, train_seconds (the total over every segment)
                "train_loss": result.train_loss,
                "bf16": bf16,
                "device": str(trainer.args.device),
                "config": asdict(cfg),
                "train_fingerprint": train.fingerprint(),
                "validation": figures,
            }
            write_json(summary, tmp / "metrics.json")
            write_json(result.log_history, tmp / "training_log.json")
            write_model_card(tmp / "README.md", summary)
    log.info("seed %s: wrote %s in %.1fs", seed, out_dir, time.time() - t0)
    return summary


def cli_main(argv: Sequence[str] | None = None) -> int:
    """``reappraisal train-reward-model``: one seed, from the processed tables to a model directory."""
    inputs = trainer_inputs("reappraisal train-reward-model", cli_main.__doc__, argv,
                            more=lambda p: p.add_argument("--seed", type=int, required=True))
    a, settings, dims = inputs.args, inputs.settings, inputs.dimensions
    seeds = list(settings.reward.seeds)
    if a.seed not in seeds:
        raise ConfigError(f"seed {a.seed} is not among reward.seeds {seeds}", where="--seed")
    train = examples_for_split(inputs.targets, inputs.vignettes, "train", dims, where=a.targets)
    val = examples_for_split(inputs.targets, inputs.vignettes, "val", dims, where=a.targets)
    summary = train_reward_model(
        base=a.base_model, train=train, val=val, val_pairs=pairs_for_split(inputs.pairs, "val"), seed=a.seed,
        global_seed=int(settings.seed), out_dir=a.out, cfg=RewardTrainConfig.from_settings(settings.reward),
        primary_dimension=inputs.primary, tracking=inputs.tracking,
    )
    acc = (summary["validation"].get("pairwise") or {}).get("accuracy")
    print(f"seed {a.seed}: val pairwise accuracy {acc}, {summary['train_seconds']}s")
    return 0
