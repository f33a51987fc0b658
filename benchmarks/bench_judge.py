"""Benchmark: judging throughput, each against a baseline run side by side.

1. OpenAI-compatible backend: ``--verdicts`` judge calls (default 1,440 = the
   paper's 720 contests x 2 orders) against the local fake endpoint
   (tests/evaluation/openai_fake.py) answering after ``--latency`` seconds
   (default 50 ms): concurrent client (``--concurrency``, default 16) vs
   sequential (concurrency 1). Target: >= 10x.
2. The same judging rerun with every reply cached (no request may reach the
   server). Target: <= 2 s.
3. Local transformers judge: ``--local-n`` prompts through the demo judge
   (``--judge-model``, default the untrained demo judge base
   results/base_models/judge), batched (``batch_size`` of the judge YAML) vs
   one prompt at a time; both must give the same replies.

    .venv/bin/python benchmarks/bench_judge.py                   # all three
    .venv/bin/python benchmarks/bench_judge.py --skip-local --verdicts 480 --out bench.json

Part 3 needs ``snakemake results/base_models/MANIFEST.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from reappraisal.evaluation.backends import OpenAIBackend, TransformersBackend
from reappraisal.evaluation.cache import ReplyCache
from reappraisal.evaluation.judge_spec import load_judge
from reappraisal.evaluation.judging import judge_contests
from tests.evaluation.helpers import openai_judge
from tests.evaluation.openai_fake import FakeOpenAI, Reply


def contests(n_contests: int) -> pd.DataFrame:
    rows = [{"contest_id": f"c{i}", "vignette_id": f"v{i % 6}", "pool": "train", "model": "committee",
             "opponent": "gpt-4-0314", "model_answer_id": f"m{i}", "model_answer": f"Maybe they meant well {i}.",
             "opponent_answer_id": f"o{i}", "opponent_answer": f"It could be that they were busy {i}."}
            for i in range(n_contests)]
    return pd.DataFrame(rows)


def timed_judging(folder: Path, base_url: str, table: pd.DataFrame, *, concurrency: int, cache_path: Path):
    spec = openai_judge(folder, base_url, name=f"bench-c{concurrency}", concurrency=concurrency, timeout_s=30)
    scenarios = {v: f"Scenario {v}." for v in table["vignette_id"].unique()}
    start = time.perf_counter()
    with ReplyCache(cache_path) as cache:
        out, stats = judge_contests(table, scenarios, spec, run=1, cache=cache, fingerprint="bench",
                                    backend_factory=lambda: OpenAIBackend(spec))
    return time.perf_counter() - start, out, stats


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--verdicts", type=int, default=1440)
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--local-n", type=int, default=64)
    ap.add_argument("--judge-model", default="results/base_models/judge")
    ap.add_argument("--skip-local", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    table = contests(args.verdicts // 2)
    result = {"machine": platform.platform(), "verdicts": 2 * len(table), "latency_s": args.latency}
    with tempfile.TemporaryDirectory() as tmp, \
            FakeOpenAI(lambda body, n: Reply("VERDICT: A", delay=args.latency)) as srv:
        tmp = Path(tmp)
        t_seq, seq, _ = timed_judging(tmp, srv.base_url, table, concurrency=1, cache_path=tmp / "seq.jsonl")
        t_con, con, _ = timed_judging(tmp, srv.base_url, table, concurrency=args.concurrency,
                                      cache_path=tmp / "con.jsonl")
        before = srv.count
        t_cached, cached, stats = timed_judging(tmp, srv.base_url, table, concurrency=args.concurrency,
                                                cache_path=tmp / "con.jsonl")
        assert srv.count == before and stats.asked == 0, "a cached rerun reached the server"
        assert list(seq["verdict"]) == list(con["verdict"]) == list(cached["verdict"])
    result.update({
        "sequential_s": round(t_seq, 3), "concurrent_s": round(t_con, 3), "concurrency": args.concurrency,
        "concurrent_speedup": round(t_seq / t_con, 2), "cached_rerun_s": round(t_cached, 3),
    })
    print(f"OpenAI-compatible backend, {2 * len(table)} verdicts at {args.latency * 1000:.0f} ms: sequential "
          f"{t_seq:.2f} s, concurrency {args.concurrency} {t_con:.2f} s ({t_seq / t_con:.1f}x); "
          f"fully cached rerun {t_cached:.2f} s")
    if not args.skip_local:
        import torch

        torch.set_num_threads(1)
        spec = load_judge("demo-judge-untrained")
        spec = type(spec)(**{**spec.__dict__, "model": args.judge_model})
        backend = TransformersBackend(spec)
        local = contests(args.local_n)
        convs = [spec.messages("Your friend cancelled at the last minute.", a, b)
                 for a, b in zip(local["model_answer"], local["opponent_answer"])]
        start = time.perf_counter()
        batched = [r for _, r in sorted(backend.replies(convs))]
        t_batched = time.perf_counter() - start
        backend.spec = type(spec)(**{**spec.__dict__, "batch_size": 1})
        start = time.perf_counter()
        single = [r for _, r in sorted(backend.replies(convs))]
        t_single = time.perf_counter() - start
        assert batched == single, "batched and one-at-a-time replies differ"
        result.update({"local_prompts": len(convs), "local_batch_size": spec.batch_size,
                       "local_batched_s": round(t_batched, 3), "local_one_at_a_time_s": round(t_single, 3),
                       "local_speedup": round(t_single / t_batched, 2)})
        print(f"local transformers judge, {len(convs)} prompts: batched (batch {spec.batch_size}) {t_batched:.2f} s, "
              f"one at a time {t_single:.2f} s ({t_single / t_batched:.1f}x)")
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
