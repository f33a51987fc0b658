"""generate_best_of_n stage: one best-of-N system's answers for one evaluation run.

For every answer an arm would give (``evaluation.answers_per_scenario`` per
scenario of the system's pools), N completions are sampled from the arm
instance's policy with a seed derived from (config seed, system, run), each
candidate's answer (text after ``</think>``) is checked by the format gate
and scored by the system's scorer (:mod:`.best_of_n`), and the preferred one
becomes the answer. Writes the generations table (the evaluation contract,
like an arm's, so the judge stage treats it as one) and the candidates
table: every candidate with its score, gate verdict and whether it was
kept, plus the compute it took (generated tokens, scorer calls).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Sequence

from ..atomic import write_parquet
from ..errors import PipelineInputError
from ..input_tables import read_table
from ..params import parse_params
from ..settings import Settings
from ..policy.arms import resolve_model_dir
from .answers import runs_and_outputs
from .systems import best_of_n_systems
from .best_of_n_answers import Scorers, generate_best_of_n


def cli_main(argv: Sequence[str] | None = None) -> int:
    """``generate-best-of-n``: one best-of-N system's answers and candidates for each given run (one process)."""
    ap = argparse.ArgumentParser(prog="reappraisal generate-best-of-n", description=__doc__.splitlines()[0])
    for name in ("system", "model", "vignettes", "params"):
        ap.add_argument(f"--{name}", required=True)
    ap.add_argument("--run", nargs="+", required=True)
    ap.add_argument("--out", nargs="+", required=True, help="one generations file per --run")
    ap.add_argument("--candidates", nargs="+", required=True, help="one candidates file per --run")
    ap.add_argument("--rm-dirs", nargs="*", default=[])
    ap.add_argument("--bradley-terry", default=None)
    ap.add_argument("--grm-dir", default=None)
    ap.add_argument("--targets", default=None, help="for the GRM's human references")
    args = ap.parse_args(argv)
    settings = Settings.from_params(parse_params(args.params))
    systems = best_of_n_systems(settings)
    if args.system not in systems:
        raise PipelineInputError(f"{args.system!r} is not a best-of-N system of evaluation.best_of_n "
                                 f"({', '.join(systems) or 'none declared'})", where="--system")
    jobs = runs_and_outputs(args.run, args.out)
    if len(args.candidates) != len(jobs):
        raise PipelineInputError(f"{len(jobs)} run(s) but {len(args.candidates)} candidates file(s)",
                                 where="--candidates")
    vignettes = read_table(args.vignettes)
    scorers = Scorers(settings, rm_dirs=args.rm_dirs, bradley_terry_dir=args.bradley_terry, grm_dir=args.grm_dir,
                      targets=read_table(args.targets) if args.targets else None, vignettes=vignettes)
    model_dir = resolve_model_dir(args.model) if Path(args.model).is_dir() else args.model
    for (run, out), candidates_out in zip(jobs, args.candidates):
        table, candidates, compute = generate_best_of_n(systems[args.system], run, model_dir, vignettes, settings,
                                                        scorers)
        write_parquet(candidates, candidates_out)
        write_parquet(table, out)
        print(json.dumps(compute))
    return 0
