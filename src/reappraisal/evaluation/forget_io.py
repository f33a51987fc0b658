"""``reappraisal forget-unparsed-replies``: let the next run ask again the calls whose cached reply did not parse.

Judge replies are cached the moment they arrive (:mod:`.cache`), and a rerun
re-reads them without asking again: right after a fixed ``verdict.pattern``,
wrong after a brief misbehaviour of the endpoint (truncated or garbled
replies). This command removes from a judge's reply caches every reply that
its current spec parses as ``error``, so the next run of the stage asks those
calls again and nothing else::

    python -m reappraisal forget-unparsed-replies --judge llama-3.1-70b-instruct

The caches searched (``--cache-root``, repeatable) default to the judge and
confirmation stages' folders; each cache file is rewritten atomically.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

from ..errors import PipelineInputError
from .cache import ReplyCache
from .judge_spec import ERROR, JUDGES_DIR, load_judge

CACHE_ROOTS = ("results/evaluation/cache", "results/confirm/cache")


def forget_unparsed(judge: str, cache_roots: Sequence[str | Path], judges_dir: str | Path = JUDGES_DIR) -> dict[str, int]:
    """Per cache file of ``judge`` under ``cache_roots``: how many unparseable replies were removed."""
    spec = load_judge(judge, judges_dir)
    removed: dict[str, int] = {}
    for root in cache_roots:
        for path in sorted(Path(root).rglob(f"{judge}.jsonl")):
            with ReplyCache(path) as cache:
                bad = [key for key in cache.keys() if spec.parse(cache.get(key)) == ERROR]
                removed[str(path)] = cache.forget(bad)
    return removed


def cli_main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="reappraisal forget-unparsed-replies", description=__doc__.splitlines()[0])
    ap.add_argument("--judge", required=True, help="the judge's name (workflow/judges/<name>.yaml)")
    ap.add_argument("--judges-dir", default=str(JUDGES_DIR))
    ap.add_argument("--cache-root", action="append", default=None,
                    help=f"a folder searched for <judge>.jsonl caches (default: {', '.join(CACHE_ROOTS)})")
    args = ap.parse_args(argv)
    removed = forget_unparsed(args.judge, args.cache_root or CACHE_ROOTS, args.judges_dir)
    if not removed:
        raise PipelineInputError(f"no reply cache of judge {args.judge!r} found",
                                 where=", ".join(args.cache_root or CACHE_ROOTS))
    for path, n in removed.items():
        print(f"{path}: {n} unparseable repl{'y' if n == 1 else 'ies'} removed")
    print(f"{sum(removed.values())} call(s) will be asked again on the next run")
    return 0
