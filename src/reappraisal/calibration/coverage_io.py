"""The ``calibration-summary`` command: how often the pipeline was right across its worlds.

    reappraisal calibration-summary --worlds results/calibration/worlds/0 results/calibration/worlds/1 ... \
        --out results/calibration

Reads each world's summary (``truth.csv``, the headline table's other
intervals, the claims ledger, the overoptimization tables) and writes, in
``--out`` (:mod:`reappraisal.calibration.coverage`):

- ``summary.csv``: per table and interval method, the share of intervals covering their truth across worlds
  with its Clopper-Pearson interval, each tail's miss rate and the median width;
- ``claims.csv``: per claim, its false-hold rate and power across worlds, how often its truth held, and whether
  its truth ever varied;
- ``overoptimization.csv``: per arm, the training log's overoptimization verdict against the truth's;
- ``truth_spread.csv``: per table, how much the truths moved across worlds;
- ``worlds.json``: the worlds read, their seeds and counts.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Sequence

import pandas as pd
import yaml

from ..atomic import atomic_path
from ..errors import PipelineInputError
from .coverage import claim_calibration, claim_verdict_rows, interval_coverage, overoptimization_agreement

#: Interval methods of the headline table beside the one it reports (``<method>_low``/``<method>_high``).
HEADLINE_METHODS = ("wilson", "logit_jackknife", "boot", "cluster_t", "wild")
REPORTED = "reported"


def _read_csv(path: Path) -> pd.DataFrame:
    if not path.is_file():
        raise PipelineInputError("a world's summary file is missing (build the world first)", where=str(path))
    return pd.read_csv(path)


def world_intervals(world: int, tables: Path) -> pd.DataFrame:
    """Every interval of one world that has a truth: the reported ones (``truth.csv``) and the headline table's
    other methods."""
    truth = _read_csv(tables / "truth.csv")
    rows = [truth.assign(world=world, method=REPORTED)[["world", "table", "method", "low", "high", "truth"]]]
    head = _read_csv(tables / "headline.csv")
    head = head[head["truth"].notna()]
    for method in HEADLINE_METHODS:
        if f"{method}_low" in head.columns:
            rows.append(pd.DataFrame({"world": world, "table": "headline", "method": method,
                                      "low": head[f"{method}_low"], "high": head[f"{method}_high"],
                                      "truth": head["truth"]}).dropna())
    return pd.concat(rows, ignore_index=True)


def truth_spread(truths: pd.DataFrame) -> pd.DataFrame:
    """Per table: the median, over its rows, of the truth's standard deviation across worlds, and the rows."""
    keys = ["table", "system", "versus", "opponent", "pool"]
    per_row = truths.fillna({"versus": ""}).groupby(keys)["truth"].agg(["std", "count"]).reset_index()
    per_row = per_row[per_row["count"] > 1]
    out = per_row.groupby("table").agg(rows=("std", "size"), median_truth_sd=("std", "median"),
                                       max_truth_sd=("std", "max")).reset_index()
    return out


def _write_csv(frame: pd.DataFrame, path: Path) -> None:
    with atomic_path(path, suffix=".csv") as tmp:
        frame.to_csv(tmp, index=False)


def summarize_worlds(folders: Sequence[Path], out: Path) -> dict:
    intervals, verdicts, log_over, truth_over, truths, seeds = [], [], [], [], [], {}
    for folder in folders:
        world = int(folder.name)
        tables = folder / "results" / "summary" / "tables"
        intervals.append(world_intervals(world, tables))
        truths.append(_read_csv(tables / "truth.csv").assign(world=world))
        ledger_path = folder / "results" / "summary" / "claims.json"
        if not ledger_path.is_file():
            raise PipelineInputError("a world's claims ledger is missing (build the world first)",
                                     where=str(ledger_path))
        ledger = json.loads(ledger_path.read_text())
        verdicts += claim_verdict_rows(world, ledger["claims"])
        log_over.append(_read_csv(tables / "overoptimization.csv").assign(world=world))
        truth_over.append(_read_csv(tables / "trajectory_fit.csv").assign(world=world))
        settings = folder / "world.yaml"
        seeds[world] = int(yaml.safe_load(settings.read_text())["seed"]) if settings.is_file() else None
    out.mkdir(parents=True, exist_ok=True)
    coverage = interval_coverage(pd.concat(intervals, ignore_index=True))
    claims = claim_calibration(pd.DataFrame(verdicts))
    over = overoptimization_agreement(pd.concat(log_over, ignore_index=True), pd.concat(truth_over, ignore_index=True))
    _write_csv(coverage, out / "summary.csv")
    _write_csv(claims, out / "claims.csv")
    _write_csv(over, out / "overoptimization.csv")
    _write_csv(truth_spread(pd.concat(truths, ignore_index=True)), out / "truth_spread.csv")
    record = {"worlds": sorted(seeds), "seeds": {str(k): v for k, v in sorted(seeds.items())},
              "intervals": int(coverage["intervals"].sum()) if len(coverage) else 0, "claims": int(len(claims))}
    with atomic_path(out / "worlds.json", suffix=".json") as tmp:
        tmp.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    return record


def cli_main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="reappraisal calibration-summary", description=__doc__.splitlines()[0])
    ap.add_argument("--worlds", type=Path, nargs="+", required=True, help="the worlds' folders (named by number)")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    record = summarize_worlds(a.worlds, a.out)
    print(f"{len(record['worlds'])} world(s): {record['intervals']} intervals, {record['claims']} claims -> {a.out}")
    return 0
