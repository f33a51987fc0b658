"""A training batch's common prefix run once for all its rows (core layer).

The rows of a training batch often begin with the same tokens: every GRM trace with the judge's system prompt
and ``SCENARIO:`` (about 90 of its 173 to 351 tokens), every warm-start example with the policy's. Causal
attention makes those positions' hidden states, keys and values the same in every row, yet a batch computes
them once a row, forward and backward. Here the prefix runs once, as one row
(:func:`reappraisal.compat.transformers.prefix_keys_and_values`); each row's rest then runs at its own positions
after it, reading the prefix's keys and values from its cache (:func:`reappraisal.compat.transformers.cache_of_rows`),
and every row's gradient flows back through the one computation. The loss and the gradient are the batch's; only
the order of the sums differs (the last bits).

Cut only where nothing is lost and it is checked (:func:`applies`): positions before every row's first counted
label (the label just after the cut would be predicted from the prefix's last position, which the rows' pass
no longer computes), at least :data:`MIN_SHARED` of them; a model on the CPU in one process (no DeepSpeed, FSDP
or DDP wrapper), without activation checkpointing (its recomputation would append to the cache a second time),
with SDPA or eager attention, in full precision (under bf16 autocast the rows' gradients would meet in bf16 at the
prefix, where each row's own pass sums them in float32). The trainers of :mod:`reappraisal.training.length_parts`
use it: TRL's ``SFTTrainer`` (the GRM's SFT, the policy's warm start, the demo judge), TRL's ``RewardTrainer`` (the
Bradley-Terry model) and the reward models' regression (each row's score read from its last token, which its
own pass computes). GRPO's rows share more: each of its prompts is read once for the completions sampled from
it (:func:`completion_logps`).
"""

from __future__ import annotations

from typing import Any, Mapping

from ..compat.transformers import attention_kernel, cache_of_rows, prefix_keys_and_values

#: Fewer shared positions than this are not cut: the prefix's own forward call costs more than they save.
MIN_SHARED = 16


def shared_length(input_ids, attention_mask, labels=None) -> int:
    """How many leading positions to run once: the rows' common tokens, before every row's last token (a
    classifier reads it from the row's own pass) and before the first position any row counts a label at
    (``labels``, a language model's: ``-100`` not counted); 0 when under :data:`MIN_SHARED` or the batch has
    one row."""
    if input_ids.shape[0] < 2:
        return 0
    same = (input_ids == input_ids[:1]).all(dim=0) & attention_mask.bool().all(dim=0)
    limit = int(attention_mask.sum(dim=-1).min()) - 1
    if labels is not None:
        counted = (labels != -100).any(dim=0)
        if bool(counted.any()):
            limit = min(limit, int(counted.nonzero()[0]))
    differ = (~same[:limit]).nonzero()
    length = int(differ[0]) if len(differ) else limit
    return length if length >= MIN_SHARED else 0


def applies(trainer, model) -> bool:
    """Whether a batch's prefix may run once for ``model`` under ``trainer`` (module doc: where it is checked)."""
    from accelerate.utils import DistributedType

    return (getattr(model, "device", None) is not None and model.device.type == "cpu"
            and trainer.accelerator.distributed_type == DistributedType.NO
            and trainer.accelerator.mixed_precision == "no"
            and not getattr(model, "is_activation_checkpointing", False)
            and attention_kernel(model) in ("sdpa", "eager")
            and hasattr(model, "base_model"))


def completion_logps(trainer, model, input_ids, attention_mask, logits_to_keep: int, compute_entropy: bool):
    """GRPO's per-token log-probabilities (and entropies) of the completions, as TRL's fused LM head gives them
    for the whole rows (:func:`reappraisal.compat.trl.with_completion_logps`), with each distinct prompt read once:
    GRPO samples several completions of every prompt, and its rows are the left-padded prompts then the
    completions. Everything before the prompts' last position is run once a distinct prompt (padding included,
    as the rows have it, at the same positions); each row then reads its prompt's keys and values from its cache
    and runs the prompt's last position (which predicts the first completion token) and its completion. None
    where it does not apply (:func:`applies`) or no two rows share a prompt: the caller computes them as TRL does."""
    import torch

    cut = input_ids.shape[1] - logits_to_keep - 1
    if cut < MIN_SHARED or not applies(trainer, model):
        return None
    prompts, inverse = torch.unique(torch.cat([input_ids[:, :cut], attention_mask[:, :cut]], dim=1), dim=0,
                                    return_inverse=True)
    if prompts.shape[0] == input_ids.shape[0]:
        return None
    rest = input_ids[:, cut:]
    labels = rest.masked_fill(attention_mask[:, cut:] == 0, -100)
    labels[:, :-logits_to_keep] = -100
    with trainer.accelerator.autocast():  # around the prompts' pass too, as around TRL's one call
        cache = cache_of_rows(model, prefix_keys_and_values(model, prompts[:, :cut], prompts[:, cut:]), inverse)
        out = model(input_ids=rest, attention_mask=attention_mask, past_key_values=cache, labels=labels,
                    fused_lm_head=True)
    return out.log_probs[:, -logits_to_keep:], out.entropy[:, -logits_to_keep:] if compute_entropy else None


def run_prefix(model, input_ids, length: int) -> list[tuple[Any, Any]]:
    """The keys and values of the batch's first ``length`` positions (row 0's, the same in every row)."""
    return prefix_keys_and_values(model, input_ids[:1, :length])


def after_prefix(inputs: Mapping[str, Any], length: int, model, prefix: list[tuple[Any, Any]]) -> dict[str, Any]:
    """A batch (or part) of rows that begin with the prefix: every ``(rows, positions)`` tensor from position
    ``length`` on, the attention mask whole (the prefix's positions and the rows'), and the prefix's keys and
    values as the rows' ``past_key_values``."""
    import torch

    n, width = inputs["attention_mask"].shape
    rest: dict[str, Any] = {}
    for key, value in inputs.items():
        if key != "attention_mask" and isinstance(value, torch.Tensor) and value.dim() >= 2 \
                and tuple(value.shape[:2]) == (n, width):
            rest[key] = value[:, length:]
        else:
            rest[key] = value
    rest["past_key_values"] = cache_of_rows(model, prefix, n)
    return rest
