"""preregister stage: select the best candidate on the selection pool and pre-register its confirmation.

Reads every run's contests, selects (:func:`.preregistration.select`: the
headline judge's win rate against ``confirm.opponent`` on the selection
pool), hashes the selected system's checkpoint files (its policy, and for a
best-of-N system its scorer's models too) and writes
``results/confirm/preregistration.yaml`` (:func:`.preregistration.build_preregistration`).
Nothing of the confirmation pool exists yet: the rule that generates it
depends on this file.
"""

from __future__ import annotations

import argparse
import datetime
import json
from pathlib import Path
from typing import Sequence

import pandas as pd
import yaml

from ..atomic import atomic_path
from ..errors import PipelineInputError
from ..evaluation.confirmation_pool import check_pool_sizes
from ..evaluation.systems import best_of_n_systems, evaluated_arms, evaluated_instances
from ..input_tables import read_table
from ..json_values import json_ready
from ..params import parse_params
from ..settings import Settings
from .preregistration import build_preregistration, select
from .registered_files import checkpoint_folders, checkpoint_hashes


def system_record(settings: Settings, name: str) -> dict:
    """What the selected system is: an arm instance (arm, seed, reward) or a best-of-N system (its instance,
    scorer and N)."""
    bon = best_of_n_systems(settings)
    if name in bon:
        b = bon[name]
        return {"kind": "best_of_n", "instance": b.instance, "arm": b.arm, "scorer": b.scorer, "n": b.n,
                "declared": b.declared}
    inst = evaluated_instances(settings)[name]
    return {"kind": "arm", "arm": inst.arm.name, "policy_seed": inst.seed, "reward": inst.arm.reward}


def read_contests(evaluation_dir: Path, runs: Sequence[int]) -> pd.DataFrame:
    frames = []
    for run in runs:
        path = evaluation_dir / f"run{run}" / "contests.parquet"
        if not path.is_file():
            raise PipelineInputError(f"the contests of evaluation run {run} are missing", where=str(path))
        frames.append(pd.read_parquet(path))
    return pd.concat(frames, ignore_index=True)


def cli_main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="reappraisal preregister", description=__doc__.splitlines()[0])
    ap.add_argument("--evaluation-dir", required=True, help="folder holding run{run}/contests.parquet")
    ap.add_argument("--vignettes", required=True)
    ap.add_argument("--checkpoints", required=True,
                    help='JSON: candidate -> {"policy": folder, "rm": [folders], "bradley_terry": folder, "grm": folder}')
    ap.add_argument("--out", required=True, help="results/confirm/preregistration.yaml")
    ap.add_argument("--params", required=True)
    args = ap.parse_args(argv)
    settings = Settings.from_params(parse_params(args.params))
    ev, confirm = settings.evaluation, settings.confirm
    checkpoints = json.loads(args.checkpoints)
    runs = [int(r) for r in ev.runs]
    contests = read_contests(Path(args.evaluation_dir), runs)
    judge = str(ev.headline_judge)
    selection = select(contests, evaluated_arms(settings), opponent=str(confirm.opponent), judge=judge)
    chosen = selection["selected"]
    if chosen not in checkpoints:
        raise PipelineInputError(f"no checkpoint folders given for the selected system {chosen!r}", where="--checkpoints")
    scenarios = check_pool_sizes(read_table(args.vignettes), ev.confirmation_pool, int(settings.seed))
    document = build_preregistration(
        selection=selection, system=system_record(settings, chosen), checkpoint_sha256=checkpoint_hashes(checkpoint_folders(checkpoints[chosen])),
        opponent=str(confirm.opponent), judge=judge, bar=float(confirm.bar),
        confidence=float(settings.summary.confidence), confirmation_scenarios=scenarios, runs=runs,
        answers_per_scenario=int(ev.answers_per_scenario.confirm),
        date=datetime.datetime.now(datetime.timezone.utc).date().isoformat())
    with atomic_path(args.out, suffix=".yaml") as tmp:
        Path(tmp).write_text(yaml.safe_dump(json_ready(document), sort_keys=False, allow_unicode=True), encoding="utf-8")
    print(f"preregister: selected {chosen} of {selection['k']} candidates on {len(selection['scenarios'])} selection "
          f"scenarios (estimate {selection['estimate']:.3f}, expected inflation {selection['expected_inflation']:.3f}); "
          f"{len(scenarios)} confirmation scenarios -> {args.out}")
    return 0
