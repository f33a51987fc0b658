"""calibrate_judge stage: measure every candidate judge against human preference; stop on a weak one.

Each candidate (config ``evaluation.calibration.candidates``) judges the
calibration half of the validation split's human pairs (:mod:`.human_pairs`)
in both orders, through its own reply cache
(``results/evaluation/cache/calibration/<judge>.jsonl``). The numbers
(:mod:`.calibration`) go to ``results/evaluation/judge_calibration.json`` and
the verdicts to ``results/evaluation/calibration/judgments.parquet``. When a
judge the evaluation uses (``evaluation.judges``) falls below
``min_agreement`` the stage stops with a message saying so, unless
``accept_weak_judge`` is set, in which case the file records that it was
accepted knowingly (the report shows it). A judge the evaluation uses whose
verdicts are mostly unparseable stops the stage at once
(:func:`.judging.check_parseable`); the other candidates are only measured.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

import pandas as pd

from ..atomic import write_json, write_parquet
from ..errors import ConfigError, PipelineInputError
from ..params import parse_params
from ..settings import Settings
from ..input_tables import read_table
from ..training.settings import set_cpu_threads
from .backends import judge_fingerprint, make_backend
from .cache import ReplyCache
from .calibration import decide, judge_calibration
from .human_pairs import as_contests, human_pairs
from .judge_spec import load_judge
from .judging import check_parseable, judge_contests
from .panel import check_panel_allowed


def calibrate(targets: pd.DataFrame, vignettes: pd.DataFrame, settings: Settings, *, cache_dir: Path):
    ev = settings.evaluation
    cal = ev.calibration
    unknown = [j for j in ev.judges if j not in cal.candidates]
    if unknown:
        raise ConfigError(f"judge(s) {unknown} are used but not calibration candidates",
                          where="config evaluation.calibration.candidates")
    if settings.data is None:
        raise PipelineInputError("the calibration pairs need data.primary_dimension", where="--params")
    pairs = human_pairs(targets, dimension=settings.data.primary_dimension,
                        judge_train_fraction=float(cal.judge_train_fraction), seed=int(settings.seed))
    pairs = pairs[pairs["half"] == "calibration"].reset_index(drop=True)
    if pairs.empty:
        raise PipelineInputError("no calibration pairs (validation human reappraisals in the calibration half)",
                                 where="config evaluation.calibration.judge_train_fraction")
    contests = as_contests(pairs)
    scenarios = dict(zip(vignettes["vignette_id"].astype(str), vignettes["text"].astype(str)))
    numbers, tables = {}, []
    for name in cal.candidates:
        spec = load_judge(name, ev.judges_dir)
        check_panel_allowed(spec, preset=settings.preset, data_source=settings.data.source)
        with ReplyCache(Path(cache_dir) / f"{name}.jsonl") as cache:
            table, _ = judge_contests(contests, scenarios, spec, run="calibration", cache=cache,
                                      fingerprint=judge_fingerprint(spec),
                                      backend_factory=lambda s=spec: make_backend(s, run="calibration"),
                                      judge_kind="calibration", progress_desc=f"calibrate {name}")
        if name in ev.judges:  # a candidate only measured may be unparseable (it shows in its n_errors)
            check_parseable(table, spec)
        numbers[name] = judge_calibration(table, pairs, delta=float(cal.delta), margin_edges=list(cal.margin_edges))
        tables.append(table)
    decision = decide(numbers, selected=list(ev.judges), min_agreement=float(cal.min_agreement),
                      way=cal.agreement_counted, accept_weak=bool(cal.accept_weak_judge))
    report = {
        "judges": numbers,
        "decision": decision,
        "delta": float(cal.delta),
        "n_calibration_pairs": int(len(pairs)),
        "n_clearly_separated": int((pairs["margin"].abs() >= float(cal.delta)).sum()),
        "pairs": "within-scenario pairs of validation-split human reappraisals (calibration half); "
                 "margin = difference of mean z on the primary dimension; chosen by human ratings only",
    }
    return report, pd.concat(tables, ignore_index=True)


def cli_main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="reappraisal calibrate-judge", description=__doc__.splitlines()[0])
    for name in ("targets", "vignettes", "cache-dir", "out", "judgments", "params"):
        ap.add_argument(f"--{name}", required=True)
    args = ap.parse_args(argv)
    settings = Settings.from_params(parse_params(args.params))
    set_cpu_threads(settings.evaluation.cpu_threads)
    report, judgments = calibrate(read_table(args.targets), read_table(args.vignettes), settings,
                                  cache_dir=Path(args.cache_dir))
    out = Path(args.out)
    failed = out.with_name(out.stem + "_failed.json")
    way = report["decision"]["agreement_counted"]
    lines = [f"{n}: agreement ({way}) {v['agreement'][way]}, kappa {v['kappa']}, "
             f"position consistency {v['position'].get('consistency')}" for n, v in report["judges"].items()]
    print("calibrate_judge:\n  " + "\n  ".join(lines))
    if not report["decision"]["ok"]:
        write_json(report, failed)
        bad = ", ".join(f"{n} ({report['decision']['verdicts'][n]['agreement']})" for n in report["decision"]["failed"])
        raise PipelineInputError(
            f"judge(s) {bad} agree with humans below min_agreement {report['decision']['min_agreement']} "
            f"(counted {way}) on {report['n_clearly_separated']} clearly separated pairs; choose another judge, or set "
            f"evaluation.calibration.accept_weak_judge: true to use it knowingly; details in {failed}",
            where="calibrate_judge")
    failed.unlink(missing_ok=True)
    write_parquet(judgments, args.judgments)
    write_json(report, out)
    if report["decision"]["accepted_weak"]:
        print(f"calibrate_judge: WEAK judge(s) {report['decision']['failed']} accepted knowingly (accept_weak_judge)")
    return 0
