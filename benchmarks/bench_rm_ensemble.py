"""Benchmark: batched ensemble scoring vs the one-at-a-time reference, same models, same inputs.

    .venv/bin/python benchmarks/bench_rm_ensemble.py                 # demo seeds in results/reward/
    .venv/bin/python benchmarks/bench_rm_ensemble.py --models a b c  # any saved reward-model seeds
    .venv/bin/python benchmarks/bench_rm_ensemble.py --build-tiny    # no trained seeds needed

Both sides score N (scenario, reappraisal) candidates with every seed and
combine them as mean - lam*std over seeds:

* reference: the model card's snippet with the models loaded once (the
  snippet as printed reloads them per call, which would only flatter the
  batched side): one forward pass per candidate per seed, ``torch.no_grad``;
* batched: :class:`reappraisal.reward.ensemble.EnsembleScorer` (length-sorted
  batches padded per batch, ``torch.inference_mode``, one forward per seed
  per batch).

Reports wall time (median of ``--repeats``), the speed ratio, the peak memory
of each side (CPU: peak resident set size during scoring, reset through
``/proc/self/clear_refs``; GPU: ``torch.cuda.max_memory_allocated``) and the
largest difference between the two sides' numbers.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from reappraisal.reward.ensemble import EnsembleScorer
from reappraisal.reward.prompts import PROMPT_TEMPLATE


def candidates(n: int, group_size: int = 12, seed: int = 0) -> tuple[list[str], list[str]]:
    """N candidates shaped like a GRPO step: groups of ``group_size`` answers to one scenario.

    Texts come from the demo tables when present (scenarios cycle through the
    train pool; answers are drawn from every reappraisal), else synthetic
    texts of varied length.
    """
    rng = np.random.default_rng(seed)
    targets, vignettes = REPO / "data/processed/targets.parquet", REPO / "data/interim/vignettes.parquet"
    if targets.exists() and vignettes.exists():
        import pandas as pd

        t, v = pd.read_parquet(targets), pd.read_parquet(vignettes)
        pool = v.loc[v["pool"] == "train", "text"].tolist() or v["text"].tolist()
        answers = t["text"].astype(str).tolist()
    else:
        words = "maybe you they could be busy and the friend forgot about the dinner so it is not about you".split()
        pool = [f"Scenario {i}: my friend missed my birthday dinner and did not answer my messages." for i in range(8)]
        answers = [" ".join(rng.choice(words, size=int(rng.integers(5, 80)))) + "." for _ in range(200)]
    scen = [pool[(i // group_size) % len(pool)] for i in range(n)]
    reapp = [answers[j] for j in rng.choice(len(answers), size=n, replace=len(answers) < n)]
    return scen, reapp


def build_tiny_seeds(root: Path, n_seeds: int) -> list[Path]:
    """Tiny Qwen3 regression models (demo architecture, random heads) saved like trained seeds."""
    from transformers import AutoModelForSequenceClassification

    from reappraisal.base_models.tiny import TinyArchitecture, save_tiny_model, train_tokenizer

    scen, reapp = candidates(200, seed=1)
    tok = train_tokenizer(scen + reapp + [PROMPT_TEMPLATE], vocab_size=2048)
    arch = TinyArchitecture(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=32, intermediate_size=256)
    base = save_tiny_model(root / "base", tok, arch, seed=0)
    dirs = []
    for s in range(n_seeds):
        torch.manual_seed(s)
        m = AutoModelForSequenceClassification.from_pretrained(base, num_labels=4, problem_type="regression")
        m.config.pad_token_id = tok.pad_token_id
        m.save_pretrained(root / f"seed{s}")
        tok.save_pretrained(root / f"seed{s}")
        dirs.append(root / f"seed{s}")
    return dirs


class Reference:
    """The model card's one-at-a-time snippet, models loaded once."""

    def __init__(self, dirs, max_length: int, device):
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.toks = [AutoTokenizer.from_pretrained(d) for d in dirs]
        self.models = [AutoModelForSequenceClassification.from_pretrained(d, dtype=torch.float32).to(device).eval() for d in dirs]
        self.max_length, self.device = max_length, device

    def score(self, scenarios, reappraisals, lam: float = 0.5) -> np.ndarray:
        per_seed = np.zeros((len(self.models), len(scenarios)))
        for s, (tok, model) in enumerate(zip(self.toks, self.models)):
            for i, (v, r) in enumerate(zip(scenarios, reappraisals)):
                inputs = tok(PROMPT_TEMPLATE.format(v=v, r=r), return_tensors="pt", truncation=True, max_length=self.max_length)
                with torch.no_grad():
                    per_seed[s, i] = model(**inputs.to(self.device)).logits[0].float().mean().item()
        return per_seed.mean(0) - lam * per_seed.std(0)


def _reset_peak(device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        return torch.cuda.memory_allocated() / 2**20
    try:
        Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM (peak RSS) to the current RSS
    except OSError:
        pass
    return _status_mib("VmRSS")


def _peak(device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() / 2**20
    return _status_mib("VmHWM")


def _status_mib(key: str) -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(fn, repeats: int, device):
    fn()  # warm-up (allocator, kernels, tokenizer caches)
    times, peaks = [], []
    out = None
    for _ in range(repeats):
        before = _reset_peak(device)
        t0 = time.perf_counter()
        out = fn()
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        peaks.append(_peak(device) - before)
    return out, statistics.median(times), max(peaks)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", nargs="*", default=[str(REPO / f"results/reward/seed{s}") for s in range(3)])
    p.add_argument("--build-tiny", action="store_true", help="build 3 tiny demo-sized seeds in a temp dir instead")
    p.add_argument("--n", type=int, default=96, help="number of candidates")
    p.add_argument("--group-size", type=int, default=12, help="candidates per scenario (GRPO: generations per prompt)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--max-length", type=int, default=512)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    p.add_argument("--device", default=None)
    p.add_argument("--json", default=None, help="also write the figures to this file")
    a = p.parse_args(argv)
    if a.threads:
        torch.set_num_threads(a.threads)
    device = torch.device(a.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    tmp = None
    dirs = [Path(d) for d in a.models]
    if a.build_tiny or not all((d / "config.json").exists() for d in dirs):
        if not a.build_tiny:
            print("trained seeds not found; building tiny demo-sized seeds (use --models to point at real ones)")
        tmp = tempfile.TemporaryDirectory()
        dirs = build_tiny_seeds(Path(tmp.name), 3)
    scen, reapp = candidates(a.n, a.group_size)

    ref = Reference(dirs, a.max_length, device)
    scorer = EnsembleScorer.from_dirs(dirs, batch_size=a.batch_size, max_length=a.max_length, device=str(device))
    ref_out, ref_t, ref_mem = measure(lambda: ref.score(scen, reapp), a.repeats, device)
    bat_out, bat_t, bat_mem = measure(lambda: scorer.score(scen, reapp), a.repeats, device)
    diff = float(np.max(np.abs(ref_out - bat_out)))
    params = sum(p.numel() for p in scorer.models[0].parameters())
    res = {
        "n_candidates": a.n,
        "group_size": a.group_size,
        "n_seeds": len(dirs),
        "parameters_per_seed": params,
        "batch_size": a.batch_size,
        "max_length": a.max_length,
        "device": str(device),
        "torch_threads": torch.get_num_threads(),
        "cpu": platform.processor() or platform.machine(),
        "reference_seconds": ref_t,
        "batched_seconds": bat_t,
        "speedup": ref_t / bat_t,
        "reference_peak_mib": ref_mem,
        "batched_peak_mib": bat_mem,
        "max_abs_diff": diff,
        "models": [str(d) for d in dirs] if tmp is None else "tiny demo-sized seeds built on the fly",
    }
    unit = "MiB above the models' footprint" if device.type == "cpu" else "MiB peak allocated"
    print(f"\n{a.n} candidates ({a.n // a.group_size} scenarios x {a.group_size}) x {len(dirs)} seeds ({params:,} parameters each), {device}, {torch.get_num_threads()} threads")
    print("| method | wall time (s) | peak memory (" + unit + ") |\n|---|---|---|")
    print(f"| one-at-a-time reference | {ref_t:.3f} | {ref_mem:.1f} |")
    print(f"| EnsembleScorer (batch {a.batch_size}) | {bat_t:.3f} | {bat_mem:.1f} |")
    print(f"speed ratio {res['speedup']:.1f}x; largest |difference| {diff:.2e}")
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=2) + "\n")
    if tmp is not None:
        tmp.cleanup()
    if diff > 1e-4:
        print("ERROR: batched scores differ from the reference by more than 1e-4", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
