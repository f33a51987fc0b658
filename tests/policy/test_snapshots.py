"""Weights kept at chosen steps of a GRPO run: the model the run had after that step, published beside the
final model, and kept across a kill."""

import json

import pytest
from safetensors.torch import load_file

from reappraisal.errors import PipelineInputError
from reappraisal.policy.snapshots import snapshots
from reappraisal.policy.train_io import train_policy

from .test_train import COMMITTEE, fakes, policy_settings


def _weights(folder):
    return load_file(str(folder / "model.safetensors"))


def test_a_kept_step_is_the_model_a_run_that_stopped_there_ends_with(tmp_path, warm_policy, vignettes):
    full = tmp_path / "full"
    train_policy(arm=COMMITTEE, policy=policy_settings(max_steps=2, save_steps=1, snapshot_steps=[1]),
                 model_dir=warm_policy, vignettes=vignettes, out_dir=full, scorers=fakes, seed=0)
    short = tmp_path / "short"
    train_policy(arm=COMMITTEE, policy=policy_settings(max_steps=1, save_steps=1), model_dir=warm_policy,
                 vignettes=vignettes, out_dir=short, scorers=fakes, seed=0)
    kept = snapshots(full / "steps")
    assert list(kept) == [1]
    assert json.loads((full / "steps" / "STEPS.json").read_text()) == {"steps": [1]}
    step1, final, stopped = _weights(kept[1]), _weights(full / "model"), _weights(short / "model")
    assert step1.keys() == stopped.keys()
    assert all((step1[k] == stopped[k]).all() for k in step1)  # the weights after step 1, bit for bit
    assert any((step1[k] != final[k]).any() for k in step1)  # and not the final model's
    # without kept steps the folder holds only its manifest
    assert json.loads((short / "steps" / "STEPS.json").read_text()) == {"steps": []}


def test_a_kept_step_beyond_the_run_is_refused_naming_the_setting(tmp_path, warm_policy, vignettes):
    with pytest.raises(PipelineInputError, match="policy.snapshot_steps"):
        train_policy(arm=COMMITTEE, policy=policy_settings(max_steps=2, snapshot_steps=[3]), model_dir=warm_policy,
                     vignettes=vignettes, out_dir=tmp_path / "x", scorers=fakes, seed=0)
