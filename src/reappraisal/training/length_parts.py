"""A training batch run as length-sorted parts, each trimmed to its own longest row (core layer).

A padded batch costs its longest row's length on every row, and attention the square of it: the GRM's SFT
batches of 16 judge prompts with their verdicts (173 to 351 tokens) were 27 % padding. A right-padded training
batch is run as consecutive groups of its rows sorted by length (:func:`length_parts`), each trimmed to its
longest row (:func:`right_padded_parts`, :func:`batch_part`), and the groups' losses add up to the batch's: the
step's examples, their loss normalised as over the whole batch, and so its gradient, are the batch's; only the
order of the sums differs (the last bits). Evaluation and batches that are not right-padded are left as they are.

- :func:`in_length_parts`: TRL's ``SFTTrainer`` (the GRM's SFT, the policy's warm start, the demo judge); the
  rows' common prefix run once for every part (:mod:`reappraisal.training.shared_prefix`); each part's token-sum
  loss over the whole batch's label count, the logged entropy and token accuracy pooled over the parts as TRL pools them over a batch
  (its logged values through :func:`reappraisal.compat.trl.train_metrics`).
- :func:`classifier_in_length_parts`: TRL's ``RewardTrainer`` (the Bradley-Terry model); the classifier's logits
  computed by part (after the rows' common prefix, run once) and put back in the batch's order, TRL's loss on them
  (:func:`reappraisal.compat.trl.with_reward_forward`: how TRL's loss calls the model).
- The reward models' trainer sums its masked squared errors by part, after the common prefix
  (:func:`classifier_parts`, ``reward/train_io.py``).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Mapping, Sequence

from ..compat.trl import train_metrics, with_reward_forward
from . import shared_prefix

#: What one more part costs, in padded positions: its forward and backward calls (a few milliseconds for a tiny
#: model, against about 70 microseconds a position for the width-128 GRM).
PART_COST = 64
#: TRL's per-batch means that are pooled over the parts (weighted by each part's label count).
POOLED_METRICS = ("entropy", "mean_token_accuracy")


def length_parts(lengths: Sequence[int], part_cost: int = PART_COST) -> list[list[int]]:
    """Rows of a batch (indices into ``lengths``) in groups: sorted longest first, cut into consecutive groups that
    minimise the padded positions (each group padded to its longest row) plus ``part_cost`` a group."""
    order = sorted(range(len(lengths)), key=lambda i: -int(lengths[i]))
    n = len(order)
    best = [0] + [None] * n  # best[j]: the cheapest cost of the first j sorted rows; cut[j]: where its last group starts
    cut = [0] * (n + 1)
    for j in range(1, n + 1):
        for i in range(j):
            cost = best[i] + (j - i) * int(lengths[order[i]]) + part_cost
            if best[j] is None or cost < best[j]:
                best[j], cut[j] = cost, i
    groups, j = [], n
    while j > 0:
        groups.append(order[cut[j]:j])
        j = cut[j]
    return groups[::-1]


def _right_padded_lengths(mask) -> list[int] | None:
    import torch

    lengths = mask.sum(dim=-1)
    expected = torch.arange(mask.shape[1], device=mask.device)[None, :] < lengths[:, None]
    return lengths.tolist() if torch.equal(mask.bool(), expected) else None


def batch_part(inputs: Mapping[str, Any], rows: Sequence[int], width: int) -> dict[str, Any]:
    """The ``rows`` of a batch: tensors of ``(batch, positions, ...)`` trimmed to ``width`` positions, other
    per-row tensors sliced, anything else as it is."""
    import torch

    n, full = inputs["attention_mask"].shape
    index = torch.as_tensor(list(rows), dtype=torch.long, device=inputs["attention_mask"].device)
    part = {}
    for key, value in inputs.items():
        if isinstance(value, torch.Tensor) and value.dim() >= 2 and tuple(value.shape[:2]) == (n, full):
            part[key] = value[index, :width]
        elif isinstance(value, torch.Tensor) and value.dim() >= 1 and value.shape[0] == n:
            part[key] = value[index]
        else:
            part[key] = value
    return part


def right_padded_parts(mask, *, one_part: bool = False) -> list[tuple[list[int], int]] | None:
    """``(rows, width)`` of each part of a right-padded batch (:func:`length_parts`); None when the batch is not
    right-padded or (unless ``one_part``) is one part."""
    lengths = _right_padded_lengths(mask)
    groups = length_parts(lengths) if lengths is not None else []
    if len(groups) < (1 if one_part else 2):
        return None
    return [(rows, max(lengths[r] for r in rows)) for rows in groups]


def _label_count(labels) -> int:
    return int((labels[..., 1:] != -100).sum())


def in_length_parts(trainer_cls: type) -> type:
    """``trainer_cls`` (TRL's ``SFTTrainer``) training each batch in length-sorted parts (module doc)."""

    class InLengthParts(trainer_cls):
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            mask, labels = inputs.get("attention_mask"), inputs.get("labels")
            parts, shared = None, 0
            if model.training and not return_outputs and mask is not None and labels is not None:
                parts = right_padded_parts(mask, one_part=True)
                if parts is not None and shared_prefix.applies(self, model):
                    shared = shared_prefix.shared_length(inputs["input_ids"], mask, labels)
                if parts is not None and len(parts) < 2 and not shared:
                    parts = None
            if parts is None:
                return super().compute_loss(model, inputs, return_outputs=return_outputs,
                                            num_items_in_batch=num_items_in_batch)
            if num_items_in_batch is None:  # what each part's loss is normalised by: the whole batch's labels
                num_items_in_batch = _label_count(labels)
            # the rows' common prefix, run once for every part (reappraisal.training.shared_prefix)
            prefix = shared_prefix.run_prefix(model, inputs["input_ids"], shared) if shared else None
            metrics = train_metrics(self)
            start = {key: len(metrics[key]) for key in POOLED_METRICS}
            loss, weights = 0, []
            for rows, width in parts:
                part = batch_part(inputs, rows, width)
                weights.append(_label_count(part["labels"]))
                if prefix is not None:
                    part = shared_prefix.after_prefix(part, shared, model, prefix)
                loss = loss + super().compute_loss(model, part, num_items_in_batch=num_items_in_batch)
            total = sum(weights)
            for key in POOLED_METRICS:
                values = metrics[key][start[key]:]
                del metrics[key][start[key]:]
                if len(values) == len(weights) and total > 0:
                    metrics[key].append(sum(v * w for v, w in zip(values, weights)) / total)
                else:
                    metrics[key].extend(values)
            return loss

    InLengthParts.__name__ = InLengthParts.__qualname__ = f"InLengthParts{trainer_cls.__name__}"
    return InLengthParts


class _ForwardInParts:
    """A sequence classifier called on a right-padded batch: its logits computed in length-sorted parts, each
    trimmed to its longest row, after the rows' common prefix run once (:mod:`reappraisal.training.shared_prefix`),
    and returned in the batch's row order (one row of logits per row)."""

    def __init__(self, trainer, model) -> None:
        self.model = model
        self.shares_prefix = shared_prefix.applies(trainer, model)

    def __call__(self, *, input_ids, attention_mask, **kwargs):
        import torch

        parts = right_padded_parts(attention_mask, one_part=True)
        shared = shared_prefix.shared_length(input_ids, attention_mask) if parts and self.shares_prefix else 0
        if parts is None or (len(parts) < 2 and not shared):
            return self.model(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
        prefix = shared_prefix.run_prefix(self.model, input_ids, shared) if shared else None
        pieces, order = [], []
        for rows, width in parts:
            index = torch.as_tensor(rows, dtype=torch.long, device=input_ids.device)
            part = {"input_ids": input_ids[index, :width], "attention_mask": attention_mask[index, :width]}
            if prefix is not None:
                part = shared_prefix.after_prefix(part, shared, self.model, prefix)
            out = self.model(**part, **kwargs)
            pieces.append(out.logits)
            order.extend(rows)
        logits = torch.cat(pieces)[torch.as_tensor(order, device=input_ids.device).argsort()]
        return SimpleNamespace(logits=logits)


def classifier_in_length_parts(trainer_cls: type) -> type:
    """``trainer_cls`` (TRL's ``RewardTrainer``) whose training forward runs a batch in length-sorted parts, each
    trimmed to its longest row; the loss is TRL's, on the same logits in the same order (module doc)."""
    return with_reward_forward(trainer_cls, _ForwardInParts, name="InLengthParts")


def classifier_parts(trainer, model, inputs: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """A sequence classifier's right-padded training batch as the model inputs of its length-sorted parts
    (:func:`batch_part`), each after the rows' common prefix when it is run once
    (:mod:`reappraisal.training.shared_prefix`), with each part's rows (``"rows"``, popped before the call);
    None when the batch is not right-padded or gains nothing (one part, no prefix)."""
    mask = inputs["attention_mask"]
    parts = right_padded_parts(mask, one_part=True)
    shares = parts is not None and shared_prefix.applies(trainer, model)
    shared = shared_prefix.shared_length(inputs["input_ids"], mask) if shares else 0
    if parts is None or (len(parts) < 2 and not shared):
        return None
    prefix = shared_prefix.run_prefix(model, inputs["input_ids"], shared) if shared else None
    out = []
    for rows, width in parts:
        part = batch_part(inputs, rows, width)
        if prefix is not None:
            part = shared_prefix.after_prefix(part, shared, model, prefix)
        out.append({**part, "rows": rows})
    return out
