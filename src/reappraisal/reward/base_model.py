"""The reward model's starting point.

The base model's tokenizer (with a pad token) and a fresh scoring head on
it.
"""

from __future__ import annotations

import logging

from reappraisal.errors import PipelineInputError

from .prompts import resolve_pad_token_id

log = logging.getLogger("reappraisal.reward")


def load_base(base: str, n_labels: int, seed: int):
    """Tokenizer and a regression head on the base model (head init depends on ``seed``)."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, set_seed

    from reappraisal.base_models.manifest import check_model_location

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
