"""A trainer's settings: the precision rule, CPU threads, the checkpointing and reporting arguments every trainer
shares, the optimizer schedule of the trainers configured by a ``warmup_ratio`` and what every supervised fine-tuning here sets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .tracking import Tracking


def bf16_capable() -> bool:
    """Whether this machine has a CUDA GPU that supports bf16."""
    import torch

    return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())


def use_bf16(setting: str | bool, *, where: str, capable: bool | None = None) -> bool:
    """The precision rule of every trainer: bf16 mixed precision or float32.

    ``setting``: ``"auto"`` (bf16 where the GPU supports it, never on CPU),
    ``True``/``"bf16"`` (bf16; a ConfigError naming ``where`` when the machine
    cannot) or ``False``/``"fp32"``. ``capable`` overrides the detection (to
    lay out settings for another machine, e.g. a cluster preset).
    """
    capable = bf16_capable() if capable is None else bool(capable)
    if setting == "auto":
        return capable
    if setting is True or setting == "bf16":
        if not capable:
            raise ConfigError("bf16 requested but this machine has no bf16-capable GPU", where=where)
        return True
    if setting is False or setting == "fp32":
        return False
    raise ConfigError(f"{setting!r} is not a precision (auto, bf16/true or fp32/false)", where=where)


def model_dtype(bf16: bool) -> str:
    """The dtype name models are loaded in for the precision :func:`use_bf16` chose."""
    return "bfloat16" if bf16 else "float32"


def set_cpu_threads(n: int | None, *, use_cpu: bool | None = None) -> None:
    """Torch intra-op threads for a CPU run (``None`` or a GPU run keeps torch's default).

    ``use_cpu=None``: the run is on CPU when no GPU is visible. On a shared
    2-core machine two jobs each using torch's default (every core) compete
    for the cores, which slows tiny models far more than one thread each.
    """
    from ..numerics import check_pinned

    check_pinned()
    if not n:
        return
    import torch

    if use_cpu is None:
        use_cpu = not torch.cuda.is_available()
    if use_cpu:
        torch.set_num_threads(int(n))


def checkpointing_args(output_dir: str | Path, *, seed: int, save_steps: int, save_total_limit: int, bf16: bool,
                       use_cpu: bool, activation_checkpointing: bool, tracking: Tracking) -> dict[str, Any]:
    """The ``TrainingArguments`` every trainer here shares: checkpoints every ``save_steps`` into its work
    folder (what :func:`run_training` resumes from), precision, device, seed, and the reporter of its logged
    steps (``training.report_to``: :mod:`reappraisal.training.tracking`)."""
    return dict(output_dir=str(output_dir), save_strategy="steps", save_steps=int(save_steps),
                save_total_limit=int(save_total_limit), seed=int(seed), bf16=bool(bf16),
                use_cpu=bool(use_cpu), activation_checkpointing=bool(activation_checkpointing),
                **tracking.training_args())


#: Settings passed to ``TrainingArguments`` as they are: the optimizer and its learning-rate schedule.
SCHEDULE_KEYS = ("learning_rate", "num_train_epochs", "per_device_train_batch_size", "gradient_accumulation_steps",
                 "weight_decay", "lr_scheduler_type", "max_grad_norm")


def schedule_args(cfg: Any) -> dict[str, Any]:
    """The ``TrainingArguments`` of the optimizer and its schedule from a trainer's settings (attributes
    :data:`SCHEDULE_KEYS` and ``warmup_ratio``): the reward ensemble's seeds and the Bradley-Terry model."""
    return {**{k: getattr(cfg, k) for k in SCHEDULE_KEYS},
            "warmup_steps": float(cfg.warmup_ratio)}  # a float in [0, 1) is a ratio of the total steps


def sft_args(sft: Any) -> dict[str, Any]:
    """The ``trl.SFTConfig`` arguments of a supervised fine-tuning's settings (attributes ``num_train_epochs``,
    ``learning_rate``, ``per_device_train_batch_size``, ``max_length``: ``grm.sft``, ``evaluation.demo_judge``)
    and the linear schedule on shuffled data of every SFT here (the GRM's first stage, the demo judge)."""
    return dict(
        num_train_epochs=float(sft.num_train_epochs),
        learning_rate=float(sft.learning_rate),
        per_device_train_batch_size=int(sft.per_device_train_batch_size),
        max_length=int(sft.max_length),
        lr_scheduler_type="linear",
        shuffle_dataset=True,
    )
