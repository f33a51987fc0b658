"""Right padding of token-id batches, so a batch scores like its rows one at a time."""

from __future__ import annotations

from typing import Any, Sequence


def pad_right(seqs: Sequence[Sequence[int]], pad_id: int, *, labels: Sequence[Sequence[int]] | None = None,
              label_pad: int = -100) -> dict[str, Any]:
    """Right-padded ``input_ids`` and ``attention_mask`` (and ``labels`` padded with ``label_pad``).

    Every real token keeps the position it has alone, so a batch scores like
    its rows one at a time (the sequence-classification head pools the last
    non-pad token).
    """
    import torch
    from torch.nn.utils.rnn import pad_sequence

    ids = [torch.as_tensor(list(s), dtype=torch.long) for s in seqs]
    out = {
        "input_ids": pad_sequence(ids, batch_first=True, padding_value=int(pad_id)),
        "attention_mask": pad_sequence([torch.ones(len(t), dtype=torch.long) for t in ids], batch_first=True),
    }
    if labels is not None:
        lab = [torch.as_tensor(list(s), dtype=torch.long) for s in labels]
        out["labels"] = pad_sequence(lab, batch_first=True, padding_value=int(label_pad))
    return out
