"""Train the Bradley–Terry reward model: TRL's ``RewardTrainer`` on human preference pairs.

One scalar head (``AutoModelForSequenceClassification``, ``num_labels=1``)
on the same base as the regression ensemble (``base_models.reward_base``),
trained with the library's own Bradley–Terry loss
``-log σ(r(chosen) − r(rejected))``. The pairs are the within-scenario pairs
of ``pairs.parquet`` of the **train** split (human reappraisals only; the
validation split and every GPT-4 or opponent answer are never trained on):
*chosen* is the reappraisal with the higher mean z on ``data.primary_dimension``
(recomputed from ``targets.parquet``), and a pair is kept only when that gap
is at least ``reward.bradley_terry.min_gap`` (:func:`preference_pairs`). The
pairs table itself drops only exact ties and caps the pairs per scenario,
so the clearly separated selection is made here.

Each side is the model card's prompt (:mod:`.prompts`), tokenized exactly as
the ensemble scores it (truncation at ``reward.max_length``, no EOS added):
the trainer receives ``chosen_ids``/``rejected_ids`` (TRL's pre-tokenized
form), so :class:`~.ensemble.EnsembleScorer` scores the saved model the way
it was trained.

Crash safety as every trainer here (:mod:`reappraisal.training`): the work
folder ``<out>/../.<name>.work/`` is locked for the whole stage, a rerun
with the same settings and pairs resumes from the last complete checkpoint,
``metrics.json`` lists every training segment, and ``<out>`` appears only
when complete (written to a temporary folder and renamed).
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from reappraisal.atomic import write_json
from reappraisal.settings import RewardSettings, as_config
from reappraisal.errors import ConfigError, DataValidationError, PipelineInputError
from reappraisal.training.length_parts import classifier_in_length_parts
from reappraisal.training.run import finished_model, run_training
from reappraisal.training.settings import checkpointing_args, schedule_args, set_cpu_threads, use_bf16
from reappraisal.training.tracking import OFF, Tracking
from reappraisal.training.work_dir import fingerprint, open_work_dir, remove_stale_temporaries, work_dir_beside

from .dataset import Examples, examples_for_split, pairs_for_split
from .prompts import encode_prompts, format_prompts
from .trainer_command import trainer_inputs

log = logging.getLogger("reappraisal.reward.bradley_terry_io")

SECTION = "reward.bradley_terry"
#: Settings of the ``reward`` section the Bradley–Terry model shares with the ensemble.
SHARED_KEYS = ("max_length", "per_device_eval_batch_size", "bf16", "gradient_checkpointing", "cpu_threads")


@dataclass(frozen=True)
class BradleyTerryConfig:
    """``reward.bradley_terry`` plus the shared ``reward`` keys (:data:`SHARED_KEYS`); no defaults here (the
    schema has them)."""

    min_gap: float
    max_pairs: int | None
    learning_rate: float
    num_train_epochs: float
    per_device_train_batch_size: int
    gradient_accumulation_steps: int
    weight_decay: float
    warmup_ratio: float
    lr_scheduler_type: str
    max_grad_norm: float
    center_rewards_coefficient: float | None
    save_steps: int
    save_total_limit: int
    logging_steps: int
    max_length: int
    per_device_eval_batch_size: int
    bf16: str | bool
    gradient_checkpointing: bool
    cpu_threads: int | None

    @classmethod
    def from_settings(cls, reward: RewardSettings) -> "BradleyTerryConfig":
        """The settings of the ``reward`` settings' ``bradley_terry`` part and the shared keys."""
        merged = {**{k: getattr(reward, k) for k in SHARED_KEYS}, **as_config(reward.bradley_terry)}
        return cls(**{f.name: merged[f.name] for f in fields(cls)})


# ----------------------------------------------------------------------- pairs (pure)
def preference_pairs(pairs: pd.DataFrame, targets: pd.DataFrame, vignettes: pd.DataFrame, *, primary_dimension: str,
                     min_gap: float, max_pairs: int | None = None, seed: int = 0, split: str = "train",
                     where: str = "pairs.parquet") -> pd.DataFrame:
    """The chosen/rejected pairs of ``split`` whose human gap on the primary dimension is at least ``min_gap``.

    Returns columns pair_id, vignette_id, scenario, chosen_id, rejected_id,
    chosen, rejected (texts) and gap (z units), in the pairs table's order
    (a deterministic sample of ``max_pairs`` when set). Both reappraisals of
    a pair must be rated ``split`` reappraisals of ``targets``
    (:class:`DataValidationError` otherwise: nothing else is ever trained
    on); a ``min_gap`` that leaves no pair is a :class:`ConfigError` naming
    ``reward.bradley_terry.min_gap``.
    """
    z_col = f"z_{primary_dimension}"
    if z_col not in targets.columns:
        raise DataValidationError(f"no column {z_col!r} for data.primary_dimension", where="targets.parquet")
    in_split = pairs[pairs["split"] == split]
    if in_split.empty:
        raise PipelineInputError(f"no {split!r} pairs", where=where)
    rows = targets.set_index("reappraisal_id")
    ids = pd.concat([in_split["id_a"], in_split["id_b"]]).unique()
    unknown = [i for i in ids if i not in rows.index]
    if unknown:
        raise DataValidationError(f"pairs name reappraisal(s) absent from targets.parquet: {unknown[:5]}", where=where)
    outside = [i for i in ids if rows.at[i, "split"] != split or pd.isna(rows.at[i, z_col])]
    if outside:
        raise DataValidationError(
            f"{len(outside)} reappraisal(s) of {split!r} pairs are not rated {split!r} reappraisals "
            f"(e.g. {outside[:3]}): only {split!r} human reappraisals may be trained on", where=where)
    z_a = in_split["id_a"].map(rows[z_col]).to_numpy(dtype=float)
    z_b = in_split["id_b"].map(rows[z_col]).to_numpy(dtype=float)
    gap = np.abs(z_a - z_b)
    keep = (gap >= float(min_gap)) & (gap > 0)  # an exact tie has no preference, whatever min_gap says
    if not keep.any():
        raise ConfigError(
            f"min_gap = {min_gap} leaves no {split!r} preference pair (largest human gap there is {gap.max():.3f}); "
            "lower it", where=f"config key '{SECTION}.min_gap'")
    kept = in_split[keep]
    a_wins = (z_a > z_b)[keep]
    text = rows["text"].astype(str)
    scenario_of = dict(zip(vignettes["vignette_id"], vignettes["text"].astype(str)))
    missing = sorted(set(kept["vignette_id"]) - set(scenario_of))
    if missing:
        raise DataValidationError(f"pairs refer to unknown scenario(s) {missing[:5]}", where=where)
    chosen = np.where(a_wins, kept["id_a"], kept["id_b"])
    rejected = np.where(a_wins, kept["id_b"], kept["id_a"])
    out = pd.DataFrame({
        "pair_id": kept["pair_id"].astype(str).to_numpy(),
        "vignette_id": kept["vignette_id"].astype(str).to_numpy(),
        "scenario": kept["vignette_id"].map(scenario_of).to_numpy(),
        "chosen_id": chosen,
        "rejected_id": rejected,
        "chosen": text.reindex(chosen).to_numpy(),
        "rejected": text.reindex(rejected).to_numpy(),
        "gap": gap[keep],
    })
    if max_pairs is not None and len(out) > int(max_pairs):
        out = out.sample(n=int(max_pairs), random_state=int(seed) % 2**32).sort_index()
    return out.reset_index(drop=True)


def pairs_record(train_pairs: pd.DataFrame, n_split_pairs: int, cfg: "BradleyTerryConfig") -> dict:
    """What the model was trained on (part of its metrics.json)."""
    return {
        "n_train_pairs": int(len(train_pairs)),
        "n_split_pairs": int(n_split_pairs),
        "min_gap": float(cfg.min_gap),
        "max_pairs": cfg.max_pairs,
        "n_scenarios": int(train_pairs["vignette_id"].nunique()),
        "gap_quantiles": {str(q): float(v) for q, v in train_pairs["gap"].quantile([0.1, 0.5, 0.9]).round(4).items()},
        "chosen": "higher mean z on the primary dimension",
    }


# -------------------------------------------------------------------------- training
def validation_figures(model_dir: str | Path, *, val: Examples, val_pairs: pd.DataFrame, primary_dimension: str,
                       max_length: int, batch_size: int) -> dict:
    """The saved model's score on the validation reappraisals: Spearman ρ with the primary dimension and
    pairwise accuracy on the validation split's within-scenario pairs (ties 0.5, scenario-cluster CI)."""
    from .ensemble import EnsembleScorer
    from .metrics import accuracy_on_pairs, spearman_with_humans

    scorer = EnsembleScorer.from_dirs([model_dir], max_length=max_length, batch_size=batch_size)
    scores = scorer.score_per_seed(val.scenarios, val.reappraisals)[0]
    primary = val.targets[:, val.dimensions.index(primary_dimension)]
    out: dict[str, Any] = {"split": "val", "spearman_primary": spearman_with_humans(scores, primary, val.vignette_ids),
                           "pairwise": None}
    by_id = dict(zip(val.reappraisal_ids, scores))
    usable = val_pairs[val_pairs["id_a"].isin(by_id) & val_pairs["id_b"].isin(by_id)]
    try:
        out["pairwise"] = accuracy_on_pairs(usable, by_id)
    except ValueError as exc:  # no pairs, or pairs from a single scenario
        out["pairwise_unavailable"] = str(exc)
    return out


def load_bt_base(base: str, seed: int):
    """Tokenizer and a one-output sequence-classification head on the base model (head init from ``seed``)."""
    from .base_model import load_base

    tokenizer, model = load_base(base, 1, seed)
    model.config.problem_type = None  # a Bradley-Terry score, not a regression target
    return tokenizer, model


def _pair_dataset(tokenizer, train_pairs: pd.DataFrame, max_length: int):
    from datasets import Dataset

    chosen, n_chosen_cut = encode_prompts(tokenizer, format_prompts(train_pairs["scenario"], train_pairs["chosen"]), max_length)
    rejected, n_rejected_cut = encode_prompts(tokenizer, format_prompts(train_pairs["scenario"], train_pairs["rejected"]), max_length)
    return Dataset.from_dict({"chosen_ids": chosen, "rejected_ids": rejected}), int(n_chosen_cut) + int(n_rejected_cut)


def reward_config_args(cfg: BradleyTerryConfig, output_dir: str | Path, *, seed: int, bf16: bool, use_cpu: bool,
                       tracking: Tracking) -> dict:
    """Keyword arguments of ``trl.RewardConfig`` (checkpointing and reporting as every trainer here, the schedule,
    no eval)."""
    return dict(
        **checkpointing_args(output_dir, seed=seed, save_steps=cfg.save_steps, save_total_limit=cfg.save_total_limit,
                             bf16=bf16, use_cpu=use_cpu, activation_checkpointing=cfg.gradient_checkpointing,
                             tracking=tracking),
        **schedule_args(cfg),
        center_rewards_coefficient=cfg.center_rewards_coefficient,
        max_length=cfg.max_length,  # the ids are already truncated there: TRL's length filter drops nothing
        logging_steps=cfg.logging_steps,
        eval_strategy="no",  # held-out figures: from the saved model, below and in evaluate_reward_models
        data_seed=seed,
        dataloader_num_workers=0,
        disable_tqdm=True,
    )


def train_bradley_terry(
    *,
    base: str,
    train_pairs: pd.DataFrame,
    val: Examples,
    val_pairs: pd.DataFrame,
    seed: int,
    out_dir: str | Path,
    cfg: BradleyTerryConfig,
    primary_dimension: str,
    n_split_pairs: int | None = None,
    callbacks: Sequence = (),
    tracking: Tracking = OFF,
) -> dict:
    """Train (or resume) the Bradley–Terry model on ``train_pairs`` (:func:`preference_pairs`) and write
    ``out_dir`` atomically (model, tokenizer, ``metrics.json``, ``training_log.json``); return its record."""
    import torch
    from trl import RewardConfig, RewardTrainer

    out_dir = Path(out_dir)
    use_cpu = not torch.cuda.is_available()
    set_cpu_threads(cfg.cpu_threads, use_cpu=use_cpu)
    t0 = time.time()
    tokenizer, model = load_bt_base(base, seed)
    data, n_truncated = _pair_dataset(tokenizer, train_pairs, cfg.max_length)
    if n_truncated:
        log.warning("%d of %d training prompts exceed max_length=%d and lose their end", n_truncated,
                    2 * len(train_pairs), cfg.max_length)
    bf16 = use_bf16(cfg.bf16, where="config key 'reward.bf16'")
    spec = {
        "base": str(base),
        "seed": int(seed),
        "config": asdict(cfg),
        "bf16": bf16,
        "pairs_fingerprint": fingerprint(train_pairs[["pair_id", "scenario", "chosen", "rejected"]].to_dict("list")),
    }
    with open_work_dir(work_dir_beside(out_dir), spec) as work:
        remove_stale_temporaries(out_dir)
        args = RewardConfig(**reward_config_args(cfg, work.path, seed=seed, bf16=bf16, use_cpu=use_cpu,
                                                 tracking=tracking))
        trainer = classifier_in_length_parts(RewardTrainer)(model=model, args=args, train_dataset=data,
                                                            processing_class=tokenizer, callbacks=list(callbacks))
        result = run_training(trainer, work, where="Bradley-Terry reward model", tracking=tracking)

        with finished_model(trainer, result, work, out_dir, tokenizer=tokenizer) as tmp:
            (tmp / "README.md").unlink(missing_ok=True)  # TRL's generic card; the ensemble card describes this model
            # validation figures from the saved artifact, loaded back as every consumer will load it
            figures = validation_figures(tmp, val=val, val_pairs=val_pairs, primary_dimension=primary_dimension,
                                         max_length=cfg.max_length, batch_size=cfg.per_device_eval_batch_size)
            summary = {
                "model": "bradley_terry",
                "loss": "Bradley-Terry: -log sigmoid(r(chosen) - r(rejected)) (trl.RewardTrainer)",
                "base": str(base),
                "seed": int(seed),
                "primary_dimension": primary_dimension,
                **pairs_record(train_pairs, len(train_pairs) if n_split_pairs is None else n_split_pairs, cfg),
                "n_train_truncated": int(n_truncated),
                "global_steps": result.global_step,
                **result.record(),  # resumed_from, segments, train_seconds (the total over every segment)
                "train_loss": result.train_loss,
                "bf16": bf16,
                "device": str(trainer.args.device),
                "config": asdict(cfg),
                "validation": figures,
            }
            write_json(summary, tmp / "metrics.json")
            write_json(result.log_history, tmp / "training_log.json")
    log.info("Bradley-Terry: wrote %s in %.1fs", out_dir, time.time() - t0)
    return summary


def cli_main(argv: Sequence[str] | None = None) -> int:
    """``reappraisal train-bradley-terry``: the Bradley–Terry reward model, from the processed tables to a model folder."""
    inputs = trainer_inputs("reappraisal train-bradley-terry", cli_main.__doc__, argv)
    a, targets, vignettes, pairs = inputs.args, inputs.targets, inputs.vignettes, inputs.pairs
    cfg = BradleyTerryConfig.from_settings(inputs.settings.reward)
    seed = int(inputs.settings.seed)
    train_pairs = preference_pairs(pairs, targets, vignettes, primary_dimension=inputs.primary, min_gap=cfg.min_gap,
                                   max_pairs=cfg.max_pairs, seed=seed, where=a.pairs)
    val = examples_for_split(targets, vignettes, "val", inputs.dimensions, where=a.targets)
    summary = train_bradley_terry(
        base=a.base_model, train_pairs=train_pairs, val=val, val_pairs=pairs_for_split(pairs, "val"), seed=seed,
        out_dir=a.out, cfg=cfg, primary_dimension=inputs.primary,
        n_split_pairs=int((pairs["split"] == "train").sum()), tracking=inputs.tracking,
    )
    acc = (summary["validation"].get("pairwise") or {}).get("accuracy")
    print(f"Bradley-Terry: {summary['n_train_pairs']} of {summary['n_split_pairs']} train pairs "
          f"(gap >= {cfg.min_gap}); val pairwise accuracy {acc}, {summary['train_seconds']}s")
    return 0
