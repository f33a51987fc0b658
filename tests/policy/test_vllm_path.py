"""The paper preset's GRPO decodes through TRL's vLLM colocate path, proven on the CPU with a stand-in for vLLM.

A fake ``vllm`` module (:mod:`tests.fake_vllm`: in ``sys.modules``, so TRL's ``is_vllm_available`` sees it;
its ``LLM`` records every call and returns fixed completions) replaces the engine at the lowest seam TRL
touches. Everything above that seam is TRL's and the project's own code: ``train_policy`` with the paper
preset's ``policy.vllm`` section, ``GRPOTrainer``, the project's ``_generate_single_turn`` override (which
must hand over to TRL), the committee reward. What the fake cannot show: vLLM's own engine (CUDA, NCCL, its
``external_launcher`` executor). The GRM's RL stage and the evaluation's answers have theirs in
``tests/grm/test_grm_vllm_path.py`` and ``tests/evaluation/test_vllm_backend.py``.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from reappraisal.config import load_config
from reappraisal.policy.arms import ArmSpec
from reappraisal.policy.committee import CommitteeWeights, FormatGate
from reappraisal.policy.reward_adapter import CommitteeReward
from reappraisal.policy.train_io import grpo_settings, train_policy
from reappraisal.settings import PolicySettings

from tests.fake_vllm import FakeLLM

from .fakes import FakeGRM, FakeRM

COMMITTEE = ArmSpec("committee", CommitteeWeights(0.5, 0.5, 0.5))
#: What the fake engine answers, in turn (each ends with the tokenizer's end of text).
ANSWERS = [
    "<think>They feel sadness.</think>Maybe they were overwhelmed and forgot.",
    "<think>They feel anger.</think>Perhaps something urgent came up for them. You can ask them calmly tomorrow.",
    "<think>upset</think>",
    "<think>They feel fear.</think>It could be that they did not mean to hurt you. This does not define your "
    "friendship. They value you more than this moment shows. One more sentence.",
]


def paper_vllm() -> dict:
    return load_config(overrides={"preset": "paper"})["policy"]["vllm"]


@pytest.fixture
def no_project_decoder(monkeypatch):
    """The project's decoder fails the test if anything reaches it."""
    import reappraisal.batched_generation as bg

    def refuse(*args, **kwargs):
        raise AssertionError("the project's decoder ran although GRPO generates with vLLM")

    monkeypatch.setattr(bg, "decode_batch", refuse)


def test_the_paper_preset_trains_with_vllm_colocate_and_the_demo_does_not(tmp_path):
    paper = load_config(overrides={"preset": "paper"})["policy"]
    s = grpo_settings(PolicySettings.from_config(paper), seed=0, output_dir=tmp_path, bf16_capable=True)
    assert {k: s[k] for k in s if k.startswith(("use_vllm", "vllm_"))} == {
        "use_vllm": True, "vllm_mode": "colocate", "vllm_gpu_memory_utilization": 0.3,
        "vllm_tensor_parallel_size": 1, "vllm_max_model_length": 2048 + 1024, "vllm_enable_sleep_mode": False}
    demo = load_config()["policy"]
    assert not demo["vllm"]["enabled"]
    assert not any(k.startswith(("use_vllm", "vllm_")) for k in grpo_settings(PolicySettings.from_config(demo), seed=0, output_dir=tmp_path))


def run_one_step(tmp_path, tiny_policy, vignettes, vllm: dict) -> tuple:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_policy)
    FakeLLM.completions = [tok(a, add_special_tokens=False)["input_ids"] + [tok.eos_token_id] for a in ANSWERS]
    policy = dict(learning_rate=1e-4, beta=0.04, num_generations=4, max_completion_length=48,
                  per_device_train_batch_size=8, max_steps=1, save_steps=1, use_cpu=True, bf16=False,
                  format_gate={"max_sentences": 2, "penalty": -3.0}, health={"window": 1}, vllm=vllm)
    out = tmp_path / "committee"
    log = tmp_path / "rewards.jsonl"
    health = train_policy(arm=COMMITTEE, policy=PolicySettings.from_config(policy), model_dir=tiny_policy, vignettes=vignettes, out_dir=out,
                          scorers=lambda device: (FakeRM(), FakeGRM()), seed=0, rewards_log=log)
    return tok, policy, out, [json.loads(line) for line in log.read_text().splitlines()], health


def test_one_grpo_step_goes_through_trls_vllm_colocate_path(tmp_path, tiny_policy, vignettes, fake_vllm,
                                                             no_project_decoder):
    from transformers import AutoModelForCausalLM

    tok, policy, out, lines, health = run_one_step(tmp_path, tiny_policy, vignettes, paper_vllm())
    assert health["global_step"] == 1
    (llm,) = FakeLLM.instances
    # the engine got the preset's settings, in-process beside the trainer (TRL's colocate mode)
    assert llm.kwargs["model"] == str(tiny_policy)
    assert (llm.kwargs["gpu_memory_utilization"], llm.kwargs["tensor_parallel_size"], llm.kwargs["enable_sleep_mode"]) == (
        0.3, 1, False)
    assert llm.kwargs["distributed_executor_backend"] == "external_launcher"
    assert llm.kwargs["max_model_len"] == policy["max_completion_length"] + 1024  # not the model's own context
    # the policy's weights were pushed into the engine before it generated, then the prefix cache reset
    names = [n for n, _ in AutoModelForCausalLM.from_pretrained(tiny_policy).named_parameters()]
    assert llm.loaded == names
    assert llm.calls == [("reset_prefix_cache",), ("generate", 8)]
    # one completion per prompt row (each prompt repeated num_generations times), the GRPO sampling settings
    assert len({tuple(p) for p in llm.prompts}) == 2 and all(llm.prompts.count(p) == 4 for p in llm.prompts)
    assert llm.sampling_params.kwargs["n"] == 1
    assert llm.sampling_params.kwargs["max_tokens"] == policy["max_completion_length"]
    assert llm.sampling_params.kwargs["temperature"] == 1.0 and llm.sampling_params.kwargs["top_p"] == 1.0

    # the committee rewarded exactly the engine's completions, as it would any others
    (line,) = lines
    completions = FakeLLM.completions * 2
    texts = [tok.decode(ids, skip_special_tokens=True) for ids in completions]
    expected = CommitteeReward(weights=COMMITTEE.weights, gate=FormatGate(2, -3.0), num_generations=4,
                               rm_scorer=FakeRM(), grm_scorer=FakeGRM(), tokenizer=tok, process_info=lambda: (0, 1))
    rewards = expected([None] * 8, texts, completions, vignette_id=line["vignette_id"],
                       scenario=[vignettes.set_index("vignette_id").loc[v, "text"] for v in line["vignette_id"]])
    assert line["answer"] == expected.last_answers
    assert line["answer"][:4] == ["Maybe they were overwhelmed and forgot.",
                                  "Perhaps something urgent came up for them. You can ask them calmly tomorrow.", "",
                                  expected.last_answers[3]]
    assert line["passed"] == [True, True, False, False] * 2
    np.testing.assert_allclose(line["reward"], rewards)
    logged = pd.read_csv(out / "training_log.csv")
    assert logged["reward"].iloc[0] == pytest.approx(float(np.mean(rewards)), abs=1e-6)


def test_sleep_mode_wakes_the_engine_around_each_generation(tmp_path, tiny_policy, vignettes, fake_vllm,
                                                              no_project_decoder):
    run_one_step(tmp_path, tiny_policy, vignettes, dict(paper_vllm(), enable_sleep_mode=True))
    (llm,) = FakeLLM.instances
    assert llm.kwargs["enable_sleep_mode"] is True
    assert llm.calls == [("sleep", 2), ("wake_up", ("weights",)), ("reset_prefix_cache",), ("wake_up", ("kv_cache",)),
                         ("generate", 8), ("sleep", 2)]
