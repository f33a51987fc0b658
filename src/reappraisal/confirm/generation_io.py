"""generate_confirmation stage: the pre-registered system's answers on the fresh confirmation pool.

Runs only after ``results/confirm/preregistration.yaml`` exists (the rule
depends on it) and refuses when the selected system's checkpoint files no
longer hash as registered. For every evaluation run it generates the
system's answers on the confirmation scenarios exactly as the evaluation
does (an arm instance's answers, or a best-of-N system's picks), with
``evaluation.answers_per_scenario.confirm`` answers per scenario. Every row
records the sha256 of the pre-registration it was made under, so ``confirm``
can refuse a pre-registration edited afterwards.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Mapping, Sequence

import pandas as pd

from ..atomic import write_parquet
from ..errors import PipelineInputError
from ..evaluation.best_of_n_answers import Scorers, generate_best_of_n
from ..evaluation.confirmation_pool import CONFIRMATION_POOL
from ..evaluation.answers import generate_answers
from ..evaluation.systems import best_of_n_systems
from ..input_tables import read_table
from ..params import parse_params
from ..settings import Settings
from ..policy.arms import resolve_model_dir
from .preregistration import check_unchanged
from .registered_files import checkpoint_folders, checkpoint_hashes, read_preregistration
from ..table_contracts import CONFIRMATION_GENERATION_COLUMNS


def generate_confirmation(document: Mapping, document_sha256: str, checkpoints: Mapping, vignettes: pd.DataFrame,
                          settings: Settings) -> pd.DataFrame:
    """Every run's answers of the registered system on the confirmation pool (see module doc)."""
    system = str(document["selected_system"])
    entry = checkpoints[system]
    model_dir = resolve_model_dir(entry["policy"]) if Path(entry["policy"]).is_dir() else entry["policy"]
    bon = best_of_n_systems(settings).get(system)
    scorers = Scorers(settings, rm_dirs=entry.get("rm") or [], bradley_terry_dir=entry.get("bradley_terry"),
                      grm_dir=entry.get("grm"), vignettes=vignettes)  # loads a model only when first asked
    frames = []
    for run in document["confirmation_pool"]["runs"]:
        if bon is None:
            table = generate_answers(system, int(run), model_dir, vignettes, settings, pools=(CONFIRMATION_POOL,))
        else:
            table, _, _ = generate_best_of_n(bon, int(run), model_dir, vignettes, settings, scorers,
                                             pools=(CONFIRMATION_POOL,))
        frames.append(table)
    out = pd.concat(frames, ignore_index=True)
    got = sorted(out["vignette_id"].unique())
    if got != sorted(document["confirmation_pool"]["scenarios"]):
        raise PipelineInputError(f"the confirmation pool generated {got}, the pre-registration lists "
                                 f"{document['confirmation_pool']['scenarios']}; the config's split changed since",
                                 where="config evaluation.confirmation_pool")
    out["preregistration_sha256"] = document_sha256
    return out[CONFIRMATION_GENERATION_COLUMNS]


def cli_main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="reappraisal generate-confirmation", description=__doc__.splitlines()[0])
    for name in ("preregistration", "checkpoints", "vignettes", "out", "params"):
        ap.add_argument(f"--{name}", required=True)
    args = ap.parse_args(argv)
    settings = Settings.from_params(parse_params(args.params))
    document, sha = read_preregistration(args.preregistration)
    checkpoints = json.loads(args.checkpoints)
    system = str(document["selected_system"])
    if system not in checkpoints:
        raise PipelineInputError(f"the registered system {system!r} is not a candidate of this config",
                                 where=args.preregistration)
    check_unchanged(document, checkpoint_hashes(checkpoint_folders(checkpoints[system])), where=args.preregistration)
    answers_per = int(settings.evaluation.answers_per_scenario.confirm)
    if answers_per != int(document["confirmation_pool"]["answers_per_scenario"]):
        raise PipelineInputError(f"evaluation.answers_per_scenario.confirm is {answers_per}, the pre-registration "
                                 f"says {document['confirmation_pool']['answers_per_scenario']}",
                                 where="config evaluation.answers_per_scenario.confirm")
    table = generate_confirmation(document, sha, checkpoints, read_table(args.vignettes), settings)
    write_parquet(table, args.out)
    print(f"generate_confirmation: {len(table)} answers of {system} on {table['vignette_id'].nunique()} confirmation "
          f"scenarios, {table['run'].nunique()} runs (pre-registration {sha[:12]}…) -> {args.out}")
    return 0
