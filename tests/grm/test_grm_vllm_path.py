"""The paper preset's GRM RL stage samples through TRL's vLLM colocate path, proven on the CPU with a stand-in.

The stand-in (:mod:`tests.fake_vllm`) replaces vLLM's engine where TRL calls it; above it run ``train_grm``
with the paper preset's ``grm.vllm`` section, TRL's ``GRPOTrainer`` and the ±1 verdict reward. The model's
own ``generate`` fails the test if the RL stage reaches it. The demo leaves ``grm.vllm`` off, so its GRPO
keywords (and its bytes) are those of the trained model's own decoding.
"""

from __future__ import annotations

import pytest

from reappraisal.config import load_config, with_defaults
from reappraisal.settings import GrmSettings
from reappraisal.training.vllm_colocate import PROMPT_ROOM, vllm_settings
from tests.fake_vllm import FakeLLM

from .conftest import DATA, tiny_cfg

#: What the fake engine answers, in turn: a right-or-wrong verdict, the other verdict, no verdict.
REPLIES = ["Slot A offers another reading.\nANSWER: A", "Slot B is kinder.\nANSWER: B", "It depends."]


def test_the_paper_preset_samples_the_grm_rl_stage_with_vllm_and_the_demo_does_not():
    paper, demo = (load_config(overrides={"preset": preset})["grm"] for preset in ("paper", "demo"))
    assert paper["vllm"] == load_config(overrides={"preset": "paper"})["policy"]["vllm"]  # one set of settings
    assert vllm_settings(GrmSettings.from_config(paper).vllm, max_completion_length=paper["grpo"]["max_completion_length"]) == {
        "use_vllm": True, "vllm_mode": "colocate", "vllm_gpu_memory_utilization": 0.3,
        "vllm_tensor_parallel_size": 1, "vllm_max_model_length": 1024 + PROMPT_ROOM, "vllm_enable_sleep_mode": False}
    assert not demo["vllm"]["enabled"] and vllm_settings(GrmSettings.from_config(demo).vllm, max_completion_length=1024) == {}
    assert with_defaults("grm", {})["vllm"] == demo["vllm"]  # the demo writes no grm.vllm of its own


@pytest.fixture
def no_model_generate(monkeypatch):
    from transformers.generation.utils import GenerationMixin

    def refuse(*args, **kwargs):
        raise AssertionError("the GRM's own generate ran although its RL stage samples with vLLM")

    monkeypatch.setattr(GenerationMixin, "generate", refuse)


def test_one_grm_rl_step_goes_through_trls_vllm_colocate_path(tables, tiny_base, tmp_path, fake_vllm,
                                                              no_model_generate, monkeypatch):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import reappraisal.grm.train_io as train_io

    tok = AutoTokenizer.from_pretrained(tiny_base)
    FakeLLM.completions = [tok(r, add_special_tokens=False)["input_ids"] + [tok.eos_token_id] for r in REPLIES]
    rewarded: list[tuple[list[str], list[str], list[float]]] = []

    def verdict_reward(prompts, completions, completion_ids=None, *, correct, **kwargs):
        rewards = train_io_reward(prompts, completions, completion_ids, correct=correct, **kwargs)
        rewarded.append((list(completions), list(correct), rewards))
        return rewards

    train_io_reward = train_io.trl_verdict_reward
    monkeypatch.setattr(train_io, "trl_verdict_reward", verdict_reward)
    grm_vllm = load_config(overrides={"preset": "paper"})["grm"]["vllm"]
    cfg = {**tiny_cfg(sft={"num_train_epochs": 1, "max_pairs": 4}, grpo={"max_steps": 1, "num_generations": 3}),
           "vllm": grm_vllm}
    summary = train_io.train_grm(str(tiny_base), tables["pairs"], tables["targets"], tables["vignettes"], grm=GrmSettings.from_config(cfg),
                                 data=DATA, seed=0, out_dir=tmp_path / "grm", sft_out_dir=tmp_path / "grm_sft")
    assert summary["grpo"]["global_step"] == 1

    (llm,) = FakeLLM.instances
    # one engine with the preset's settings, in-process beside the trainer, loading the stage-1 model
    assert llm.kwargs["model"].endswith("sft_model")
    assert (llm.kwargs["gpu_memory_utilization"], llm.kwargs["tensor_parallel_size"], llm.kwargs["enable_sleep_mode"]) == (
        0.3, 1, False)
    assert llm.kwargs["distributed_executor_backend"] == "external_launcher"
    assert llm.kwargs["max_model_len"] == cfg["grpo"]["max_completion_length"] + PROMPT_ROOM
    # the trained weights went into the engine before it sampled (2 prompts x 3 replies), then its cache reset
    names = [n for n, _ in AutoModelForCausalLM.from_pretrained(tmp_path / "grm_sft").named_parameters()]
    assert llm.loaded == names
    assert llm.calls == [("reset_prefix_cache",), ("generate", 2 * 3)]
    assert len({tuple(p) for p in llm.prompts}) == 2 and all(llm.prompts.count(p) == 3 for p in llm.prompts)
    params = llm.sampling_params.kwargs
    assert (params["n"], params["max_tokens"], params["temperature"]) == (1, cfg["grpo"]["max_completion_length"],
                                                                         cfg["grpo"]["temperature"])
    # the verdict reward scored exactly the engine's replies
    ((completions, correct, rewards),) = rewarded
    assert completions == REPLIES * 2
    assert rewards == [1.0 if (r.endswith("ANSWER: A") and c == "A") or (r.endswith("ANSWER: B") and c == "B")
                       else -1.0 for r, c in zip(completions, correct)]
