"""generate_answers stage: one system's fresh answers for one evaluation run.

For every scenario of the system's pools, ``evaluation.answers_per_scenario``
answers to the policy's own prompt (:mod:`reappraisal.policy.prompts`),
sampled with a seed derived from (config seed, system, run), so the three
runs are independent samples. The answer is the text after ``</think>``,
exactly as in training; the raw completion, the finish reason, token counts
and the format gate's flags are kept (see docs/CONVENTIONS.md, evaluation
contract).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

from ..atomic import write_parquet
from ..input_tables import read_table
from ..params import parse_params
from ..policy.arms import resolve_model_dir
from ..settings import Settings
from .answers import generate_answers, runs_and_outputs


def cli_main(argv: Sequence[str] | None = None) -> int:
    """``generate-answers``: one system's answers for each given run (one process: the model is loaded and
    Python started once, each run is still its own sample with its own seed and file)."""
    ap = argparse.ArgumentParser(prog="reappraisal generate-answers", description=__doc__.splitlines()[0])
    for name in ("system", "model", "vignettes", "params"):
        ap.add_argument(f"--{name}", required=True)
    ap.add_argument("--run", nargs="+", required=True)
    ap.add_argument("--out", nargs="+", required=True, help="one output per --run, in the same order")
    args = ap.parse_args(argv)
    settings = Settings.from_params(parse_params(args.params))
    jobs = runs_and_outputs(args.run, args.out)
    model_dir = resolve_model_dir(args.model) if Path(args.model).is_dir() else args.model
    vignettes = read_table(args.vignettes)
    for run, out in jobs:
        table = generate_answers(args.system, run, model_dir, vignettes, settings)
        write_parquet(table, out)
        print(f"generate_answers {args.system} run {run}: {len(table)} answers "
              f"({int(table['empty'].sum())} empty, {int(table['too_long'].sum())} too long, "
              f"{int(table['truncated'].sum())} truncated) -> {out}")
    return 0
