"""draw_truth stage (demo only): one generated system's truth draws with their gold (see :mod:`.truth_io`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

from ..atomic import write_parquet
from ..input_tables import read_table
from ..params import parse_params
from ..settings import Settings
from .systems import opponents
from .truth_draws import check_truth_allowed, draws_for, oracle_source


def cli_main(argv: Sequence[str] | None = None) -> int:
    """``draw-truth``: one generated system's truth draws."""
    from ..policy.arms import resolve_model_dir
    from ..training.settings import set_cpu_threads

    ap = argparse.ArgumentParser(prog="reappraisal draw-truth", description=__doc__.splitlines()[0])
    for name in ("system", "model", "vignettes", "params", "out"):
        ap.add_argument(f"--{name}", required=True)
    args = ap.parse_args(argv)
    settings = Settings.from_params(parse_params(args.params))
    check_truth_allowed(settings)
    set_cpu_threads(settings.evaluation.generation.cpu_threads, use_cpu=True)
    model_dir = resolve_model_dir(args.model) if Path(args.model).is_dir() else args.model
    oracle = args.system == oracle_source(opponents(settings))
    table = draws_for(args.system, model_dir, read_table(args.vignettes), settings, oracle=oracle)
    write_parquet(table, args.out)
    print(f"draw_truth {args.system}: {len(table)} draws, mean gold {table['gold'].mean():+.3f} -> {args.out}")
    return 0
