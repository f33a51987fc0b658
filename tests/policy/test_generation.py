"""GRPO's completions through the project's decoder: the tokens TRL's sampling would draw from the same
uniforms, reproducible from the step alone, and TRL's own path for settings the decoder does not cover."""

from __future__ import annotations

import pytest
import torch

from reappraisal.policy.generation import completion_seed, decoder_applies, with_project_decoder


def _trainer(tmp_path, warm_policy, vignettes, **overrides):
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from reappraisal.policy.prompts import prompt_rows

    settings = dict(output_dir=str(tmp_path / "run"), use_cpu=True, num_generations=4, per_device_train_batch_size=8,
                    max_completion_length=24, temperature=0.9, top_p=0.95, seed=5, report_to=[], max_steps=1,
                    disable_tqdm=True)
    args = GRPOConfig(**{**settings, **overrides})
    rows = prompt_rows(vignettes[vignettes["pool"] == "train"].to_dict("records"))

    def length_reward(completions, **_):
        return [float(len(c[0]["content"]) if isinstance(c, list) else len(c)) for c in completions]

    return with_project_decoder(GRPOTrainer)(model=str(warm_policy), reward_funcs=[length_reward], args=args,
                                              train_dataset=Dataset.from_list(rows),
                                              processing_class=AutoTokenizer.from_pretrained(warm_policy))


def _prompt_ids(trainer, vignettes, generations=4):
    from reappraisal.policy.prompts import build_messages

    texts = vignettes[vignettes["pool"] == "train"]["text"].tolist()[:2]
    ids = [trainer.processing_class.apply_chat_template(build_messages(t), tokenize=True, add_generation_prompt=True)
           for t in texts]
    ids = [i["input_ids"] if isinstance(i, dict) or hasattr(i, "keys") else i for i in ids]
    return [list(i) for i in ids for _ in range(generations)]


def _reference(trainer, prompt_ids):
    """``model.generate`` (finished rows fed padding to the end) over the same left-padded batch with the
    same inverse-CDF draws from the seed of the trainer's step: what the decoder must reproduce token for
    token, each completion cut after its first stop token."""
    from transformers import GenerationConfig

    from reappraisal.batched_generation import sampling_processors

    model, tok = trainer.model, trainer.processing_class
    width = max(len(p) for p in prompt_ids)
    input_ids = torch.tensor([[tok.pad_token_id] * (width - len(p)) + p for p in prompt_ids])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompt_ids])
    generator = torch.Generator().manual_seed(completion_seed(trainer.args.seed, trainer.state.global_step, 0))
    config = GenerationConfig(do_sample=False, max_new_tokens=trainer.max_completion_length,
                              pad_token_id=tok.pad_token_id, eos_token_id=trainer.eos_token_ids)
    with torch.no_grad():
        out = model.generate(input_ids=input_ids, attention_mask=mask, generation_config=config,
                             logits_processor=sampling_processors(trainer.temperature, trainer.top_p, generator))
    rows = []
    for row in out[:, width:].tolist():
        end = next((j for j, t in enumerate(row) if t in trainer.eos_token_ids), None)
        rows.append(row[: end + 1] if end is not None else row)
    return rows


def test_completions_are_the_tokens_generate_draws_from_the_steps_uniforms(tmp_path, warm_policy, vignettes):
    trainer = _trainer(tmp_path, warm_policy, vignettes)
    prompts = _prompt_ids(trainer, vignettes)
    expected = _reference(trainer, prompts)
    got, logprobs = trainer._generate_single_turn(prompts, None, {}, 4)
    assert logprobs is None and got == expected
    assert all(1 <= len(c) <= 24 for c in got) and len({tuple(c) for c in got}) >= 3  # sampled, varied


def test_a_steps_completions_depend_on_the_seed_and_step_not_on_torchs_global_random_state(
        tmp_path, warm_policy, vignettes):
    """What makes a resumed run draw what an unbroken one draws: nothing but (seed, step, process)."""
    trainer = _trainer(tmp_path, warm_policy, vignettes)
    prompts = _prompt_ids(trainer, vignettes)
    torch.manual_seed(1)
    first, _ = trainer._generate_single_turn(prompts, None, {}, 4)
    torch.manual_seed(2)
    torch.rand(1000)
    assert trainer._generate_single_turn(prompts, None, {}, 4)[0] == first
    trainer.state.global_step += 1
    assert trainer._generate_single_turn(prompts, None, {}, 4)[0] != first
    seeds = {completion_seed(s, step, p) for s in range(3) for step in range(200) for p in range(4)}
    assert len(seeds) == 3 * 200 * 4


@pytest.mark.parametrize("setting", [{"top_k": 5}, {"min_p": 0.1}, {"repetition_penalty": 1.2},
                                     {"generation_kwargs": {"num_beams": 1}}])
def test_settings_the_decoder_does_not_reproduce_go_through_trls_own_sampling(setting, tmp_path, warm_policy,
                                                                                vignettes):
    from trl import GRPOTrainer

    trainer = _trainer(tmp_path, warm_policy, vignettes, **setting)
    assert not decoder_applies(trainer.args, is_vlm=False)
    prompts = _prompt_ids(trainer, vignettes)
    torch.manual_seed(3)
    got = trainer._generate_single_turn(prompts, None, {}, 4)
    torch.manual_seed(3)
    assert got == GRPOTrainer._generate_single_turn(trainer, prompts, None, {}, 4)
    assert decoder_applies(_trainer(tmp_path, warm_policy, vignettes).args, is_vlm=False)
