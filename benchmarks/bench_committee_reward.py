"""Benchmark: one GRPO step's committee reward for a group of 12, batched vs one at a time.

The group is 12 completions sampled from the demo policy for one train
scenario (so answers, gate verdicts and lengths are realistic). Two paths
compute the committee reward (w 0.5/0.5, lambda 0.5, two-sentence gate):

* **batched**: :class:`reappraisal.policy.reward_adapter.CommitteeReward`, as
  GRPO calls it: the gate, one batched call of the ensemble (3 seeds) and one
  batched call of the GRM (12 candidates x 2 orders), then the group math;
* **one at a time**: the model cards' reference logic run per candidate:
  extract the answer, gate it, score it with each RM seed alone (the RM card's
  snippet: one tokenization and one forward per seed per candidate, models
  loaded once; ``--reload`` also reloads each seed per call, as that snippet
  does verbatim), judge it against its reference in each order alone (the
  GRM's one-prompt-at-a-time path), then z-scores and the guard in plain Python.

Both paths must give the same rewards (to 1e-4); the script reports the median
wall-clock of each over ``--repeats`` runs and their ratio.

    .venv/bin/python benchmarks/bench_committee_reward.py            # demo artifacts under results/
    .venv/bin/python benchmarks/bench_committee_reward.py --root DIR --out bench.json

Needs the demo artifacts: ``data/processed/targets.parquet``,
``data/interim/vignettes.parquet``, ``results/reward/seed{0,1,2}``,
``results/grm/model`` and a policy (``results/policy/warm_start``).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from reappraisal.config import load_config
from reappraisal.policy.answer import decode_completions, extract_answer
from reappraisal.policy.committee import CommitteeWeights, FormatGate
from reappraisal.policy.prompts import build_messages
from reappraisal.policy.reward_adapter import CommitteeReward


def sample_group(policy_dir: Path, scenario: str, n: int, max_new_tokens: int, seed: int):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(policy_dir)
    model = AutoModelForCausalLM.from_pretrained(policy_dir).eval()
    prompt = tok.apply_chat_template(build_messages(scenario), tokenize=False, add_generation_prompt=True)
    ids = tok(prompt, return_tensors="pt", add_special_tokens=False)["input_ids"]
    torch.manual_seed(seed)
    with torch.inference_mode():
        out = model.generate(ids.repeat(n, 1), do_sample=True, max_new_tokens=max_new_tokens, pad_token_id=tok.pad_token_id)
    completion_ids = []
    for row in out[:, ids.shape[1]:].tolist():
        while row and row[-1] == tok.pad_token_id:
            row.pop()
        completion_ids.append(row)
    return tok, completion_ids


class OneAtATime:
    """The reference: every model call sees one candidate (and one order) only."""

    def __init__(self, rm_dirs, grm, tokenizer, weights: CommitteeWeights, gate: FormatGate, max_length: int = 512,
                 reload: bool = False):
        from reappraisal.reward.prompts import PROMPT_TEMPLATE

        self.template = PROMPT_TEMPLATE
        self.rm_dirs, self.reload = list(rm_dirs), reload
        self.rms = [] if reload else [_load_rm(d) for d in self.rm_dirs]
        self.grm, self.tok, self.w, self.gate, self.max_length = grm, tokenizer, weights, gate, max_length

    def seed_score(self, tok, model, scenario, answer):
        import torch

        if self.reload:  # the RM card's snippet verbatim: it loads the seed inside seed_score
            tok, model = _load_rm(model)
        inputs = tok(self.template.format(v=scenario, r=answer), return_tensors="pt", truncation=True, max_length=self.max_length)
        with torch.no_grad():
            return model(**inputs).logits[0].float().mean().item()

    def __call__(self, completion_ids, vignette_id, scenario):
        rm, grm, passed = [], [], []
        for ids, vid, scen in zip(completion_ids, vignette_id, scenario):
            (text,) = decode_completions(self.tok, [ids])
            answer = extract_answer(text)
            ok = self.gate.check(answer).passed
            passed.append(ok)
            if not ok:
                rm.append(None)
                grm.append(None)
                continue
            seeds = [(None, d) for d in self.rm_dirs] if self.reload else self.rms
            s = np.array([self.seed_score(t, m, scen, answer) for t, m in seeds])
            rm.append(float(s.mean() - 0.5 * s.std()))
            grm.append(float(self.grm.score_one_at_a_time([vid], [scen], [answer])[0]))
        idx = [i for i, p in enumerate(passed) if p]
        rewards = [self.gate.penalty] * len(passed)
        z_rm, z_grm = _z([rm[i] for i in idx]), _z([grm[i] for i in idx])
        for k, i in enumerate(idx):
            guard = self.w.lam * abs(z_rm[k] - z_grm[k]) / 2  # population std of two numbers
            rewards[i] = self.w.w_rm * z_rm[k] + self.w.w_grm * z_grm[k] - guard
        return rewards


def _load_rm(d):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    return AutoTokenizer.from_pretrained(d), AutoModelForSequenceClassification.from_pretrained(d, dtype=torch.float32).eval()


def _z(xs):
    if not xs:
        return []
    m = statistics.fmean(xs)
    sd = statistics.pstdev(xs)
    return [0.0] * len(xs) if sd < 1e-6 else [(x - m) / sd for x in xs]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=".", help="folder holding data/ and results/ (default: the repo)")
    ap.add_argument("--policy", default="results/policy/warm_start")
    ap.add_argument("--n", type=int, default=12, help="group size (the paper preset's num_generations)")
    ap.add_argument("--max-completion-length", type=int, default=None, help="default: config policy.max_completion_length")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads (1: steady on a shared machine)")
    ap.add_argument("--reload", action="store_true",
                    help="reference reloads each RM seed per call, as the RM card's snippet does verbatim")
    ap.add_argument("--out", default=None, help="write the figures as JSON here too")
    a = ap.parse_args(argv)

    import torch

    torch.set_num_threads(a.threads)
    cfg = load_config()
    root = Path(a.root)
    need = [root / "data/processed/targets.parquet", root / "data/interim/vignettes.parquet", root / a.policy,
            root / "results/grm/model"] + [root / f"results/reward/seed{s}" for s in (0, 1, 2)]
    missing = [str(p) for p in need if not p.exists()]
    if missing:
        print(f"error: missing demo artifacts {missing}; build them with snakemake first", file=sys.stderr)
        return 2
    from reappraisal.grm.scorer import GRMScorer, median_references
    from reappraisal.reward.ensemble import EnsembleScorer

    targets = pd.read_parquet(root / "data/processed/targets.parquet")
    vignettes = pd.read_parquet(root / "data/interim/vignettes.parquet")
    train = vignettes[vignettes["pool"] == "train"].sort_values("vignette_id")
    vid, scen = str(train["vignette_id"].iloc[0]), str(train["text"].iloc[0])
    max_len = a.max_completion_length or int(cfg["policy"]["max_completion_length"])
    tok, completion_ids = sample_group(root / a.policy, scen, a.n, max_len, seed=cfg["seed"])

    weights, gate = CommitteeWeights(0.5, 0.5, 0.5), FormatGate(
        int(cfg["policy"]["format_gate"]["max_sentences"]), float(cfg["policy"]["format_gate"]["penalty"]))
    rm_dirs = [root / f"results/reward/seed{s}" for s in (0, 1, 2)]
    refs = median_references(targets, vignettes, cfg["data"]["primary_dimension"])
    grm = GRMScorer.from_dir(root / "results/grm/model", references=refs, max_new_tokens=int(cfg["grm"]["max_new_tokens"]),
                             batch_size=2 * a.n, mode=str(cfg["grm"]["scorer_mode"]))
    rm_max_length = int(cfg["reward"]["max_length"])
    ensemble = EnsembleScorer.from_dirs(rm_dirs, penalty="std", lam=0.5, batch_size=a.n, max_length=rm_max_length)
    batched = CommitteeReward(weights=weights, gate=gate, num_generations=a.n, rm_scorer=ensemble, grm_scorer=grm, tokenizer=tok)
    reference = OneAtATime(rm_dirs, grm, tok, weights, gate, max_length=rm_max_length, reload=a.reload)
    kwargs = dict(prompts=[build_messages(scen)] * a.n, completions=[""] * a.n, completion_ids=completion_ids,
                  vignette_id=[vid] * a.n, scenario=[scen] * a.n)

    batched(**kwargs)  # warm-up
    reference(completion_ids, [vid] * a.n, [scen] * a.n)
    bt, rt = [], []
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        rb = batched(**kwargs)
        bt.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        rr = reference(completion_ids, [vid] * a.n, [scen] * a.n)
        rt.append(time.perf_counter() - t0)
        if not np.allclose(rb, rr, atol=1e-4):
            print(f"error: batched and one-at-a-time rewards differ:\n{rb}\n{rr}", file=sys.stderr)
            return 1
    answers = batched.last_answers
    result = {
        "group_size": a.n,
        "passing_answers": int(sum(gate.check(x).passed for x in answers)),
        "max_completion_length": max_len,
        "grm_max_new_tokens": int(cfg["grm"]["max_new_tokens"]),
        "rm_seeds": len(rm_dirs),
        "reference": "card snippet verbatim (reloads each seed per call)" if a.reload else "one at a time, models loaded once",
        "repeats": a.repeats,
        "batched_s_median": statistics.median(bt),
        "one_at_a_time_s_median": statistics.median(rt),
        "speedup": statistics.median(rt) / statistics.median(bt),
        "same_rewards": True,
        "rewards": [round(x, 6) for x in rb],
        "torch_threads": torch.get_num_threads(),
        "device": "cpu" if not torch.cuda.is_available() else "cuda",
        "platform": platform.platform(),
    }
    print(json.dumps(result, indent=2))
    if a.out:
        Path(a.out).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
