"""A log-only gold signal during GRPO: TRL reward functions that never enter the reward.

Gao, Schulman & Hilton (2022) score every policy by a gold scorer beside the
proxy it is optimized against. On the demo preset the gold is the demo
generator's rating model (:func:`reappraisal.data.demo_gold.gold_quality`:
the expected latent quality of each answer, the text after ``</think>``;
an empty answer is scored as the empty text). It is passed to TRL's
``GRPOTrainer`` as an extra reward function with weight 0 in
``reward_weights``, so TRL computes and logs it (``rewards/gold/mean``,
``rewards/gold/std``) every step while the optimized reward stays the
committee alone.

``policy.gold_scorer`` in the config names the scorer; ``null`` (the paper
preset's default) logs none and the training log's gold columns stay empty.
The demo's gold exists only for the demo's synthetic data, so a preset whose
data are not bundled (the paper preset's OSF data) refuses ``demo_gold`` with
one line.
"""

from __future__ import annotations

from typing import Any, Sequence

from reappraisal.errors import ConfigError

GOLD_SCORERS = ("demo_gold",)


def check_gold_scorer(name: str | None, *, preset: str, data_source: str | None) -> None:
    """``name`` is a known log-only scorer allowed with these data (None: no gold logged)."""
    if name is None:
        return
    if name not in GOLD_SCORERS:
        raise ConfigError(f"unknown gold scorer {name!r} (known: {', '.join(GOLD_SCORERS)} or null)",
                          where="config key 'policy.gold_scorer'")
    from reappraisal.data.demo_gold import require_demo_data

    require_demo_data(f"gold scorer {name!r}", preset=preset, data_source=data_source,
                      fix="needs policy.gold_scorer: null", where="config key 'policy.gold_scorer'")


class GoldQualityLog:
    """TRL reward function ``gold``: each completion's answer's expected latent quality (log only, weight 0)."""

    __name__ = "gold"

    def __init__(self, *, tokenizer=None):
        self.tokenizer = tokenizer

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any],
                 completion_ids: Sequence[Sequence[int]] | None = None, *, scenario: Sequence[str],
                 **kwargs: Any) -> list[float]:
        from reappraisal.data.demo_gold import gold_qualities

        from .reward_adapter import completion_answers

        return gold_qualities(completion_answers(completions, completion_ids, self.tokenizer), list(scenario)).tolist()
