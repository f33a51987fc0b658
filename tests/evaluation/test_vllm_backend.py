"""On the paper preset the evaluation samples with vLLM: every arm's answers and best-of-N's candidates.

The stand-in for vLLM (:mod:`tests.fake_vllm`) records the engine's settings and the ``LLM.chat`` call and
answers fixed texts; above it run the project's own ``generate_best_of_n`` / ``generate_answers`` with the
paper preset's settings (``evaluation.generation.backend: vllm``, best-of-16 of the committee arm, 40
answers per train scenario and 10 per OOD one). The transformers decoder fails the test if reached. vLLM
seeds each request's sampler apart, so every request carries its own seed: one seed would make a scenario's
16 candidates (and its 40 answers) one sample repeated.
"""

from __future__ import annotations

import numpy as np
import pytest

from reappraisal.config import load_config
from reappraisal.evaluation.seeds import derived_seed
from reappraisal.policy.answer import extract_answer
from reappraisal.policy.prompts import build_messages
from reappraisal.settings import Settings
from tests.fake_vllm import FakeLLM
from tests.policy.fakes import make_vignettes

#: What the fake engine answers, in turn: passing answers of three lengths and one the format gate refuses.
TEXTS = ["<think>They feel hurt.</think>Maybe they were busy.",
         "<think>They feel sad.</think>Perhaps something urgent came up for them that evening.",
         "<think>upset</think>",
         "<think>They feel angry.</think>It could be a misunderstanding."]


@pytest.fixture
def paper():
    return load_config(overrides={"preset": "paper"})


@pytest.fixture
def no_transformers_decoder(monkeypatch):
    import reappraisal.evaluation.answers as answers

    def refuse(*args, **kwargs):
        raise AssertionError("the transformers decoder ran although the paper preset samples with vLLM")

    monkeypatch.setattr(answers, "load_generator", refuse)
    FakeLLM.chat_texts = TEXTS


def check_one_engine_and_one_seed_a_request(paper, model_dir: str, seed: int, conversations: list) -> None:
    (llm,) = FakeLLM.instances
    assert (llm.kwargs["model"], llm.kwargs["seed"]) == (model_dir, seed)
    assert llm.calls == [("chat", len(conversations))] and llm.conversations == conversations
    gen = paper["evaluation"]["generation"]
    assert [p.kwargs for p in llm.sampling_params] == [
        {"n": 1, "temperature": gen["temperature"], "top_p": gen["top_p"], "max_tokens": gen["max_new_tokens"],
         "seed": seed + i} for i in range(len(conversations))]


def test_best_of_n_candidates_come_from_vllm_each_with_its_own_seed(paper, fake_vllm, no_transformers_decoder):
    from reappraisal.evaluation.best_of_n_answers import generate_best_of_n
    from reappraisal.evaluation.systems import best_of_n_systems

    class LengthScorer:  # the ensemble's place: a longer answer scores higher
        def score(self, scenarios, answers):
            return np.array([len(a) for a in answers], dtype=float)

    class Scorers:
        def ensemble(self):
            return LengthScorer()

    assert paper["evaluation"]["generation"]["backend"] == "vllm"
    system = best_of_n_systems(Settings.from_params(paper))["committee-seed0-bon16-ensemble"]
    table, candidates, compute = generate_best_of_n(system, 2, "policy/committee-seed0", make_vignettes(),
                                                    Settings.from_params(paper), Scorers())
    n = system.n
    assert n == 16 and compute["candidates"] == len(candidates) == n * len(table)
    per_pool = paper["evaluation"]["answers_per_scenario"]
    assert table.groupby("pool").size().to_dict() == {
        pool: per_pool[pool] * k for pool, k in table.drop_duplicates("vignette_id")["pool"].value_counts().items()}
    scenarios = make_vignettes().set_index("vignette_id")["text"]
    conversations = [build_messages(scenarios[v]) for v in candidates["vignette_id"]]
    check_one_engine_and_one_seed_a_request(paper, "policy/committee-seed0",
                                            derived_seed(paper["seed"], "generate", system.name, 2), conversations)
    # N candidates of one answer in a row, each the engine's text in turn; the longest passing one is kept
    assert candidates["answer"].tolist() == [extract_answer(TEXTS[i % len(TEXTS)]) for i in range(len(candidates))]
    assert all(group == list(range(n)) for group in candidates.groupby(["vignette_id", "sample"])["candidate"].apply(list))
    kept = candidates[candidates["kept"]]
    assert len(kept) == len(table) and set(kept["candidate"]) == {1}
    assert set(table["answer"]) == {extract_answer(TEXTS[1])}


def test_an_arms_answers_come_from_vllm_each_with_its_own_seed(paper, fake_vllm, no_transformers_decoder):
    from reappraisal.evaluation.answers import generate_answers

    table = generate_answers("committee-seed0", 1, "policy/committee-seed0", make_vignettes(),
                             Settings.from_params(paper), pools=["train"])
    per_scenario = paper["evaluation"]["answers_per_scenario"]["train"]
    assert table.groupby("vignette_id").size().eq(per_scenario).all()
    scenarios = make_vignettes().set_index("vignette_id")["text"]
    check_one_engine_and_one_seed_a_request(paper, "policy/committee-seed0",
                                            derived_seed(paper["seed"], "generate", "committee-seed0", 1),
                                            [build_messages(scenarios[v]) for v in table["vignette_id"]])
    assert table["raw_text"].tolist() == [TEXTS[i % len(TEXTS)] for i in range(len(table))]
