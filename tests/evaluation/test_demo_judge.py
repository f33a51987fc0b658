"""train_demo_judge trains (TRL's ``test_train`` pattern): its loss is reported and its weights moved.

One uninterrupted tiny run (one epoch, a few optimizer steps); the resume
path is tested in ``test_judge_independence.py``.
"""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from reappraisal.evaluation.judge_spec import load_judge
from reappraisal.settings import DemoJudgeSettings
from tests.evaluation.test_judge_independence import _targets
from tests.policy.fakes import build_tiny_policy

BATCH = 16
JUDGE = DemoJudgeSettings.from_config({"min_margin": 0.3, "num_train_epochs": 1, "learning_rate": 1e-3,
                                      "per_device_train_batch_size": BATCH, "max_length": 256, "save_steps": 100,
                                      "cpu_threads": 1, "both_orders": True})


@pytest.fixture(scope="module")
def trained_judge(tmp_path_factory):
    from reappraisal.evaluation.demo_judge_io import train_demo_judge

    root = tmp_path_factory.mktemp("demo_judge")
    base = build_tiny_policy(root / "base")
    vignettes = pd.DataFrame({"vignette_id": ["v1", "v2", "v3"], "text": ["S one.", "S two.", "S three."]})
    summary = train_demo_judge(str(base), _targets(), vignettes, load_judge("demo-judge"), judge=JUDGE, judge_train_fraction=0.6,
                               dimension="effectiveness", seed=1, out_dir=root / "judge")
    return {"base": base, "out": root / "judge", "summary": summary}


def test_the_loss_is_reported_for_the_whole_epoch(trained_judge):
    summary = trained_judge["summary"]
    assert summary["resumed_from"] is None
    assert summary["steps"] == -(-summary["examples"] // BATCH) >= 2  # one epoch of batches of 16
    assert math.isfinite(summary["train_loss"]) and summary["train_loss"] > 0
    assert json.loads((trained_judge["out"] / "training_summary.json").read_text()) == summary


def test_every_parameter_moved_from_the_judge_base(trained_judge):
    import torch
    from transformers import AutoModelForCausalLM

    before = {n: p.detach() for n, p in AutoModelForCausalLM.from_pretrained(trained_judge["base"]).named_parameters()}
    after = dict(AutoModelForCausalLM.from_pretrained(trained_judge["out"]).named_parameters())
    assert after.keys() == before.keys()
    unchanged = [n for n, p in before.items() if torch.allclose(p, after[n])]
    assert not unchanged, f"the demo judge kept the base's {unchanged}"
