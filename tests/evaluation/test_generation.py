"""Answer generation with a real (tiny, random-init) Qwen3 policy loaded by from_pretrained."""

from __future__ import annotations

import pandas as pd
import pytest

from reappraisal.evaluation.answers import generate_answers
from reappraisal.evaluation.generation import Decoding, generate_hf, load_generator, render_prompts
from reappraisal.policy.prompts import build_messages
from reappraisal.settings import Settings
from tests.policy.fakes import build_tiny_policy, make_vignettes

from .helpers import demo_params


@pytest.fixture(scope="module")
def tiny_policy(tmp_path_factory):
    return str(build_tiny_policy(tmp_path_factory.mktemp("policy") / "model"))


def _params(**gen):
    return Settings.from_params(demo_params(answers_per_scenario={"train": 3, "ood": 1},
                       generation={"backend": "transformers", "max_new_tokens": 12, "temperature": 1.0, "top_p": 1.0,
                                   "batch_size": 4, "cpu_threads": 1, **gen}))


def test_three_runs_are_fresh_samples_and_a_rerun_is_identical(tiny_policy):
    vignettes = make_vignettes()
    runs = {r: generate_answers("committee", r, tiny_policy, vignettes, _params()) for r in (1, 2, 3)}
    texts = {r: tuple(t["raw_text"]) for r, t in runs.items()}
    assert len(set(texts.values())) == 3
    assert len({int(t["seed"].iloc[0]) for t in runs.values()}) == 3
    again = generate_answers("committee", 1, tiny_policy, vignettes, _params())
    pd.testing.assert_frame_equal(runs[1], again)
    # answers per scenario as configured, for both pools of an arm
    counts = runs[1].groupby("pool")["vignette_id"].value_counts()
    assert set(counts.loc["train"]) == {3} and set(counts.loc["ood"]) == {1}


def test_records_keep_raw_text_finish_reason_token_counts_and_format_flags(tiny_policy):
    table = generate_answers("committee", 1, tiny_policy, make_vignettes(), _params(max_new_tokens=5))
    assert (table["completion_tokens"] <= 5).all() and (table["prompt_tokens"] > 0).all()
    truncated = table["finish_reason"] == "length"
    assert truncated.any() and (table["truncated"] == truncated).all()
    assert (table.loc[table["completion_tokens"] < 5, "finish_reason"] == "stop").all()
    # the answer is the text after </think>; a completion that never closes its thinking has an empty answer
    no_close = ~table["raw_text"].str.contains("</think>", regex=False)
    assert (table.loc[no_close, "answer"] == "").all() and table.loc[no_close, "empty"].all()
    assert table["answer_id"].is_unique


def test_batched_greedy_generation_equals_one_prompt_at_a_time(tiny_policy):
    model, tokenizer = load_generator(tiny_policy)
    vignettes = make_vignettes()
    prompts = render_prompts(tokenizer, [build_messages(t) for t in vignettes["text"]])
    greedy = Decoding(max_new_tokens=10, temperature=0.0, top_p=1.0)
    batched = generate_hf(model, tokenizer, prompts, greedy, batch_size=8)
    single = [generate_hf(model, tokenizer, [p], greedy, batch_size=1)[0] for p in prompts]
    assert [c.text for c in batched] == [c.text for c in single]
    assert [c.completion_tokens for c in batched] == [c.completion_tokens for c in single]


def test_logprob_judge_reads_the_verdict_from_the_two_letters_probabilities(tiny_policy, tmp_path):
    import torch

    from reappraisal.evaluation.backends import TransformersBackend
    from reappraisal.evaluation.judge_spec import load_judge

    from .helpers import write_judge

    write_judge(tmp_path, "lp", model=tiny_policy, decoding={"logprob": True, "max_new_tokens": 2})
    spec = load_judge("lp", tmp_path)
    backend = TransformersBackend(spec)
    convs = [spec.messages(t, "Maybe they were busy.", "You matter.") for t in make_vignettes()["text"][:5]]
    replies = [r for _, r in sorted(backend.replies(convs))]
    assert all(spec.parse(r) in {"A", "B"} for r in replies)
    # P(A) in each reply equals the softmax over the two letters' logits after the prefill, computed here directly
    model, tok = backend.model, backend.tokenizer
    for conv, reply in zip(convs, replies):
        text = render_prompts(tok, [conv])[0] + spec.prefill
        ids_a = tok(text + " A", add_special_tokens=False)["input_ids"]
        ids_b = tok(text + " B", add_special_tokens=False)["input_ids"]
        n = next(i for i, (x, y) in enumerate(zip(ids_a, ids_b)) if x != y)
        with torch.no_grad():
            logits = model(torch.tensor([ids_a[:n]])).logits[0, -1]
        pair = torch.softmax(logits[[ids_a[n], ids_b[n]]], dim=0)[0].item()
        assert float(reply.split("P(A)=")[1].rstrip("]")) == pytest.approx(pair, abs=1e-4)
        assert spec.parse(reply) == ("A" if pair >= 0.5 else "B")
    assert len(replies) == len(convs)


def test_the_vllm_path_builds_its_sampling_parameters_and_says_when_vllm_is_missing():
    from reappraisal.errors import ConfigError
    from reappraisal.evaluation.generation import generate_vllm, vllm_sampling_kwargs

    kwargs = vllm_sampling_kwargs(Decoding(max_new_tokens=2048, temperature=1.0, top_p=0.95), seed=7)
    assert kwargs == {"n": 1, "temperature": 1.0, "top_p": 0.95, "max_tokens": 2048, "seed": 7}
    try:
        import vllm  # noqa: F401  (only whether it imports matters here)
    except ImportError:
        with pytest.raises(ConfigError, match="needs the `vllm` package"):
            generate_vllm("some/model", [build_messages("s")], Decoding(8, 0.0, 1.0), seed=1)
    else:  # pragma: no cover - only on a machine with vLLM
        pytest.skip("vllm is installed: the missing-package message does not apply")
