"""confirm stage: judge the registered system on the confirmation pool and run the one registered test.

Refuses (one line, nothing written) when the pre-registration is not the one
the confirmation answers were generated under (its sha256 is in every row),
or when the selected system's checkpoint files no longer hash as registered.
A confirmation spends its pool (:mod:`.attempts`): every attempt is appended
to the ledger ``--attempts`` (not an output: Snakemake never deletes it), and
an attempt on a pool an earlier attempt under another registration used is
refused in one line naming that attempt. ``confirmation.json`` lists every
attempt of the ledger, earlier ones first.
Otherwise it draws the contests of the registered system against the
registered opponent on the confirmation scenarios (every run), has the
registered judge judge each in both orders through its own reply cache, and
computes the registered metric with the registered interval
(:func:`.confirmation.confirmation_result`). Writes the judgments, the
contests and ``results/confirm/confirmation.json``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Sequence

import pandas as pd

from ..atomic import cut_torn_tail, write_json, write_parquet
from ..errors import PipelineInputError
from ..evaluation.backends import judge_fingerprint, make_backend
from ..evaluation.cache import ReplyCache
from ..evaluation.confirmation_pool import CONFIRMATION_POOL, split_pools
from ..evaluation.draw import draw_contests
from ..evaluation.judge_spec import load_judge
from ..evaluation.calibration import check_calibrated
from ..evaluation.judging import check_parseable, contests_table, judge_contests
from ..evaluation.opponents import answer_pools
from ..evaluation.systems import opponents
from ..input_tables import read_table
from ..json_values import json_ready
from ..params import parse_params
from ..settings import Settings
from ..training.settings import set_cpu_threads
from .attempts import attempt_record, describe, is_recorded, pool_id, spent_by
from .confirmation import confirmation_result
from .preregistration import check_unchanged
from .registered_files import checkpoint_folders, checkpoint_hashes, read_preregistration


def read_attempts(path: Path) -> list[dict]:
    """The ledger's attempts, oldest first (a line a kill cut off is left out)."""
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        if line.endswith("\n"):
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
    return out


def append_attempt(path: Path, attempt: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    cut_torn_tail(path)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(json_ready(attempt), sort_keys=True) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def recorded_sha256(generations: pd.DataFrame, where: str) -> str:
    values = sorted(set(map(str, generations["preregistration_sha256"])))
    if len(values) != 1:
        raise PipelineInputError(f"the confirmation answers were made under {len(values)} pre-registrations", where=where)
    return values[0]


def confirm(document: dict, generations: pd.DataFrame, targets: pd.DataFrame, vignettes: pd.DataFrame, settings: Settings,
            *, cache_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """(judgments, contests, result) of the registered confirmation."""
    ev = settings.evaluation
    system, opponent_name = str(document["selected_system"]), str(document["opponent"])
    known = opponents(settings)
    if opponent_name not in known or known[opponent_name].kind != "answers":
        raise PipelineInputError(f"the registered opponent {opponent_name!r} is not an `answers` opponent of this "
                                 "config (the confirmation pool has no generations of other opponents)",
                                 where="config confirm.opponent")
    opponent = replace(known[opponent_name], pools=(CONFIRMATION_POOL,))
    vignettes = split_pools(vignettes, ev, int(settings.seed))
    theirs = answer_pools(opponent, targets, vignettes)
    spec = load_judge(str(document["judge"]), ev.judges_dir)
    scenarios = dict(zip(vignettes["vignette_id"].astype(str), vignettes["text"].astype(str)))
    judgments, drawn = [], []
    for run, answers in generations.groupby("run", sort=True):
        contests = draw_contests(answers, theirs, arm=system, opponent=opponent_name, run=int(run),
                                 seed=int(settings.seed), pools=(CONFIRMATION_POOL,))
        with ReplyCache(Path(cache_dir) / f"{spec.name}.jsonl") as cache:
            table, _ = judge_contests(contests, scenarios, spec, run=int(run), cache=cache,
                                      fingerprint=judge_fingerprint(spec),
                                      backend_factory=lambda r=int(run): make_backend(spec, run=f"confirm{r}"),
                                      progress_desc=f"judge {spec.name} confirmation run {run}")
        check_parseable(table, spec)
        judgments.append(table)
        drawn.append(contests)
    judgments = pd.concat(judgments, ignore_index=True)
    table = contests_table(judgments, pd.concat(drawn, ignore_index=True))
    result = confirmation_result(table, document, n_boot=int(settings.summary.n_boot), seed=int(settings.seed))
    return judgments, table, result


def cli_main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="reappraisal confirm", description=__doc__.splitlines()[0])
    for name in ("preregistration", "generations", "checkpoints", "targets", "vignettes", "calibration", "cache-dir",
                 "out", "judgments", "contests", "params"):
        ap.add_argument(f"--{name}", required=True)
    ap.add_argument("--attempts", default=None,
                    help="the ledger of confirmation attempts (JSON lines; default: attempts.jsonl beside --out)")
    args = ap.parse_args(argv)
    settings = Settings.from_params(parse_params(args.params))
    set_cpu_threads(settings.evaluation.cpu_threads)
    document, sha = read_preregistration(args.preregistration)
    generations = read_table(args.generations)
    recorded = recorded_sha256(generations, args.generations)
    system = str(document["selected_system"])
    checkpoints = json.loads(args.checkpoints)
    if system not in checkpoints:
        raise PipelineInputError(f"the registered system {system!r} is not a candidate of this config",
                                 where=args.preregistration)
    check_unchanged(document, checkpoint_hashes(checkpoint_folders(checkpoints[system])), where=args.preregistration,
                    recorded_document_sha256=recorded, document_sha256=sha)
    check_calibrated([str(document["judge"])], json.loads(Path(args.calibration).read_text()))
    ledger = Path(args.attempts) if args.attempts else Path(args.out).with_name("attempts.jsonl")
    attempts = read_attempts(ledger)
    pool = pool_id(generations["vignette_id"])
    earlier = spent_by(attempts, pool=pool, registration_sha256=sha)
    if earlier is not None:
        raise PipelineInputError(
            f"this confirmation pool was spent by the attempt of {describe(earlier)}; a registration changed after "
            "its pool was used cannot be tested on it again: declare a new pool "
            "(evaluation.confirmation_pool.scenarios) for a new registration", where=args.preregistration)
    judgments, contests, result = confirm(document, generations, read_table(args.targets), read_table(args.vignettes),
                                          settings, cache_dir=Path(args.cache_dir))
    if not is_recorded(attempts, pool=pool, registration_sha256=sha):
        attempts.append(attempt_record(result, pool=pool, registration_sha256=sha,
                                       date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")))
        append_attempt(ledger, attempts[-1])
    result = {**result, "preregistration_sha256": sha, "preregistration": args.preregistration,
              "generations": args.generations, "pool": pool, "attempts": attempts}
    write_parquet(judgments, args.judgments)
    write_parquet(contests, args.contests)
    write_json(json_ready(result), args.out)
    print(f"confirm: {system} vs {document['opponent']} on the confirmation pool: win rate {result['win_rate']:.3f} "
          f"[{result['ci_low']:.3f}, {result['ci_high']:.3f}] vs bar {result['bar']}: {result['verdict']} "
          f"(selection-pool estimate {result['selection_estimate']:.3f}, expected inflation "
          f"{result['expected_inflation']:.3f})")
    return 0
