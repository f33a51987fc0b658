"""judge stage: one evaluation run's contests, judged in both orders by every configured judge.

Reads the run's generations (every arm and every generated opponent), draws
the contests (:mod:`.draw`) against every opponent, has each held-out judge
(config ``evaluation.judges``, each calibrated first) judge every contest in
both orders through this run's own reply cache
(``results/evaluation/cache/run{run}/<judge>.jsonl``; a judge whose verdicts
are mostly unparseable stops the stage, :func:`.judging.check_parseable`),
adds the reward-path
scorers' verdicts on the configured opponents' contests and, with several
held-out judges, their consensus. Writes the judgments table (one row per
verdict, raw judge text kept) and the contests table (both orders combined
into 1 / 0.5 / 0, errors kept and flagged). Layouts: docs/CONVENTIONS.md.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Sequence

import pandas as pd

from ..atomic import write_parquet
from ..errors import PipelineInputError
from ..params import parse_params
from ..settings import Settings
from ..input_tables import read_table
from ..training.settings import set_cpu_threads
from .backends import judge_fingerprint, make_backend
from .calibration import check_calibrated
from .cache import ReplyCache
from .confirmation_pool import split_pools
from .draw import draw_contests
from .finish_reason import unfinished
from .judge_spec import load_judge
from .judging import check_parseable, consensus, contests_table, judge_contests
from .opponents import answer_pools
from .panel import check_panel_allowed
from .reward_path import ensemble_judgments, grm_judgments
from .systems import evaluated_arms, opponents, systems
from ..table_contracts import JUDGMENT_COLUMNS


def _answers_by_scenario(generations: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return {str(v): pd.DataFrame({"answer_id": g["answer_id"].to_numpy(), "text": g["answer"].to_numpy()})
            for v, g in generations.sort_values("sample").groupby("vignette_id")}


def run_contests(run: int, generations: dict[str, pd.DataFrame], targets: pd.DataFrame, vignettes: pd.DataFrame,
                 settings: Settings) -> pd.DataFrame:
    """Every contest of one run: each candidate (arm instance, best-of-N system) against each opponent it meets,
    on the selection pool's side of the OOD split (:mod:`.confirmation_pool`)."""
    vignettes = split_pools(vignettes, settings.evaluation, int(settings.seed))
    frames = []
    for arm in evaluated_arms(settings):
        for opp in opponents(settings).values():
            if not opp.plays(arm):
                continue
            if opp.kind == "answers":
                theirs, paired = answer_pools(opp, targets, vignettes), False
            elif opp.kind == "model":
                theirs, paired = _answers_by_scenario(generations[opp.name]), False
            else:
                theirs, paired = _answers_by_scenario(generations[opp.arm]), True
            frames.append(draw_contests(generations[arm], theirs, arm=arm, opponent=opp.name, run=run,
                                        seed=int(settings.seed), pools=opp.pools, paired=paired))
    contests = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if contests.empty:
        raise PipelineInputError("no contests to judge: no arm meets any opponent on any scenario",
                                 where="config evaluation.opponents")
    return contests


def judge_run(run: int, contests: pd.DataFrame, scenarios: dict[str, str], settings: Settings, *, cache_dir: Path,
              rm_dirs: Sequence[str] = (), grm_dir: str | None = None) -> pd.DataFrame:
    """The judgments of one run: held-out judges, their consensus, and the reward-path scorers."""
    ev = settings.evaluation
    frames = []
    for name in ev.judges:
        spec = load_judge(name, ev.judges_dir)
        check_panel_allowed(spec, preset=settings.preset, data_source=settings.data.source if settings.data else None)
        with ReplyCache(Path(cache_dir) / f"{name}.jsonl") as cache:
            table, stats = judge_contests(contests, scenarios, spec, run=run, cache=cache,
                                          fingerprint=judge_fingerprint(spec),
                                          backend_factory=lambda s=spec: make_backend(s, run=run),
                                          progress_desc=f"judge {name} run {run}")
        cut = int(table["raw"].map(lambda raw: isinstance(raw, str) and unfinished(raw) is not None).sum())
        print(f"judge {name} run {run}: {stats.requests} verdicts ({stats.cached} cached, {stats.asked} asked), "
              f"{int((table['verdict'] == 'error').sum())} unparseable" + (f" ({cut} not finished)" if cut else ""))
        check_parseable(table, spec)
        frames.append(table)
    if len(ev.judges) > 1:
        frames.append(consensus(pd.concat(frames, ignore_index=True), ev.judges))
    rp = ev.reward_path
    if rp.enabled and (rm_dirs or grm_dir):
        chosen = list(rp.opponents or [ev.headline_opponent])
        part = contests[contests["opponent"].isin(chosen)].reset_index(drop=True)
        if rm_dirs:
            from ..reward.ensemble import EnsembleScorer

            rm = settings.reward
            scorer = EnsembleScorer.from_dirs(list(rm_dirs), penalty=rm.ensemble.penalty, lam=rm.ensemble.lam,
                                              batch_size=rm.ensemble.batch_size, max_length=rm.max_length)
            frames.append(ensemble_judgments(part, scenarios, scorer, run=run))
        if grm_dir:
            from ..grm.pairwise import PairwiseModel

            g = settings.grm
            judge = PairwiseModel.from_dir(grm_dir, max_new_tokens=g.max_new_tokens, batch_size=g.batch_size,
                                   mode=g.scorer_mode, engine=g.engine)
            frames.append(grm_judgments(part, scenarios, judge, run=run))
    return pd.concat(frames, ignore_index=True)[JUDGMENT_COLUMNS]


def cli_main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="reappraisal judge", description=__doc__.splitlines()[0])
    for name in ("run", "generations-dir", "targets", "vignettes", "calibration", "cache-dir", "judgments",
                 "contests", "params"):
        ap.add_argument(f"--{name}", required=True)
    ap.add_argument("--rm-dirs", nargs="*", default=[])
    ap.add_argument("--grm-dir", default=None)
    args = ap.parse_args(argv)
    settings = Settings.from_params(parse_params(args.params))
    set_cpu_threads(settings.evaluation.cpu_threads)
    run = int(args.run)
    check_calibrated(settings.evaluation.judges, json.loads(Path(args.calibration).read_text()))
    vignettes = read_table(args.vignettes)
    gen_dir = Path(args.generations_dir)
    missing = [n for n in systems(settings) if not (gen_dir / f"{n}.parquet").is_file()]
    if missing:
        raise PipelineInputError(f"no generations for {missing}", where=str(gen_dir))
    generations = {n: read_table(gen_dir / f"{n}.parquet") for n in systems(settings)}
    contests = run_contests(run, generations, read_table(args.targets), vignettes, settings)
    scenarios = dict(zip(vignettes["vignette_id"].astype(str), vignettes["text"].astype(str)))
    judgments = judge_run(run, contests, scenarios, settings, cache_dir=Path(args.cache_dir), rm_dirs=args.rm_dirs,
                          grm_dir=args.grm_dir)
    table = contests_table(judgments, contests)
    write_parquet(judgments, args.judgments)
    write_parquet(table, args.contests)
    per_judge = table.groupby("judge").agg(contests=("score", "size"), errors=("error", "sum"),
                                           win_rate=("score", "mean"))
    print(f"judge run {run}: {len(contests)} contests\n{per_judge.to_string()}")
    return 0
