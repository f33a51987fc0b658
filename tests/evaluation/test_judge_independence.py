"""The demo judge learns only from human pairs the reward path never sees; reward-path verdict bookkeeping."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from transformers import AutoTokenizer

from reappraisal.evaluation.demo_judge_io import training_examples, verdict_completion
from reappraisal.evaluation.human_pairs import human_pairs
from reappraisal.evaluation.judge_spec import load_judge
from reappraisal.settings import DemoJudgeSettings
from reappraisal.evaluation.reward_path import ensemble_verdicts
from tests.policy.fakes import build_tiny_policy


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    return AutoTokenizer.from_pretrained(str(build_tiny_policy(tmp_path_factory.mktemp("tok") / "m")))


def _targets():
    rng = np.random.default_rng(0)
    rows = []
    for v in ("v1", "v2", "v3"):
        for split, n in (("train", 12), ("val", 10)):
            for i in range(n):
                rows.append({"reappraisal_id": f"{v}-{split}-{i}", "vignette_id": v, "author_type": "human",
                             "split": split, "text": f"{split} text {v} {i}", "z_effectiveness": rng.normal()})
        rows.append({"reappraisal_id": f"{v}-gpt4", "vignette_id": v, "author_type": "gpt4", "split": "heldout",
                     "text": f"reference {v}", "z_effectiveness": 2.0})
    return pd.DataFrame(rows)


def test_demo_judge_examples_come_only_from_the_judge_half_of_validation(tokenizer):
    targets = _targets()
    spec = load_judge("demo-judge")
    pairs = human_pairs(targets, dimension="effectiveness", judge_train_fraction=0.6, seed=5)
    scenarios = {v: f"Scenario {v}" for v in targets["vignette_id"].unique()}
    examples = training_examples(pairs, scenarios, spec, tokenizer, min_margin=0.3)
    assert examples["prompt"] and len(examples["prompt"]) == len(examples["completion"])
    judge_half = pairs[pairs["half"] == "judge_train"]
    allowed = set(judge_half["first"]) | set(judge_half["second"])
    forbidden = set(targets.loc[targets["split"] != "val", "text"]) | set(
        pairs.loc[pairs["half"] == "calibration", "first"]) | set(pairs.loc[pairs["half"] == "calibration", "second"])
    used = {t for t in targets["text"] if any(t in p for p in examples["prompt"])}
    assert used and used <= allowed and not used & forbidden
    # both orders of every pair, with the verdict following the human margin
    assert sum(c.endswith("A") for c in examples["completion"]) == len(examples["completion"]) // 2
    once = training_examples(pairs, scenarios, spec, tokenizer, min_margin=0.3, both_orders=False)
    assert len(once["prompt"]) * 2 == len(examples["prompt"]) and set(once["prompt"]) <= set(examples["prompt"])


def test_the_taught_reply_parses_as_the_intended_verdict(tokenizer):
    spec = load_judge("demo-judge")
    prompt = tokenizer.apply_chat_template(spec.messages("s", "a", "b"), tokenize=False, add_generation_prompt=True)
    for label in ("A", "B"):
        assert spec.parse(verdict_completion(prompt, label)) == label
        if spec.prefill:
            assert spec.parse(spec.prefill + verdict_completion(prompt + spec.prefill, label, spec.prefill)) == label


def test_ensemble_verdicts_in_both_orders_name_the_higher_scored_answer():
    out = ensemble_verdicts(np.array([0.9, 0.1, 0.5]), np.array([0.2, 0.4, 0.5]))
    assert out == {"AB": ["A", "B", "tie"], "BA": ["B", "A", "tie"]}


def test_a_killed_demo_judge_training_resumes_from_its_last_complete_checkpoint(tmp_path, tokenizer):
    from transformers import TrainerCallback

    from reappraisal.evaluation.demo_judge_io import train_demo_judge

    base = build_tiny_policy(tmp_path / "base")
    targets = _targets()
    vignettes = pd.DataFrame({"vignette_id": ["v1", "v2", "v3"], "text": ["S one.", "S two.", "S three."]})
    cfg = dict(judge=DemoJudgeSettings.from_config({"min_margin": 0.3, "num_train_epochs": 2, "learning_rate": 1e-3,
                                                    "per_device_train_batch_size": 4, "max_length": 256, "save_steps": 2,
                                                    "cpu_threads": 1, "both_orders": True}),
               judge_train_fraction=0.6)

    class Kill(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            if state.global_step == 5:
                raise KeyboardInterrupt("killed")

    out = tmp_path / "judge"
    with pytest.raises(KeyboardInterrupt):
        train_demo_judge(str(base), targets, vignettes, load_judge("demo-judge"), **cfg, dimension="effectiveness",
                         seed=1, out_dir=out, callbacks=[Kill()])
    assert not out.exists() and (tmp_path / ".judge.work" / "checkpoint-4").is_dir()
    summary = train_demo_judge(str(base), targets, vignettes, load_judge("demo-judge"), **cfg,
                               dimension="effectiveness", seed=1, out_dir=out)
    assert summary["resumed_from"] == "checkpoint-4"
    n_steps = -(-summary["examples"] // 4) * 2
    assert summary["steps"] == n_steps and summary["train_loss"] > 0
    # the killed segment counts up to its last checkpoint (step 4; step 5 was lost with the kill)
    assert [(s["resumed_from"], s["start_step"], s["end_step"], s["completed"]) for s in summary["segments"]] == [
        (None, 0, 4, False), ("checkpoint-4", 4, n_steps, True)]
    assert summary["train_seconds"] == pytest.approx(sum(s["seconds"] for s in summary["segments"]), abs=1e-3)
    assert (out / "config.json").is_file() and (out / "training_summary.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base", "judge"]  # no work folder, no temporaries
