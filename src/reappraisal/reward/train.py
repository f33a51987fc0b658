"""Train one reward-model seed: regression on per-reappraisal z targets.

``AutoModelForSequenceClassification.from_pretrained(base, num_labels=len(dims),
problem_type="regression")`` with ``transformers.Trainer`` (not TRL's
RewardTrainer, which is Bradley–Terry only). Input: the model card's prompt
(:mod:`.prompts`) truncated at ``max_length``; target: the reappraisal's mean
z per rating dimension; loss: MSE over the rated entries (an unrated
dimension is masked, not imputed). The seed sets the head's initialisation,
the data order and dropout (``effective seed = config seed + seed``).

Crash safety: training runs in ``<out>/../.<name>.work/`` with a Trainer
checkpoint every ``save_steps``; a rerun with the same settings and data
resumes from the last complete checkpoint (a run with different settings or
data starts over). The finished model is written to a temporary directory
and renamed into place, so ``<out>`` exists only when complete; the work
directory is removed afterwards.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from reappraisal.atomic import atomic_dir, write_json
from reappraisal.params import parse_params
from reappraisal.errors import ConfigError, PipelineInputError

from .dataset import (
    PAIR_COLUMNS,
    TARGET_COLUMNS,
    VIGNETTE_COLUMNS,
    Examples,
    examples_for_split,
    pairs_for_split,
    read_table,
)
from .prompts import encode_prompts, format_prompts, resolve_pad_token_id

log = logging.getLogger("reappraisal.reward.train")

RUN_SPEC = "RUN_SPEC.json"


@dataclass(frozen=True)
class RewardTrainConfig:
    """Training settings (``reward_model`` section of the config; defaults in the schema)."""

    max_length: int = 512
    learning_rate: float = 1e-5
    num_train_epochs: float = 1.0
    per_device_train_batch_size: int = 8
    per_device_eval_batch_size: int = 16
    gradient_accumulation_steps: int = 1
    weight_decay: float = 0.0
    warmup_ratio: float = 0.0
    lr_scheduler_type: str = "linear"
    max_grad_norm: float = 1.0
    save_steps: int = 50
    save_total_limit: int = 2
    eval_steps: int = 50
    logging_steps: int = 10
    early_stopping_patience: int = 0
    bf16: str | bool = "auto"
    gradient_checkpointing: bool = False
    cpu_threads: int | None = None

    @classmethod
    def from_section(cls, section: dict[str, Any]) -> "RewardTrainConfig":
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in section.items() if k in known})


def use_bf16(setting: str | bool) -> bool:
    """bf16 mixed precision: ``auto`` = on where CUDA supports bf16 (never on CPU)."""
    import torch

    supported = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    if setting == "auto":
        return supported
    if setting and not supported:
        raise ConfigError("bf16 requested but this machine has no bf16-capable GPU", where="config key 'reward_model.bf16'")
    return bool(setting)


def masked_mse(logits, labels):
    """Mean squared error over the entries of ``labels`` that are not NaN (unrated dimensions)."""
    import torch

    logits = logits.float()
    labels = labels.to(logits.device, torch.float32)
    mask = ~torch.isnan(labels)
    if not bool(mask.any()):
        return (logits * 0.0).sum()  # keeps the graph; contributes nothing
    diff = (logits - torch.nan_to_num(labels)) * mask
    return (diff**2).sum() / mask.sum()


def last_complete_checkpoint(work_dir: Path) -> Path | None:
    """The newest ``checkpoint-N`` whose ``trainer_state.json`` was written (it is written last).

    Newer, incomplete checkpoints (a kill during saving) are removed.
    """
    if not work_dir.is_dir():
        return None
    found = []
    for p in work_dir.iterdir():
        if p.is_dir() and p.name.startswith("checkpoint-") and p.name.split("-")[-1].isdigit():
            found.append((int(p.name.split("-")[-1]), p))
    for _, p in sorted(found, reverse=True):
        state = p / "trainer_state.json"
        try:
            json.loads(state.read_text())
            return p
        except (OSError, ValueError):
            log.warning("removing incomplete checkpoint %s", p)
            shutil.rmtree(p, ignore_errors=True)
    return None


def _prepare_work_dir(work_dir: Path, spec: dict) -> Path | None:
    """Keep the work dir (and return its last checkpoint) only if it was made with ``spec``."""
    spec_path = work_dir / RUN_SPEC
    if work_dir.exists():
        try:
            previous = json.loads(spec_path.read_text())
        except (OSError, ValueError):
            previous = None
        if previous != spec:
            log.info("work directory %s was made with other settings or data: starting over", work_dir)
            shutil.rmtree(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    if not spec_path.exists():
        write_json(spec, spec_path)
    return last_complete_checkpoint(work_dir)


def load_base(base: str, n_labels: int, seed: int):
    """Tokenizer and a regression head on the base model (head init depends on ``seed``)."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, set_seed

    from reappraisal.models.base import check_model_location

    location = check_model_location(base, where="reward-model base")
    try:
        tokenizer = AutoTokenizer.from_pretrained(location)
    except (OSError, ValueError) as exc:
        raise PipelineInputError(f"cannot load a tokenizer ({exc.__class__.__name__}: {exc})", where=location) from None
    if tokenizer.pad_token_id is None:
        if tokenizer.eos_token is None:
            raise PipelineInputError(
                "the tokenizer has neither a pad token nor an EOS token; batching needs one", where=location
            )
        log.warning("tokenizer has no pad token: padding with its EOS token %r", tokenizer.eos_token)
        tokenizer.pad_token = tokenizer.eos_token
    set_seed(seed)
    try:
        model = AutoModelForSequenceClassification.from_pretrained(
            location, num_labels=n_labels, problem_type="regression", dtype=torch.float32
        )
    except OSError as exc:
        raise PipelineInputError(f"cannot load the base model ({exc.__class__.__name__}: {exc})", where=location) from None
    model.config.pad_token_id = resolve_pad_token_id(tokenizer, None)
    return tokenizer, model


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
        width = max(len(r["input_ids"]) for r in rows)
        input_ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
        attention = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            n = len(r["input_ids"])
            input_ids[i, :n] = torch.tensor(r["input_ids"], dtype=torch.long)
            attention[i, :n] = 1
        labels = torch.tensor(np.stack([r["labels"] for r in rows]), dtype=torch.float32)
        return {"input_ids": input_ids, "attention_mask": attention, "labels": labels}

    return collate


def _trainer_class():
    from transformers import Trainer

    class RegressionTrainer(Trainer):
        """Trainer whose loss is :func:`masked_mse` (a per-batch mean: the Trainer scales it for accumulation)."""

        loss_is_scaled_for_ga = False

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            labels = inputs.pop("labels")
            outputs = model(**inputs)
            loss = masked_mse(outputs.logits, labels)
            return (loss, outputs) if return_outputs else loss

    return RegressionTrainer


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
) -> dict:
    """Train (or resume) one seed and write ``out_dir`` atomically; return its validation figures."""
    import torch
    from transformers import EarlyStoppingCallback, TrainingArguments

    from .card import write_model_card
    from .validation import validation_figures

    out_dir = Path(out_dir)
    dims = train.dimensions
    if cfg.cpu_threads and not torch.cuda.is_available():
        torch.set_num_threads(int(cfg.cpu_threads))
    effective_seed = int(global_seed) + int(seed)
    t0 = time.time()
    tokenizer, model = load_base(base, len(dims), effective_seed)
    pad_id = model.config.pad_token_id
    train_ids, train_trunc = encode_prompts(tokenizer, format_prompts(train.scenarios, train.reappraisals), cfg.max_length)
    val_ids, val_trunc = encode_prompts(tokenizer, format_prompts(val.scenarios, val.reappraisals), cfg.max_length)
    if train_trunc:
        log.warning("%d of %d training prompts exceed max_length=%d and lose their end", train_trunc, len(train), cfg.max_length)

    bf16 = use_bf16(cfg.bf16)
    spec = {
        "base": str(base),
        "seed": int(seed),
        "effective_seed": effective_seed,
        "config": asdict(cfg),
        "bf16": bf16,
        "train_fingerprint": train.fingerprint(),
        "val_fingerprint": val.fingerprint(),
    }
    work_dir = out_dir.parent / f".{out_dir.name}.work"
    resume = _prepare_work_dir(work_dir, spec)
    if resume is not None:
        log.info("resuming from %s", resume)

    early = cfg.early_stopping_patience > 0
    args = TrainingArguments(
        output_dir=str(work_dir),
        learning_rate=cfg.learning_rate,
        num_train_epochs=cfg.num_train_epochs,
        per_device_train_batch_size=cfg.per_device_train_batch_size,
        per_device_eval_batch_size=cfg.per_device_eval_batch_size,
        gradient_accumulation_steps=cfg.gradient_accumulation_steps,
        weight_decay=cfg.weight_decay,
        warmup_steps=float(cfg.warmup_ratio),  # a float in [0, 1) is a ratio of the total steps
        lr_scheduler_type=cfg.lr_scheduler_type,
        max_grad_norm=cfg.max_grad_norm,
        save_strategy="steps",
        save_steps=cfg.save_steps,
        save_total_limit=cfg.save_total_limit,
        eval_strategy="steps",
        eval_steps=cfg.save_steps if early else cfg.eval_steps,
        load_best_model_at_end=early,
        metric_for_best_model="eval_loss" if early else None,
        greater_is_better=False if early else None,
        logging_steps=cfg.logging_steps,
        report_to="none",
        use_cpu=not torch.cuda.is_available(),
        bf16=bf16,
        activation_checkpointing=cfg.gradient_checkpointing,
        seed=effective_seed,
        data_seed=effective_seed,
        remove_unused_columns=False,
        dataloader_num_workers=0,
        label_names=["labels"],
        disable_tqdm=False,
    )
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
    result = trainer.train(resume_from_checkpoint=str(resume) if resume else None)
    train_seconds = time.time() - t0

    with atomic_dir(out_dir) as tmp:
        tmp.chmod(0o755)  # mkdtemp makes it 0700; the model is read by other users' jobs
        trainer.save_model(str(tmp))
        tokenizer.save_pretrained(str(tmp))
        (tmp / "training_args.bin").unlink(missing_ok=True)
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
            "dimensions": dims,
            "primary_dimension": primary_dimension,
            "n_train": len(train),
            "n_val": len(val),
            "n_train_dropped_unrated": train.n_dropped_unrated,
            "n_train_truncated": int(train_trunc),
            "n_val_truncated": int(val_trunc),
            "train_author_types": train.author_types,
            "global_steps": int(trainer.state.global_step),
            "resumed_from": resume.name if resume else None,
            "train_loss": float(result.training_loss),
            "train_seconds": round(train_seconds, 2),
            "bf16": bf16,
            "device": str(trainer.args.device),
            "config": asdict(cfg),
            "train_fingerprint": train.fingerprint(),
            "validation": figures,
        }
        write_json(summary, tmp / "metrics.json")
        write_json(trainer.state.log_history, tmp / "training_log.json")
        write_model_card(tmp / "README.md", summary)
    shutil.rmtree(work_dir, ignore_errors=True)
    log.info("seed %s: wrote %s in %.1fs", seed, out_dir, time.time() - t0)
    return summary


def cli_main(argv: Sequence[str] | None = None) -> int:
    """``reappraisal train-reward-model``: one seed, from the processed tables to a model directory."""
    import pandas as pd  # noqa: F401  (pyarrow-backed reads)

    from reappraisal.models.base import read_manifest

    p = argparse.ArgumentParser(prog="reappraisal train-reward-model", description=cli_main.__doc__)
    p.add_argument("--base-model", required=True, help="hub id or local path (config models.reward_base)")
    p.add_argument("--base-manifest", default=None, help="results/models/base/MANIFEST.json, cross-checked")
    p.add_argument("--targets", required=True)
    p.add_argument("--vignettes", required=True)
    p.add_argument("--pairs", required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--params", default=None)
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    params = parse_params(a.params)
    section = params.get("reward_model") or {}
    seeds = section.get("seeds")
    if seeds is not None and a.seed not in seeds:
        raise ConfigError(f"seed {a.seed} is not among reward_model.seeds {seeds}", where="--seed")
    dims = (params.get("data") or {}).get("dimensions")
    primary = (params.get("data") or {}).get("primary_dimension")
    if not dims or not primary:
        raise ConfigError("data.dimensions and data.primary_dimension are required", where="--params")
    base = a.base_model
    if a.base_manifest:
        entry = read_manifest(a.base_manifest)["roles"].get("reward") or {}
        if Path(str(entry.get("location"))) != Path(base) and entry.get("location") != base:
            raise PipelineInputError(
                f"the manifest's reward base {entry.get('location')!r} is not --base-model {base!r}; "
                "rerun prepare_base_models",
                where=str(a.base_manifest),
            )
    targets = read_table(a.targets, TARGET_COLUMNS, "targets")
    vignettes = read_table(a.vignettes, VIGNETTE_COLUMNS, "vignettes")
    pairs = read_table(a.pairs, PAIR_COLUMNS, "pairs")
    train = examples_for_split(targets, vignettes, "train", dims, where=a.targets)
    val = examples_for_split(targets, vignettes, "val", dims, where=a.targets)
    summary = train_reward_model(
        base=base,
        train=train,
        val=val,
        val_pairs=pairs_for_split(pairs, "val"),
        seed=a.seed,
        global_seed=int(params.get("seed", 0)),
        out_dir=a.out,
        cfg=RewardTrainConfig.from_section(section),
        primary_dimension=primary,
    )
    acc = (summary["validation"].get("pairwise") or {}).get("accuracy")
    print(f"seed {a.seed}: val pairwise accuracy {acc}, {summary['train_seconds']}s")
    return 0
