"""The model card (README.md) written beside each trained reward-model seed.

Every number in it is read from the seed's ``metrics.json`` summary, never
typed by hand. The card carries the one-at-a-time reference snippet that
defines a seed's score and the ensemble score; the batched
:class:`~.ensemble.EnsembleScorer` must reproduce it (tested).
"""

from __future__ import annotations

from pathlib import Path

from reappraisal.atomic import atomic_path

from .prompts import PROMPT_TEMPLATE

#: The reference implementation printed in every card (one pair at a time).
REFERENCE_SNIPPET = '''\
import numpy as np
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

PROMPT = {prompt!r}

def seed_score(model_dir, scenario, reappraisal, max_length={max_length}):
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir, dtype=torch.float32).eval()
    inputs = tok(PROMPT.format(v=scenario, r=reappraisal), return_tensors="pt",
                 truncation=True, max_length=max_length)
    with torch.no_grad():
        return model(**inputs).logits[0].float().mean().item()   # mean of the head outputs

def ensemble_score(model_dirs, scenario, reappraisal, lam=0.5):
    s = np.array([seed_score(d, scenario, reappraisal) for d in model_dirs])
    return s.mean() - lam * s.std()                               # population std (ddof=0)
'''


def _fmt(x, digits: int = 3) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def render_model_card(summary: dict) -> str:
    v = summary["validation"]
    cfg = summary["config"]
    pw = v.get("pairwise") or {}
    ci = pw.get("ci_cluster_t") or {}
    rows = "\n".join(
        f"| {dim} | {d['n']} | {_fmt(d['mse'])} | {_fmt(d['pearson'])} |" for dim, d in v["per_dimension"].items()
    )
    sp = v["spearman_primary"]
    pairwise = (
        f"{_fmt(pw.get('accuracy'))} over {pw.get('n_pairs')} pairs in {pw.get('n_scenarios')} scenarios "
        f"(95% scenario-cluster t CI {_fmt(ci.get('low'))}-{_fmt(ci.get('high'))}; ties count 0.5)"
        if pw
        else f"n/a ({v.get('pairwise_unavailable', 'no pairs')})"
    )
    return f"""---
library_name: transformers
pipeline_tag: text-classification
base_model: {summary['base']}
tags: [reward-model, regression, reappraisal]
---

# Reappraisal reward model, seed {summary['seed']}

Sequence-classification model with one regression output per rating dimension
({', '.join(summary['dimensions'])}), trained with MSE on each human
reappraisal's mean z-rating (z within study x rater x dimension; unrated
dimensions masked). One seed of the reward-model ensemble: the seed ({summary['effective_seed']} = config seed + {summary['seed']}) sets the
head initialisation, data order and dropout (where the architecture has any).

## Input

```
{PROMPT_TEMPLATE}
```

truncated at {cfg['max_length']} tokens ({summary['n_train_truncated']} of {summary['n_train']}
training prompts and {summary['n_val_truncated']} of {summary['n_val']} validation prompts were longer).

## Score

A seed's score is the mean of its {len(summary['dimensions'])} head outputs. The ensemble
score is mean over seeds - 0.5 * std over seeds (population std). Reference
implementation, one pair at a time:

```python
{REFERENCE_SNIPPET.format(prompt=PROMPT_TEMPLATE, max_length=cfg['max_length'])}```

## Training

- base: `{summary['base']}`; {summary['n_train']} training reappraisals
  ({summary['n_train_dropped_unrated']} unrated dropped), author types {summary['train_author_types']}
- {summary['global_steps']} optimizer steps, lr {cfg['learning_rate']}, {cfg['num_train_epochs']} epochs,
  batch {cfg['per_device_train_batch_size']} x {cfg['gradient_accumulation_steps']} accumulation,
  scheduler {cfg['lr_scheduler_type']}, early stopping patience {cfg['early_stopping_patience']} (0 = fixed schedule),
  bf16 {summary['bf16']}, device {summary['device']}; final train loss {_fmt(summary['train_loss'], 4)};
  {summary['train_seconds']} s{'; resumed from ' + summary['resumed_from'] if summary['resumed_from'] else ''}

## Validation (val split: {summary['n_val']} reappraisals)

| dimension | n | MSE | Pearson r |
|---|---|---|---|
{rows}

- seed score vs human mean z ({summary['primary_dimension']}): Spearman {_fmt(sp['pooled'])} pooled,
  {_fmt(sp['within_scenario_mean'])} mean within scenario
- within-scenario pairwise accuracy: {pairwise}

The validation split holds other reappraisals of the *same* scenarios as
training: these figures say nothing about new scenarios.
"""


def write_model_card(path: str | Path, summary: dict) -> None:
    with atomic_path(path, suffix=".md") as tmp:
        tmp.write_text(render_model_card(summary))
