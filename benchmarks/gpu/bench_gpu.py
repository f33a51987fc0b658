"""Paper-scale throughput and memory on one CUDA GPU, random-init models at the real architectures.

Every part runs the project's own code path (the reward ensemble's batched scorer, the GRM's pairwise
model, TRL's GRPOTrainer with the committee reward, the OpenAI-compatible judge client) on models built
from the published architecture numbers with random weights (no hub access), with a tokenizer trained
here on the demo's texts and the models' embedding tables at the real vocabulary size, so shapes and
memory are real while no weights are downloaded. Random weights never stop early: every generation
runs to its length limit, the worst case for time.

Parts (each beside its baseline in the same run; a part that cannot run is reported, the rest still run):

1. ``rm``: reward ensemble scoring, 3 seeds of Qwen3-1.7B × 96 candidates at 512 tokens, batched scorer vs
   the model card's one-at-a-time snippet (target ≥ 5×).
2. ``grm``: 96 pairwise verdicts × 2 orders with the GRM (Qwen3-1.7B): ``generate`` mode with the HF
   engine, with vLLM when it is installed (``load_format="dummy"``), and ``logprob`` mode; verdicts/s.
3. ``grpo``: one GRPO step of the policy (Qwen3-4B) with the card's shapes (12 generations, completions up
   to 2,048 tokens, β 0.04, bf16, gradient checkpointing) on one GPU, rewarded by the committee (parts 1
   and 2's models): step time split into generation, reward and the rest (log-probs, update); peak memory.
   ``grpo_vllm``: the same step decoded by TRL's vLLM colocate mode with the paper preset's ``policy.vllm``
   settings (the engine's start timed apart), beside the ``grpo`` step (goal: ≤ 20 s a step). Needs vLLM.
   ``eval_vllm``: the evaluation's vLLM backend (every arm's answers, best-of-N's candidates on the paper
   preset): 256 answers of the policy (Qwen3-4B shapes) with the paper preset's decoding; answers and tokens a
   second, the engine's start timed apart. Needs vLLM.
4. ``committee_share``: the reward's share of that step (target ≤ 20 %), and the card's 4×H100 ZeRO-2 run
   extrapolated from it (the assumptions are written into the result).
5. ``judge``: an 8B-shaped judge (Llama-3.1-8B) served by ``vllm serve --load-format dummy`` and asked
   through the project's OpenAI-compatible backend (concurrency 16); verdicts/s, with 70B/TP4 scaled as an
   estimate. Needs vLLM.

``--dry``: tiny sizes on the CPU in seconds (what the test suite runs, so the script cannot rot).
Writes ``<out>/gpu_bench.json`` and ``<out>/gpu_bench.md`` after every part; with ``--estimates
benchmarks/gpu/estimates.yaml`` (what ``run.sh`` passes) also that file's ``measured`` section: each
successful part's figures with the run's card, date and versions (a part this run did not measure keeps
its earlier figures) and the per-job wall times they imply (:func:`stage_estimates`), which
``tests/test_slurm_limits.py`` holds the SLURM profile to.

    python benchmarks/gpu/bench_gpu.py --out benchmarks/gpu/results          # on a CUDA machine
    python benchmarks/gpu/bench_gpu.py --dry --out /tmp/gpu_dry               # anywhere
"""

from __future__ import annotations

import argparse
import contextlib
import json
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "src"))

#: Published architecture numbers (the models' config.json on the hub), written here: no hub access.
ARCHITECTURES: dict[str, dict[str, Any]] = {
    "qwen3-1.7b": dict(model_type="qwen3", hidden_size=2048, intermediate_size=6144, num_hidden_layers=28,
                       num_attention_heads=16, num_key_value_heads=8, head_dim=128, vocab_size=151936,
                       rope_theta=1_000_000.0, max_position_embeddings=40960, tie_word_embeddings=True),
    "qwen3-4b": dict(model_type="qwen3", hidden_size=2560, intermediate_size=9728, num_hidden_layers=36,
                     num_attention_heads=32, num_key_value_heads=8, head_dim=128, vocab_size=151936,
                     rope_theta=5_000_000.0, max_position_embeddings=262144, tie_word_embeddings=True),
    "llama-3.1-8b": dict(model_type="llama", hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                         num_attention_heads=32, num_key_value_heads=8, head_dim=128, vocab_size=128256,
                         rope_theta=500_000.0, max_position_embeddings=131072, tie_word_embeddings=False),
}
DRY_ARCH = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2, head_dim=16, vocab_size=4096, max_position_embeddings=4096)


@dataclass
class Sizes:
    """The shapes each part runs at (the card's on a GPU, tiny with ``--dry``)."""

    candidates: int = 96
    rm_max_length: int = 512
    rm_seeds: int = 3
    rm_batch: int = 32
    grm_pairs: int = 96
    grm_new_tokens: int = 256
    grm_batch: int = 64
    generations: int = 12
    completion_length: int = 2048
    committee_grm_new_tokens: int = 256
    judge_verdicts: int = 240
    judge_max_tokens: int = 512
    eval_answers: int = 256
    reference_repeats: int = 1

    @classmethod
    def dry(cls) -> "Sizes":
        return cls(candidates=8, rm_max_length=64, rm_seeds=3, rm_batch=4, grm_pairs=4, grm_new_tokens=4, grm_batch=8,
                   generations=4, completion_length=8, committee_grm_new_tokens=4, judge_verdicts=8,
                   judge_max_tokens=8, eval_answers=8)


@dataclass
class Part:
    name: str
    status: str = "not run"  # ok | skipped | failed
    reason: str | None = None
    figures: dict[str, Any] = field(default_factory=dict)


# ------------------------------------------------------------------------------------------- set-up

def device_and_dtype(dry: bool):
    import torch

    if dry:
        return torch.device("cpu"), torch.float32
    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device: run with --dry for the CPU check")
    return torch.device("cuda"), torch.bfloat16


def tokenizer():
    """The demo's kind of tokenizer (byte-level BPE with the Qwen3 chat template), trained on the demo texts."""
    from reappraisal.base_models.prompts import GRM_SYSTEM_PROMPT, GRM_USER_TEMPLATE
    from reappraisal.base_models.tiny import train_tokenizer
    from reappraisal.data.demo_generator import OOD_VIGNETTES, TRAIN_VIGNETTES
    from reappraisal.policy.prompts import SYSTEM_PROMPT, USER_TEMPLATE
    from reappraisal.reward.prompts import PROMPT_TEMPLATE

    corpus = [v.text for v in TRAIN_VIGNETTES + OOD_VIGNETTES] + [t for v in TRAIN_VIGNETTES for t in v.gpt4]
    corpus += [SYSTEM_PROMPT, USER_TEMPLATE, GRM_SYSTEM_PROMPT, GRM_USER_TEMPLATE, PROMPT_TEMPLATE, "ANSWER: A", "ANSWER: B"]
    return train_tokenizer(corpus, vocab_size=2048)


def config_for(name: str, tok, dry: bool, **extra):
    """A transformers config of the named architecture (or the tiny one) for ``tok`` at the real vocab size."""
    from transformers import LlamaConfig, Qwen3Config

    arch = dict(ARCHITECTURES[name])
    model_type = arch.pop("model_type")
    if dry:
        arch.update(DRY_ARCH)
    arch["vocab_size"] = max(arch["vocab_size"], len(tok))
    cls = Qwen3Config if model_type == "qwen3" else LlamaConfig
    return cls(pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, bos_token_id=None, **arch, **extra)


def build(model_cls, config, device, dtype, seed: int):
    import torch

    torch.manual_seed(seed)
    with torch.device(device):
        model = model_cls(config).to(dtype)
    if getattr(model, "generation_config", None) is not None:
        model.generation_config.pad_token_id = config.pad_token_id
        model.generation_config.eos_token_id = config.eos_token_id
    return model.eval()


def texts(n: int, words: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """``n`` (scenario, answer) pairs from the demo's scenarios, answers ``words`` words long."""
    import numpy as np

    from reappraisal.data.demo_generator import TRAIN_VIGNETTES

    rng = np.random.default_rng(seed)
    bank = " ".join(t for v in TRAIN_VIGNETTES for t in (*v.gpt4, *v.specific_alts)).split()
    scen = [TRAIN_VIGNETTES[i % len(TRAIN_VIGNETTES)].text for i in range(n)]
    ans = [" ".join(rng.choice(bank, size=words)) for _ in range(n)]
    return scen, ans


def timed(fn: Callable, *args, sync=None, **kwargs):
    if sync:
        sync()
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    if sync:
        sync()
    return out, time.perf_counter() - t0


def cuda_sync(device):
    import torch

    return torch.cuda.synchronize if device.type == "cuda" else None


def peak_memory_gib(device) -> float | None:
    import torch

    return round(torch.cuda.max_memory_allocated() / 2**30, 2) if device.type == "cuda" else None


def reset_peak(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def vllm_available() -> str | None:
    try:
        import vllm  # noqa: F401  (optional: the paper preset's engine)
    except Exception as exc:  # any import failure means "not usable here"
        return f"vLLM not importable ({type(exc).__name__})"
    return None


# -------------------------------------------------------------------------------------------- parts

def part_rm(ctx: dict) -> dict:
    """Batched ensemble scorer vs the card's snippet, one candidate and one seed at a time."""
    import torch
    from transformers import Qwen3ForSequenceClassification

    from reappraisal.reward.ensemble import EnsembleScorer
    from reappraisal.reward.prompts import PROMPT_TEMPLATE

    s, tok, device, dtype = ctx["sizes"], ctx["tok"], ctx["device"], ctx["dtype"]
    cfg = config_for("qwen3-1.7b", tok, ctx["dry"], num_labels=4, problem_type="regression")
    models = [build(Qwen3ForSequenceClassification, cfg, device, dtype, seed) for seed in range(s.rm_seeds)]
    ctx["rm_models"] = models
    scen, ans = texts(s.candidates, words=s.rm_max_length)  # long enough to reach max_length tokens
    sync = cuda_sync(device)

    def card_snippet():
        scores = []
        with torch.no_grad():
            for v, r in zip(scen, ans):
                per_seed = []
                for m in models:
                    enc = tok(PROMPT_TEMPLATE.format(v=v, r=r), return_tensors="pt", truncation=True,
                              max_length=s.rm_max_length).to(device)
                    per_seed.append(float(m(**enc).logits.float().mean()))
                scores.append(statistics.mean(per_seed) - 0.5 * statistics.pstdev(per_seed))
        return scores

    scorer = EnsembleScorer(models, [tok] * len(models), penalty="std", lam=0.5, batch_size=s.rm_batch,
                            max_length=s.rm_max_length, device=str(device), tokenizer_keys=["t"] * len(models))
    ctx["rm_scorer"] = scorer
    scorer.score(scen[:2], ans[:2])  # warm-up
    reset_peak(device)
    batched, t_batched = timed(scorer.score, scen, ans, sync=sync)
    mem = peak_memory_gib(device)
    reference, t_reference = timed(card_snippet, sync=sync)
    diff = max(abs(float(a) - float(b)) for a, b in zip(batched, reference))
    return {"candidates": s.candidates, "seeds": s.rm_seeds, "max_length": s.rm_max_length,
            "batched_s": round(t_batched, 3), "one_at_a_time_s": round(t_reference, 3),
            "speedup": round(t_reference / t_batched, 2), "target_speedup": 5.0,
            "max_abs_score_difference": round(diff, 4), "peak_gib_batched": mem}


def part_grm(ctx: dict) -> dict:
    from transformers import Qwen3ForCausalLM

    from reappraisal.grm.pairwise import PairwiseModel

    s, tok, device, dtype = ctx["sizes"], ctx["tok"], ctx["device"], ctx["dtype"]
    model = build(Qwen3ForCausalLM, config_for("qwen3-1.7b", tok, ctx["dry"]), device, dtype, seed=11)
    ctx["grm_model"] = model
    scen, a = texts(s.grm_pairs, words=60, seed=1)
    _, b = texts(s.grm_pairs, words=60, seed=2)
    firsts, seconds = a + b, b + a  # both orders
    scen2 = scen + scen
    sync = cuda_sync(device)
    out: dict[str, Any] = {"verdicts": len(firsts), "max_new_tokens": s.grm_new_tokens}
    gen = PairwiseModel(model, tok, max_new_tokens=s.grm_new_tokens, batch_size=s.grm_batch, mode="generate")
    gen.judge(scen2[:2], firsts[:2], seconds[:2])
    reset_peak(device)
    _, t = timed(gen.judge, scen2, firsts, seconds, sync=sync)
    out["hf_generate"] = {"seconds": round(t, 3), "verdicts_per_s": round(len(firsts) / t, 2),
                          "peak_gib": peak_memory_gib(device)}
    lp = PairwiseModel(model, tok, max_new_tokens=1, batch_size=s.grm_batch, mode="logprob")
    _, t = timed(lp.judge, scen2, firsts, seconds, sync=sync)
    out["hf_logprob"] = {"seconds": round(t, 3), "verdicts_per_s": round(len(firsts) / t, 2)}
    why = vllm_available() if not ctx["dry"] else "vLLM needs a GPU (dry run)"
    if why:
        out["vllm_generate"] = {"status": "skipped", "reason": why}
    else:
        try:
            out["vllm_generate"] = _grm_vllm(ctx, scen2, firsts, seconds)
        except Exception as exc:  # reported, and the other parts still run
            out["vllm_generate"] = {"status": "failed", "reason": f"{type(exc).__name__}: {str(exc)[:300]}"}
    return out


def _model_dir(ctx: dict, name: str) -> Path:
    """A folder with the architecture's config.json and the tokenizer (weights: vLLM's dummy loader)."""
    folder = Path(ctx["workdir"]) / name
    if not folder.exists():
        folder.mkdir(parents=True)
        config_for(name, ctx["tok"], False).save_pretrained(folder)
        ctx["tok"].save_pretrained(folder)
    return folder


def _grm_vllm(ctx: dict, scen, firsts, seconds) -> dict:
    from vllm import LLM

    from reappraisal.grm.pairwise import PairwiseModel

    s = ctx["sizes"]
    llm = LLM(model=str(_model_dir(ctx, "qwen3-1.7b")), load_format="dummy", dtype="bfloat16",
              gpu_memory_utilization=0.25, enforce_eager=False)
    judge = PairwiseModel(None, ctx["tok"], max_new_tokens=s.grm_new_tokens, batch_size=s.grm_batch, mode="generate",
                          engine="vllm", llm=llm)
    judge.judge(scen[:2], firsts[:2], seconds[:2])
    _, t = timed(judge.judge, scen, firsts, seconds)
    del llm
    return {"seconds": round(t, 3), "verdicts_per_s": round(len(firsts) / t, 2)}


class EveryCompletionScored:
    """Benchmark only: random weights never close ``</think>``, so every answer would be empty, fail the format
    gate and cost the committee nothing. As a trained policy's answers pass, each completion's last 2,000
    characters are scored as its answer (the gate only refuses empty text here): the committee's full cost."""

    __name__ = "committee"

    def __init__(self, committee):
        self.committee = committee

    def __call__(self, prompts, completions, completion_ids=None, **kwargs):
        from reappraisal.policy.reward_adapter import completion_texts

        answers = ["</think>" + text[-2000:] for text in completion_texts(completions)]
        return self.committee(prompts, answers, None, **kwargs)


def part_grpo(ctx: dict) -> dict:
    """One GRPO step of the policy with the card's shapes, rewarded by the committee of parts 1 and 2."""
    figures = _grpo_step(ctx, vllm={"enabled": False})
    colocate = ctx["results"].get("grpo_vllm")
    if colocate is not None and colocate.status == "ok":  # the same step with vLLM, earlier in this run
        figures["vllm_colocate_step_s"] = colocate.figures["step_s"]
        figures["vllm_colocate_speedup"] = round(figures["step_s"] / colocate.figures["step_s"], 2)
    return figures


def part_grpo_vllm(ctx: dict) -> dict:
    """The same GRPO step decoded by TRL's vLLM colocate mode with the paper preset's ``policy.vllm`` settings."""
    from reappraisal.config import load_config

    why = "vLLM needs a GPU (dry run)" if ctx["dry"] else vllm_available()
    if why:
        return {"status": "skipped", "reason": why}
    import torch

    vllm = dict(load_config(overrides={"preset": "paper"})["policy"]["vllm"])
    # One GPU holds what ZeRO-2 spreads over four (the whole AdamW state of the 4B policy, ~40 GiB with its
    # gradients) beside the committee's models: on a card under 100 GiB the engine sleeps while the policy trains.
    card_gib = torch.cuda.get_device_properties(0).total_memory / 2**30
    if card_gib < 100:
        vllm["enable_sleep_mode"] = True
    figures = _grpo_step(ctx, vllm=vllm)
    figures.update(vllm_settings={k: vllm[k] for k in sorted(vllm)}, card_gib=round(card_gib, 1), target_step_s=20.0)  # the HF generate step beside it: part grpo, run after this one
    return figures


def _grpo_step(ctx: dict, vllm: dict) -> dict:
    import torch
    from datasets import Dataset
    from transformers import Qwen3ForCausalLM
    from trl import GRPOConfig, GRPOTrainer

    from reappraisal.config import load_config
    from reappraisal.data.demo_generator import TRAIN_VIGNETTES
    from reappraisal.grm.pairwise import PairwiseModel
    from reappraisal.grm.scorer import GRMScorer
    from reappraisal.policy.committee import CommitteeWeights, FormatGate
    from reappraisal.policy.prompts import prompt_rows
    from reappraisal.policy.reward_adapter import CommitteeReward
    from reappraisal.policy.train_io import grpo_settings
    from reappraisal.settings import PolicySettings

    s, tok, device, dtype, dry = ctx["sizes"], ctx["tok"], ctx["device"], ctx["dtype"], ctx["dry"]
    if "rm_scorer" not in ctx or "grm_model" not in ctx:
        raise RuntimeError("needs the models of parts rm and grm")
    # Saved and passed by path, as train_policy does: TRL loads the policy and its reference model from it.
    policy_dir = Path(ctx["workdir"]) / "policy"
    policy = build(Qwen3ForCausalLM, config_for("qwen3-4b", tok, dry), device, dtype, seed=21)
    policy.save_pretrained(policy_dir)
    tok.save_pretrained(policy_dir)
    del policy
    paper = load_config(overrides={"preset": "paper"})["policy"]
    section = dict(paper, max_steps=1, save_steps=10, num_generations=s.generations,
                   per_device_train_batch_size=s.generations, max_completion_length=s.completion_length,
                   use_cpu=dry, bf16=not dry, gradient_checkpointing=not dry,
                   vllm=vllm, gold_scorer=None)
    settings = grpo_settings(PolicySettings.from_config(section), seed=0, output_dir=Path(ctx["workdir"]) / "grpo",
                             bf16_capable=not dry)
    settings.update(report_to="none", save_strategy="no", logging_steps=1)
    args = GRPOConfig(**settings)
    references = {v.vignette_id: v.gpt4[0] for v in TRAIN_VIGNETTES}
    grm = GRMScorer(PairwiseModel(ctx["grm_model"], tok, max_new_tokens=s.committee_grm_new_tokens,
                                  batch_size=2 * s.generations, mode="generate"), references)
    committee = CommitteeReward(weights=CommitteeWeights(0.5, 0.5, 0.5), gate=FormatGate(max_sentences=10**6),
                                num_generations=s.generations, rm_scorer=ctx["rm_scorer"], grm_scorer=grm)
    reward = EveryCompletionScored(committee)
    rows = prompt_rows([{"vignette_id": v.vignette_id, "text": v.text} for v in TRAIN_VIGNETTES[:1]])
    # with vLLM the trainer starts the colocated engine (timed apart from the step)
    trainer, start = timed(GRPOTrainer, model=str(policy_dir), reward_funcs=[reward], args=args,
                           train_dataset=Dataset.from_list(rows * 4), processing_class=tok)
    spent = {"generation": 0.0, "reward": 0.0}
    sync = cuda_sync(device)

    def clock(name, fn):
        def wrapped(*a, **k):
            out, t = timed(fn, *a, sync=sync, **k)
            spent[name] += t
            return out
        return wrapped

    trainer._generate_single_turn = clock("generation", trainer._generate_single_turn)
    trainer._calculate_rewards = clock("reward", trainer._calculate_rewards)
    reset_peak(device)
    _, step = timed(trainer.train, sync=sync)
    completion_tokens = scored_share = None
    for entry in trainer.state.log_history:
        if "completions/mean_length" in entry:
            completion_tokens = entry["completions/mean_length"]
            scored_share = entry.get("committee/gate_pass_rate")
    rest = step - spent["generation"] - spent["reward"]
    del trainer
    with contextlib.suppress(Exception):
        torch.cuda.empty_cache()
    return {"generations": s.generations, "max_completion_length": s.completion_length,
            "mean_completion_tokens": completion_tokens, "gradient_checkpointing": not dry,
            "generation_engine": f"vllm colocate ({settings['vllm_gpu_memory_utilization']} of the GPU)"
            if vllm["enabled"] else "hf generate", "trainer_start_s": round(start, 2),
            "share_scored_by_committee": scored_share, "step_s": round(step, 2),
            "generation_s": round(spent["generation"], 2), "reward_s": round(spent["reward"], 2),
            "logprobs_and_update_s": round(rest, 2), "peak_gib": peak_memory_gib(device)}


def part_committee_share(ctx: dict) -> dict:
    g = ctx["results"].get("grpo")
    if g is None or g.status != "ok":
        raise RuntimeError("needs the grpo part")
    f = g.figures
    share = f["reward_s"] / f["step_s"]
    ratio = card_to_h100(ctx["device_name"])
    step_h100 = h100_step_s(f, ratio)
    return {
        "reward_share_of_step": round(share, 3), "target_share": 0.20, "card_to_h100": round(ratio, 3),
        "estimated_4xh100_step_s": round(step_h100, 1),
        "estimated_500_steps_h": round(500 * step_h100 / 3600, 2),
        "estimated_gpu_hours": round(4 * 500 * step_h100 / 3600, 1),
        "assumptions": STEP_ASSUMPTIONS,
    }


#: Memory bandwidth (TB/s) of the cards measured on: decoding (and the committee's scoring) is bandwidth-bound,
#: so a figure measured on one card is scaled to the H100 SXM the estimates are for (estimates.yaml's ``card``).
BANDWIDTH_TB_S = {"H200": 4.8, "H100": 3.35, "A100": 2.04}
#: How ``h100_step_s`` turns one GPU's GRPO step into a step of the card's run.
STEP_ASSUMPTIONS = (
    "each of the 4 GPUs runs one prompt group of 12 exactly like this single-GPU step, in parallel; generation and "
    "the committee's scoring are memory-bandwidth bound and scale by the measuring card's bandwidth over the H100 "
    "SXM's (H200: 4.8/3.35); the update's compute is the same on both; ZeRO-2 adds a reduce-scatter and an "
    "all-gather of the bf16 gradients per step at ~200 GiB/s; random weights generate to the length limit, so a "
    "trained policy that stops earlier is faster")


def card_to_h100(device: str) -> float:
    """How much faster ``device`` (its CUDA name) decodes than an H100 SXM: their memory bandwidths' ratio (1.0 for a
    card not in :data:`BANDWIDTH_TB_S`, and for the CPU of a dry run)."""
    for card, tb_s in BANDWIDTH_TB_S.items():
        if card in device:
            return tb_s / BANDWIDTH_TB_S["H100"]
    return 1.0


def h100_step_s(step: dict, ratio: float) -> float:
    """One step of the card's 4×H100 ZeRO-2 run from a one-GPU GRPO step's split (part ``grpo`` or ``grpo_vllm``)
    measured on a card ``ratio`` times an H100's bandwidth (:data:`STEP_ASSUMPTIONS`)."""
    grad_gib = 2 * PAPER_RUN["params_4b"] / 1e9  # bf16 gradients of the 4.02B-parameter policy
    comm_s = 2 * grad_gib / 200  # reduce-scatter + all-gather at ~200 GiB/s effective NVLink
    return (step["generation_s"] + step["reward_s"]) * ratio + step["logprobs_and_update_s"] + comm_s


def h100_decode_tokens_s(step: dict, ratio: float) -> float:
    """The policy's decoding rate on an H100 (tokens a second, all rows) from a GRPO step's generation."""
    tokens = step["generations"] * (step["mean_completion_tokens"] or step["max_completion_length"])
    return tokens / max(step["generation_s"], 1e-9) / ratio


def grm_hours(policy_tokens_s: float) -> tuple[float, float]:
    """(SFT, RL) hours of the GRM on one H100: SFT from FLOPs, RL from the policy's decoding rate scaled to the
    GRM's size, × 1.5 for the update."""
    p = PAPER_RUN
    sft = 6 * p["params_1p7b"] * p["grm_sft_epochs"] * p["grm_sft_traces"] * p["grm_trace_tokens"]
    grm_tok_s = policy_tokens_s * p["params_4b"] / p["params_1p7b"]
    rl = p["grm_rl_steps"] * p["grm_rl_completions_per_step"] * p["grm_rl_completion_tokens"] / grm_tok_s * 1.5
    return sft / (p["h100_bf16_flops"] * p["mfu"]) / 3600, rl / 3600


def part_eval_vllm(ctx: dict) -> dict:
    """The evaluation's vLLM backend (what the paper preset's generate_answers and generate_best_of_n run): the
    policy (Qwen3-4B shapes, vLLM's dummy weights) answers a batch of the demo's scenarios through the project's
    ``vllm_engine`` and ``chat_vllm`` with the paper preset's decoding, one seed a request; the engine's start
    is timed apart."""
    why = "vLLM needs a GPU (dry run)" if ctx["dry"] else vllm_available()
    if why:
        return {"status": "skipped", "reason": why}
    import torch

    from reappraisal.config import load_config
    from reappraisal.data.demo_generator import TRAIN_VIGNETTES
    from reappraisal.evaluation.generation import Decoding, chat_vllm, vllm_engine
    from reappraisal.policy.prompts import build_messages

    s = ctx["sizes"]
    gen = load_config(overrides={"preset": "paper"})["evaluation"]["generation"]
    decoding = Decoding.from_mapping(gen)
    free, total = torch.cuda.mem_get_info()
    share = round(min(0.6, free / total - 0.05), 2)  # what the earlier parts' models left
    engine_kwargs = {**gen["vllm"], "load_format": "dummy", "dtype": "bfloat16", "gpu_memory_utilization": share,
                     "max_model_len": decoding.max_new_tokens + 1024}
    llm, start = timed(vllm_engine, str(_model_dir(ctx, "qwen3-4b")), seed=0, engine_kwargs=engine_kwargs)
    conversations = [build_messages(TRAIN_VIGNETTES[i % len(TRAIN_VIGNETTES)].text) for i in range(s.eval_answers)]
    completions, decode = timed(chat_vllm, llm, conversations, decoding, seed=0)
    del llm
    tokens = sum(c.completion_tokens for c in completions)
    return {"answers": len(completions), "max_new_tokens": decoding.max_new_tokens,
            "temperature": decoding.temperature, "gpu_memory_utilization": share,
            "engine_start_s": round(start, 2), "decode_s": round(decode, 2), "completion_tokens": tokens,
            "answers_per_s": round(len(completions) / decode, 2), "tokens_per_s": round(tokens / decode, 1),
            "truncated_share": round(sum(c.finish_reason == "length" for c in completions) / len(completions), 3)}


def part_judge(ctx: dict) -> dict:
    if ctx["dry"]:
        return {"status": "skipped", "reason": "vLLM serves on a GPU only (dry run)"}
    why = vllm_available()
    if why:
        return {"status": "skipped", "reason": why}
    from reappraisal.evaluation.backends import OpenAIBackend
    from reappraisal.evaluation.judge_spec import load_judge

    s = ctx["sizes"]
    folder = _model_dir(ctx, "llama-3.1-8b")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = open(Path(ctx["workdir"]) / "vllm_serve.log", "w")
    server = subprocess.Popen([sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(folder),
                               "--served-model-name", "judge", "--load-format", "dummy", "--dtype", "bfloat16",
                               "--port", str(port), "--gpu-memory-utilization", "0.5"], stdout=log, stderr=log)
    try:
        import requests

        deadline = time.time() + 240
        while time.time() < deadline:
            with contextlib.suppress(Exception):
                if requests.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                    break
            if server.poll() is not None:
                raise RuntimeError(f"vllm serve exited ({server.returncode}); see {log.name}")
            time.sleep(2)
        else:
            raise RuntimeError("vllm serve did not become healthy within 240 s")
        spec = load_judge("llama-3.1-70b-instruct")
        spec = type(spec)(**{**spec.__dict__, "model": "judge", "base_url": f"http://127.0.0.1:{port}/v1",
                             "decoding": {**spec.decoding, "max_new_tokens": s.judge_max_tokens}})
        backend = OpenAIBackend(spec)
        scen, a = texts(s.judge_verdicts, words=60, seed=3)
        _, b = texts(s.judge_verdicts, words=60, seed=4)
        convs = [spec.messages(v, x, y) for v, x, y in zip(scen, a, b)]
        t0 = time.perf_counter()
        failures = sum(1 for _, r in backend.replies(convs) if not isinstance(r, str))
        t = time.perf_counter() - t0
    finally:
        server.terminate()
        with contextlib.suppress(Exception):
            server.wait(timeout=30)
        log.close()
    rate = s.judge_verdicts / t
    return {"verdicts": s.judge_verdicts, "max_tokens": s.judge_max_tokens, "concurrency": spec.request["concurrency"],
            "seconds": round(t, 2), "verdicts_per_s": round(rate, 2), "failed_calls": failures,
            "estimated_1440_verdicts_8b_min": round(1440 / rate / 60, 1),
            "estimated_70b_tp4_verdicts_per_s": round(rate * (8.0 / 70.6) * 4 * 0.7, 2),
            "estimate_assumes": ("decoding is bandwidth bound: a 70.6B model reads 8.8× the bytes per token of an "
                                 "8B one, tensor parallelism over 4 GPUs gives 4× the bandwidth at ~70 % efficiency")}


#: What the paper preset's full run does, for the stage-by-stage estimate (the card's numbers; data sizes are the
#: published study's approximate counts, since the OSF layout is declared only when the data are fetched).
PAPER_RUN = dict(rm_seeds=3, rm_epochs=2, train_reappraisals=2900, rm_tokens_per_example=200,
                 grm_sft_epochs=2, grm_sft_traces=20000, grm_trace_tokens=700, grm_rl_steps=300,
                 grm_rl_completions_per_step=32, grm_rl_completion_tokens=1024, grpo_steps=500, eval_runs=3,
                 eval_systems=4, answers_per_run=6 * 40 + 14 * 10, answer_tokens=2048, judge_verdicts_per_run=4 * 240 * 2,
                 best_of_n=16,
                 params_1p7b=1.72e9, params_4b=4.02e9, h100_bf16_flops=989e12, mfu=0.35)


def part_cluster_estimate(ctx: dict) -> dict:
    """GPU-hours of the paper preset's full run, stage by stage, from this run's figures and stated assumptions."""
    r = ctx["results"]
    if any(r.get(n) is None or r[n].status != "ok" for n in ("grpo", "committee_share")):
        raise RuntimeError("needs the grpo and committee_share parts")
    p, g, c = PAPER_RUN, r["grpo"].figures, r["committee_share"].figures
    flops_h = lambda flops: flops / (p["h100_bf16_flops"] * p["mfu"]) / 3600
    rm = flops_h(6 * p["params_1p7b"] * p["rm_seeds"] * p["rm_epochs"] * p["train_reappraisals"] * p["rm_tokens_per_example"])
    # decode rate of the measured policy step (tokens per second on an H100), scaled to the GRM's size
    policy_tok_s = h100_decode_tokens_s(g, card_to_h100(ctx["device_name"]))
    sft, rl = grm_hours(policy_tok_s)
    grpo = c["estimated_gpu_hours"]
    gen = p["eval_runs"] * p["eval_systems"] * p["answers_per_run"] * p["answer_tokens"] / policy_tok_s / 3600
    judge = None
    if r.get("judge") is not None and r["judge"].status == "ok":
        judge = p["eval_runs"] * p["judge_verdicts_per_run"] / r["judge"].figures["estimated_70b_tp4_verdicts_per_s"] / 3600 * 4
    stages = {"reward_models": rm, "grm_sft": sft, "grm_rl": rl, "policy_grpo_per_arm": grpo,
              "evaluation_generation_hf": gen, "judge_70b_tp4": judge}
    return {
        "gpu_hours": {k: (round(v, 2) if v is not None else "not measured (needs vLLM)") for k, v in stages.items()},
        "assumptions": (f"H100 bf16 dense {p['h100_bf16_flops']:.0e} FLOP/s at {p['mfu']:.0%} utilisation for training "
                        "(6 × parameters × tokens); "
                        f"{p['train_reappraisals']} training reappraisals of ~{p['rm_tokens_per_example']} tokens, "
                        f"{p['grm_sft_traces']} GRM traces of ~{p['grm_trace_tokens']} tokens (the OSF data decide); "
                        "decoding speed from this run's policy step (HF generate, batch 12), scaled by the measuring "
                        "card's bandwidth over the H100's and sped up by the parameter ratio for the 1.7B GRM; GRM RL = its decoding × 1.5 "
                        "for the update; evaluation generation with HF generate at batch 12 (vLLM is several times "
                        "faster); the judge's GPU-hours count 4 GPUs; policy GRPO per arm, 500 steps on 4×H100"),
    }


PARTS: dict[str, Callable[[dict], dict]] = {
    "rm": part_rm, "grm": part_grm, "grpo_vllm": part_grpo_vllm, "eval_vllm": part_eval_vllm, "grpo": part_grpo,
    "committee_share": part_committee_share, "judge": part_judge, "cluster_estimate": part_cluster_estimate,
}
#: Seconds a part takes on one H200 (measured, or for grpo_vllm, eval_vllm and judge expected), for ``--stop-s``: a
#: part that would not end before it is not started (a part killed half-way measures nothing).
EXPECTED_S = {"grpo": 240.0, "grpo_vllm": 150.0, "eval_vllm": 120.0, "judge": 180.0}


# ------------------------------------------------------------------------- the committed estimates

#: The line of benchmarks/gpu/estimates.yaml after which :func:`write_estimates` writes; what follows it is replaced.
MEASURED_MARKER = "# ---- measured: written by benchmarks/gpu/bench_gpu.py --estimates (run.sh); edits below are replaced ----"
MEASURED_HEADER = """\
# Each part's figures as its latest successful run measured them, with that run's card, date and versions (a run
# that skips or fails a part keeps the figures before it); `stages`: the wall time per Snakemake job those
# figures imply on the `card` above (`stage_estimates`: the paper preset's sizes in PAPER_RUN, each entry's
# `from` and `assumes`). tests/test_slurm_limits.py holds the profile to the larger of a stage's entry above and
# its entry here.
"""


def stage_estimates(parts: dict[str, dict]) -> dict[str, dict]:
    """Wall and GPU-hours per Snakemake job of the paper preset from the measured ``parts`` (``{name: {"run": {...,
    "device"}, "figures": {...}}}``), each scaled from the card it was measured on to an H100 SXM. Pure.

    ``train_policy`` and ``train_grm`` (whose RL stage decodes like the policy) from the GRPO step decoded as the
    paper preset decodes it (part ``grpo_vllm``; part ``grpo``, HF generate, where that was not measured);
    ``generate_answers`` and ``generate_best_of_n`` from the evaluation's vLLM backend (part ``eval_vllm``)."""
    p = PAPER_RUN
    out: dict[str, dict] = {}

    def entry(gpus: int, wall_h: float, source: str, assumes: str) -> dict:
        wall = round(wall_h, 2)
        return {"gpus": gpus, "wall_hours": wall, "gpu_hours": round(wall * gpus, 2), "from": source, "assumes": assumes}

    step_part = next((n for n in ("grpo_vllm", "grpo") if n in parts), None)
    if step_part is not None:
        step, ratio = parts[step_part]["figures"], card_to_h100(parts[step_part]["run"]["device"])
        out["train_policy"] = entry(4, p["grpo_steps"] * h100_step_s(step, ratio) / 3600, f"measured.parts.{step_part}",
                                    f"{p['grpo_steps']} steps on 4 GPUs; {STEP_ASSUMPTIONS}")
        sft, rl = grm_hours(h100_decode_tokens_s(step, ratio))
        out["train_grm"] = entry(1, sft + rl, f"measured.parts.{step_part}",
                                 f"SFT {sft:.2f} h from FLOPs at {p['mfu']:.0%} utilisation; RL {rl:.2f} h: "
                                 f"{p['grm_rl_steps']} steps of {p['grm_rl_completions_per_step']} replies of "
                                 f"{p['grm_rl_completion_tokens']} tokens at the policy step's decoding rate scaled by "
                                 "the parameter ratio (4.02B/1.72B), x 1.5 for the update")
    if "eval_vllm" in parts:
        f = parts["eval_vllm"]["figures"]
        tokens_s = f["completion_tokens"] / max(f["decode_s"], 1e-9) / card_to_h100(parts["eval_vllm"]["run"]["device"])
        run_h = p["answers_per_run"] * p["answer_tokens"] / tokens_s / 3600
        start_h = f["engine_start_s"] / 3600
        assumes = (f"{p['eval_runs']} runs, each its own engine start; {p['answers_per_run']} answers a run of "
                   f"{p['answer_tokens']} tokens at the measured batch's rate scaled by the card's bandwidth")
        out["generate_answers"] = entry(1, p["eval_runs"] * (run_h + start_h), "measured.parts.eval_vllm", assumes)
        out["generate_best_of_n"] = entry(1, p["eval_runs"] * (p["best_of_n"] * run_h + start_h),
                                          "measured.parts.eval_vllm", f"{p['best_of_n']} candidates an answer; {assumes}")
    return out


def write_estimates(path: Path, results: dict[str, Part], machine: dict) -> dict:
    """Write this run's successful parts into ``path``'s ``measured`` section (after :data:`MEASURED_MARKER`,
    replacing what was there; the hand-written part above it is kept byte for byte) and the stage estimates they
    imply; a part not measured this time keeps its earlier figures. Returns the section written."""
    import yaml

    text = path.read_text()
    head = text.split(MEASURED_MARKER)[0].rstrip("\n") + "\n"
    earlier = (yaml.safe_load(text) or {}).get("measured") or {}
    parts = dict(earlier.get("parts") or {})
    run_stamp = {k: machine[k] for k in ("device", "date", "torch", "transformers", "vllm")}
    for name, part in results.items():
        if part.status == "ok":
            parts[name] = {"run": run_stamp, "figures": part.figures}
    parts = {name: parts[name] for name in PARTS if name in parts}
    section = {"parts": parts, "stages": stage_estimates(parts)}
    body = yaml.safe_dump({"measured": json.loads(json.dumps(section, default=str))}, sort_keys=False, width=110,
                          allow_unicode=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(f"{head}\n{MEASURED_MARKER}\n{MEASURED_HEADER}{body}")
    tmp.replace(path)
    return section


def run(dry: bool, out: Path, only: list[str] | None = None, budget_s: float = 480.0,
        stop_s: float | None = None, estimates: Path | None = None) -> dict[str, Part]:
    import torch

    started = time.perf_counter()
    device, dtype = device_and_dtype(dry)
    if dry:
        torch.set_num_threads(1)
    results: dict[str, Part] = {}
    with tempfile.TemporaryDirectory(prefix="gpu_bench_") as work:
        ctx = {"dry": dry, "device": device, "dtype": dtype, "sizes": Sizes.dry() if dry else Sizes(), "tok": tokenizer(),
               "workdir": work, "results": results, "device_name": device_name(device)}
        for name, fn in PARTS.items():
            part = results[name] = Part(name)
            if only and name not in only:
                part.status, part.reason = "skipped", "not selected (--only)"
                continue
            elapsed = time.perf_counter() - started
            if elapsed > budget_s:
                part.status, part.reason = "skipped", f"time budget of {budget_s:.0f} s spent"
                continue
            if stop_s is not None and not dry and elapsed + EXPECTED_S.get(name, 0.0) > stop_s:
                part.status = "skipped"
                part.reason = (f"needs about {EXPECTED_S[name]:.0f} s and {stop_s - elapsed:.0f} s are left before "
                               f"the stop at {stop_s:.0f} s (--only {name} runs it alone)")
                continue
            try:
                figures = fn(ctx)
                if isinstance(figures, dict) and figures.get("status") in {"skipped", "failed"}:
                    part.status, part.reason = figures["status"], figures.get("reason")
                else:
                    part.status, part.figures = "ok", figures
            except Exception as exc:  # one part's failure (e.g. out of memory) must not stop the others
                oom = "out of memory" in str(exc).lower()
                part.status = "failed"
                part.reason = "out of memory" if oom else f"{type(exc).__name__}: {str(exc)[:300]}"
                traceback.print_exc()
            print(f"[{time.perf_counter() - started:6.1f} s] {name}: {part.status}"
                  f"{' (' + part.reason + ')' if part.reason else ''}", flush=True)
            # after every part: a killed run keeps what it measured
            write(out, results, machine(device, dry, started), estimates)
    write(out, results, machine(device, dry, started), estimates)
    return results


def machine(device, dry: bool, started: float) -> dict:
    import torch
    import transformers

    try:
        from importlib.metadata import version

        vllm = version("vllm")
    except Exception:  # not installed
        vllm = None
    return {"device": device_name(device), "date": time.strftime("%Y-%m-%d", time.gmtime()),
            "torch": torch.__version__, "transformers": transformers.__version__, "vllm": vllm, "dry": dry,
            "seconds": round(time.perf_counter() - started, 1)}


def device_name(device) -> str:
    import torch

    return torch.cuda.get_device_name(0) if device.type == "cuda" else platform.processor() or "cpu"


def write(out: Path, results: dict[str, Part], machine: dict, estimates: Path | None = None) -> None:
    """``<out>/gpu_bench.json`` and ``gpu_bench.md``; with ``estimates``, its ``measured`` section too."""
    if estimates is not None and not machine["dry"]:
        write_estimates(estimates, results, machine)
    out.mkdir(parents=True, exist_ok=True)
    doc = {"machine": machine, "parts": {n: p.__dict__ for n, p in results.items()}}
    (out / "gpu_bench.json").write_text(json.dumps(doc, indent=2, default=str) + "\n")
    lines = [f"# GPU benchmark ({machine['device']}{', dry run' if machine['dry'] else ''})", "",
             "| part | status | figures |", "|---|---|---|"]
    for n, p in results.items():
        figures = "; ".join(f"{k} {v}" for k, v in _flat(p.figures)) if p.figures else (p.reason or "")
        lines.append(f"| {n} | {p.status} | {figures} |")
    (out / "gpu_bench.md").write_text("\n".join(lines) + "\n")


def _flat(d: dict, prefix: str = ""):
    for k, v in d.items():
        if isinstance(v, dict):
            yield from _flat(v, f"{prefix}{k}.")
        elif k not in {"assumptions", "estimate_assumes"}:
            yield f"{prefix}{k}", v


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dry", action="store_true", help="tiny sizes on the CPU (seconds): the test suite's check")
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks/gpu/results")
    ap.add_argument("--only", nargs="*", choices=list(PARTS), help="run these parts only")
    ap.add_argument("--budget-s", type=float, default=480.0, help="start no part after this many seconds")
    ap.add_argument("--stop-s", type=float, default=None,
                    help="start no part expected to end after this many seconds (EXPECTED_S; not with --dry)")
    ap.add_argument("--estimates", type=Path, default=None,
                    help="write the measured parts into this file's `measured` section (benchmarks/gpu/estimates.yaml; "
                         "not with --dry)")
    args = ap.parse_args(argv)
    if args.dry and args.estimates is not None:
        ap.error("--estimates records a GPU's figures; a dry run's are not figures")
    results = run(args.dry, args.out, args.only, args.budget_s, args.stop_s, args.estimates)
    print((args.out / "gpu_bench.md").read_text())
    return 0 if all(p.status in {"ok", "skipped"} for p in results.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
