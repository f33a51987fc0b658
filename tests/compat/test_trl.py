"""What ``reappraisal.compat.trl`` relies on still holds for the installed TRL (each test names its seam)."""

from __future__ import annotations

import ast
import inspect
import textwrap
from types import SimpleNamespace

import pytest
import torch
import trl.trainer.utils as trl_utils
from trl import GRPOTrainer, RewardTrainer, SFTTrainer
from trl.trainer.utils import RepeatSampler

from reappraisal.compat.trl import (EpochRepeatSampler, epoch_repeat_sampler, grpo_left_padded_prompts,
                                    repeat_sampler_permutation, with_completion_sampler, with_reward_forward,
                                    with_train_sampler)
from reappraisal.compat.version_guard import SeamBroken


def _tree(obj) -> ast.AST:
    return ast.parse(textwrap.dedent(inspect.getsource(obj)))


def _parameters(function) -> list[tuple[str, object]]:
    return [(p.name, p.default) for p in inspect.signature(function).parameters.values()]


def _calls(tree: ast.AST, name: str) -> list[ast.Call]:
    """Calls in ``tree`` whose function's source is ``name`` (``self._dist.summon_full_params``)."""
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func) == name]


def _keywords(call: ast.Call) -> dict[str, str]:
    return {k.arg: ast.unparse(k.value) for k in call.keywords}


# -- GRPO's completions ------------------------------------------------------------------------------------------


def test_generate_single_turn_takes_the_arguments_the_override_passes():
    empty = inspect.Parameter.empty
    assert _parameters(GRPOTrainer._generate_single_turn) == [
        ("self", empty), ("prompt_ids", empty), ("images", empty), ("multimodal_fields", empty),
        ("num_generations", empty), ("has_tool_images", False)]


def test_the_transformers_path_pads_and_generates_as_the_seams_rebuild_it():
    """``grpo_left_padded_prompts`` and ``grpo_generation_model`` rebuild the regular path of
    ``_generate_single_turn``: left padding with ``_tokenizer``'s pad id, generation under
    ``unwrap_model_for_generation``, ``no_grad`` and ``_dist.summon_full_params``; it returns logprobs None."""
    tree = _tree(GRPOTrainer._generate_single_turn)
    pads = [_keywords(c) for c in _calls(tree, "pad")]
    assert {"padding_value": "self._tokenizer.pad_token_id", "padding_side": "'left'",
            "pad_to_multiple_of": "self.pad_to_multiple_of"} in pads
    assert {"padding_value": "0", "padding_side": "'left'", "pad_to_multiple_of": "self.pad_to_multiple_of"} in pads
    unwraps = [_keywords(c) for c in _calls(tree, "unwrap_model_for_generation")]
    assert any(k.get("gather_deepspeed3_params") == "self.args.ds3_gather_for_generation"
               and k.get("gradient_checkpointing_kwargs") == "self.args.gradient_checkpointing_kwargs" for k in unwraps)
    summons = _calls(tree, "self._dist.summon_full_params")
    assert summons and all(ast.unparse(c) == "self._dist.summon_full_params(self.model_wrapped, recurse=False)"
                           for c in summons)
    assert "logprobs = None  # not used in this case" in inspect.getsource(GRPOTrainer._generate_single_turn)


def test_the_trainer_keeps_its_tokenizer_modality_and_distributed_backend_where_the_seams_read_them():
    from trl.distributed import DistributedBackend

    init = _tree(GRPOTrainer.__init__)
    assigned = {ast.unparse(t) for n in ast.walk(init) if isinstance(n, ast.Assign) for t in n.targets}
    assert {"self._tokenizer", "self._is_vlm"} <= assigned
    setup = inspect.getsource(GRPOTrainer)
    assert "self._dist = DistributedBackend(self.accelerator)" in setup
    assert _parameters(DistributedBackend.summon_full_params)[:2] == [("self", inspect.Parameter.empty),
                                                                     ("module", inspect.Parameter.empty)]


def test_left_padded_prompts_are_trls_padding_with_the_tokenizers_pad_id():
    trainer = SimpleNamespace(accelerator=SimpleNamespace(device=torch.device("cpu")),
                              _tokenizer=SimpleNamespace(pad_token_id=7))
    ids, mask = grpo_left_padded_prompts(trainer, [[1, 2, 3], [4]])
    assert ids.tolist() == [[1, 2, 3], [7, 7, 4]] and mask.tolist() == [[1, 1, 1], [0, 0, 1]]


def test_text_prompts_go_to_the_sampler_and_anything_else_to_trl():
    class Base:
        _is_vlm = False
        args = SimpleNamespace(use_vllm=False)

        def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
            return "trl", has_tool_images

    sampled = with_completion_sampler(Base, lambda trainer, ids: [[len(ids)]], lambda args, is_vlm: not is_vlm,
                                      name="Sampled")
    trainer = sampled()
    assert type(trainer).__name__ == "SampledBase"
    assert trainer._generate_single_turn([[1], [2]], None, {}, 2) == ([[2]], None)
    assert trainer._generate_single_turn([[1]], ["image"], {}, 1) == ("trl", False)
    assert trainer._generate_single_turn([[1]], None, {"pixel_values": 1}, 1, has_tool_images=True) == ("trl", True)
    trainer._is_vlm = True
    assert trainer._generate_single_turn([[1]], None, {}, 1) == ("trl", False)


# -- GRPO's prompt order -----------------------------------------------------------------------------------------

SETTINGS = [dict(mini_repeat_count=3, batch_size=2, repeat_count=2, seed=11),
            dict(mini_repeat_count=2, batch_size=3, repeat_count=1, seed=None),
            dict(mini_repeat_count=1, batch_size=2, repeat_count=3, shuffle=False, seed=5)]


@pytest.mark.parametrize("settings", SETTINGS)
def test_the_copied_pass_draws_repeat_samplers_passes(settings):
    data = list(range(7))  # 7 rows: an incomplete last chunk, which both drop
    trl, ours = RepeatSampler(data, **settings), EpochRepeatSampler(data, **settings)
    assert [list(trl) for _ in range(4)] == [list(ours) for _ in range(4)]


def test_a_fresh_copy_set_to_epoch_e_draws_pass_e_and_the_permutation_is_trls():
    data = list(range(7))
    settings = SETTINGS[0]
    trl = RepeatSampler(data, **settings)
    passes = [list(trl) for _ in range(4)]
    resumed = EpochRepeatSampler(data, **settings)
    resumed.set_epoch(3)
    assert list(resumed) == passes[3] and passes[3] != passes[0]
    generator = RepeatSampler(data, **settings).generator
    drawn = [torch.randperm(7, generator=generator).tolist() for _ in range(3)]
    assert drawn == [repeat_sampler_permutation(7, 11, e) for e in range(3)]


def test_repeat_sampler_keeps_its_arguments_under_their_names():
    empty = inspect.Parameter.empty
    assert _parameters(RepeatSampler.__init__) == [
        ("self", empty), ("data_source", empty), ("mini_repeat_count", empty), ("batch_size", 1),
        ("repeat_count", 1), ("shuffle", True), ("seed", None)]
    sampler = RepeatSampler(list(range(5)), 2, batch_size=3, repeat_count=4, shuffle=False, seed=9)
    copy = epoch_repeat_sampler(sampler)
    assert type(copy) is EpochRepeatSampler and isinstance(copy, RepeatSampler)
    assert [(getattr(copy, k), getattr(sampler, k)) for k in ("data_source", "mini_repeat_count", "batch_size",
                                                             "repeat_count", "shuffle", "seed")] == [
        (v, v) for v in (sampler.data_source, 2, 3, 4, False, 9)]


def _grpo_self(dataset):
    """What ``GRPOTrainer._get_train_sampler`` reads of its trainer."""
    return SimpleNamespace(train_dataset=dataset, num_generations=2, num_iterations=1, shuffle_dataset=True,
                           args=SimpleNamespace(generation_batch_size=4, steps_per_generation=2, seed=3))


def test_get_train_sampler_makes_a_repeat_sampler_and_the_override_replaces_it():
    assert _parameters(GRPOTrainer._get_train_sampler) == [("self", inspect.Parameter.empty), ("dataset", None)]
    data = list(range(8))
    sampler = GRPOTrainer._get_train_sampler(_grpo_self(data))
    assert type(sampler) is RepeatSampler
    assert (sampler.mini_repeat_count, sampler.batch_size, sampler.repeat_count, sampler.seed) == (2, 2, 2, 3)
    replaced = with_train_sampler(GRPOTrainer, epoch_repeat_sampler, name="EpochOrdered")
    assert replaced.__name__ == "EpochOrderedGRPOTrainer"
    trainer = object.__new__(replaced)  # a trainer with only what the sampler reads (no model)
    vars(trainer).update(vars(_grpo_self(data)))
    ours = trainer._get_train_sampler()
    assert type(ours) is EpochRepeatSampler and list(ours) == list(sampler)


def test_a_sampler_other_than_repeat_sampler_stops_instead_of_falling_back():
    class Other:
        def _get_train_sampler(self, dataset=None):
            return torch.utils.data.SequentialSampler(range(4))

    with pytest.raises(SeamBroken, match="SequentialSampler, not trl's RepeatSampler"):
        with_train_sampler(Other, epoch_repeat_sampler, name="EpochOrdered")()._get_train_sampler()


# -- SFT's logged metrics ----------------------------------------------------------------------------------------


def test_sft_keeps_one_entropy_and_token_accuracy_per_loss_call_in_its_metrics_until_it_logs():
    init = inspect.getsource(SFTTrainer.__init__)
    assert 'self._metrics = {"train": defaultdict(list), "eval": defaultdict(list)}' in init
    loss = _tree(SFTTrainer.compute_loss)
    appended = [ast.unparse(c.func.value) for c in ast.walk(loss) if isinstance(c, ast.Call)
                and isinstance(c.func, ast.Attribute) and c.func.attr == "append"
                and ast.unparse(c.func.value).startswith("self._metrics")]
    assert appended.count("self._metrics[mode]['entropy']") == 1
    assert appended.count("self._metrics[mode]['mean_token_accuracy']") == 1
    assert [n for n in ast.walk(loss) if isinstance(n, (ast.For, ast.While))] == []  # once per call, not per row
    log = inspect.getsource(SFTTrainer.log)
    assert "sum(val) / len(val) for key, val in self._metrics[mode].items()" in log
    assert "self._metrics[mode].clear()" in log


# -- The Bradley-Terry loss's forward ----------------------------------------------------------------------------


def test_reward_loss_calls_the_model_once_with_the_inputs_and_reads_only_its_logits():
    assert [n for n, _ in _parameters(RewardTrainer.compute_loss)] == ["self", "model", "inputs", "return_outputs",
                                                                       "num_items_in_batch"]
    tree = _tree(RewardTrainer.compute_loss)
    assert [ast.unparse(c) for c in _calls(tree, "model")] == ["model(**inputs)"]
    reads = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and ast.unparse(n.value) == "outputs"}
    assert reads == {"logits"}


def test_the_forward_is_replaced_only_for_a_training_loss():
    class Base:
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            return model

    replaced = with_reward_forward(Base, lambda trainer, model: ("parts", trainer, model), name="InLengthParts")()
    training, evaluating = SimpleNamespace(training=True), SimpleNamespace(training=False)
    batch = {"attention_mask": 1}
    assert replaced.compute_loss(training, batch) == ("parts", replaced, training)
    assert replaced.compute_loss(training, batch, return_outputs=True) is training
    assert replaced.compute_loss(evaluating, batch) is evaluating
    assert replaced.compute_loss(training, {}) is training


# -- The fused LM head -------------------------------------------------------------------------------------------


def test_the_fused_head_reads_its_compaction_choice_as_a_module_global_at_every_call():
    from trl.kernels import chunked_logprob

    upstream = getattr(trl_utils._use_triton, "upstream", trl_utils._use_triton)
    assert upstream is chunked_logprob._use_triton  # TRL's own, imported into trl.trainer.utils
    assert _parameters(upstream) == [("device", inspect.Parameter.empty)]
    assert upstream(torch.device("cpu")) is False
    module = ast.parse(inspect.getsource(trl_utils))
    calls = [ast.unparse(c) for c in _calls(module, "_use_triton")]
    assert calls == ["_use_triton(hidden_states.device)"]  # the compaction's only reader: hidden_states[mask] or all
    source = inspect.getsource(trl_utils)
    assert "hidden_states[mask] if compact else" in source and "labels[mask] if compact else" in source
