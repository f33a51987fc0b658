"""A stand-in for the ``vllm`` package, so the paper preset's vLLM paths run on the CPU in seconds.

The fake module goes into ``sys.modules`` (TRL's ``is_vllm_available`` then sees vLLM 0.30.0,
requirements-gpu.lock's pin) and replaces the engine at the lowest seam the code above it touches:

- TRL's GRPO generation (the policy arms, the GRM's RL stage): ``vllm.LLM(...)`` in
  ``VLLMGeneration._init_vllm``, ``SamplingParams``, ``LLM.generate``, the weight sync through
  ``llm.llm_engine.model_executor.driver_worker.model_runner.model.load_weights`` and ``reset_prefix_cache``,
  ``sleep``/``wake_up`` with sleep mode;
- the evaluation's backend (``reappraisal.evaluation.generation.generate_vllm``: every arm's answers and
  best-of-N's candidates): ``LLM.chat`` with one ``SamplingParams`` per conversation.

``FakeLLM`` records every engine's settings and calls and answers fixed completions in turn. What it cannot
show: vLLM's own engine (CUDA, NCCL, its ``external_launcher`` executor, its sampler).
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
import types
from types import SimpleNamespace

import pytest


class FakeLLM:
    """``vllm.LLM``: records its settings and calls; ``generate`` answers ``completions`` (token ids) in turn
    with logprob -1 a token, ``chat`` answers ``chat_texts`` in turn."""

    instances: list["FakeLLM"] = []
    completions: list[list[int]] = []
    chat_texts: list[str] = []

    def __init__(self, **kwargs):
        self.kwargs = kwargs
        self.calls: list[tuple] = []
        self.loaded: list[str] = []
        model = SimpleNamespace(load_weights=lambda weights: self.loaded.extend(name for name, _ in weights))
        self.llm_engine = SimpleNamespace(
            model_executor=SimpleNamespace(driver_worker=SimpleNamespace(model_runner=SimpleNamespace(model=model))),
            model_config=SimpleNamespace(max_model_len=4096))
        FakeLLM.instances.append(self)

    def generate(self, prompts, sampling_params=None, use_tqdm=True):
        self.calls.append(("generate", len(prompts)))
        self.prompts = [p["prompt_token_ids"] for p in prompts]
        self.sampling_params = sampling_params
        out = []
        for i, ids in enumerate(self.prompts):
            tokens = FakeLLM.completions[i % len(FakeLLM.completions)]
            logprobs = [{t: SimpleNamespace(logprob=-1.0, rank=1)} for t in tokens]
            out.append(SimpleNamespace(prompt_token_ids=ids,
                                       outputs=[SimpleNamespace(token_ids=list(tokens), logprobs=logprobs)]))
        return out

    def chat(self, messages, sampling_params=None, use_tqdm=True):
        self.calls.append(("chat", len(messages)))
        self.conversations = [list(m) for m in messages]
        self.sampling_params = sampling_params
        out = []
        for i, conversation in enumerate(self.conversations):
            text = FakeLLM.chat_texts[i % len(FakeLLM.chat_texts)]
            out.append(SimpleNamespace(
                prompt_token_ids=list(range(sum(len(m["content"].split()) for m in conversation))),
                outputs=[SimpleNamespace(text=text, token_ids=list(range(len(text.split()))), finish_reason="stop")]))
        return out

    def reset_prefix_cache(self):
        self.calls.append(("reset_prefix_cache",))

    def sleep(self, level):
        self.calls.append(("sleep", level))

    def wake_up(self, tags=None):
        self.calls.append(("wake_up", tuple(tags or ())))


class FakeSamplingParams:
    def __init__(self, **kwargs):
        self.kwargs = kwargs


@pytest.fixture
def fake_vllm(monkeypatch):
    """A ``vllm`` TRL accepts (version 0.30.0, requirements-gpu.lock's), wired into TRL's generation module."""
    import trl.generation.vllm_generation as vg

    module = types.ModuleType("vllm")
    module.__spec__ = importlib.machinery.ModuleSpec("vllm", loader=None)  # find_spec("vllm") answers from it
    module.__version__ = "0.30.0"
    module.LLM, module.SamplingParams, module.RequestOutput = FakeLLM, FakeSamplingParams, SimpleNamespace
    sampling = types.ModuleType("vllm.sampling_params")
    sampling.StructuredOutputsParams = SimpleNamespace
    module.sampling_params = sampling
    monkeypatch.setitem(sys.modules, "vllm", module)
    monkeypatch.setitem(sys.modules, "vllm.sampling_params", sampling)
    # TRL bound these at import when vLLM was there; here trl was imported before the fake existed.
    for name, value in (("LLM", FakeLLM), ("SamplingParams", FakeSamplingParams), ("RequestOutput", SimpleNamespace),
                        ("StructuredOutputsParams", SimpleNamespace)):
        monkeypatch.setattr(vg, name, value, raising=False)
    FakeLLM.instances = []
    environ = dict(os.environ)  # TRL sets RANK, LOCAL_RANK, WORLD_SIZE and MASTER_* for vLLM: put them back
    yield module
    os.environ.clear()
    os.environ.update(environ)
