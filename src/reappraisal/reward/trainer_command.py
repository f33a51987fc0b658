"""What the reward-model commands share: their inputs on the command line and the processed tables they read.

Both trainers (the regression ensemble's seed and the Bradley-Terry model)
take ``--base-model`` (cross-checked against ``--base-manifest`` when given),
the three processed tables, ``--out``, ``--params`` and ``--live-dir`` (the folder
of their live metrics: :mod:`reappraisal.training.tracking`); the evaluation
reads the same three tables and takes the same ``--out`` and ``--params``
(:func:`parse_command`).
"""

from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass
from typing import Callable, Sequence

import pandas as pd

from ..input_tables import read_table
from ..params import parse_params
from ..settings import Settings
from ..table_contracts import RATED_PAIR_COLUMNS, TARGET_COLUMNS, VIGNETTE_COLUMNS
from ..training.tracking import LIVE_DIR_HELP, Tracking
from .dataset import rated_dimensions


def add_table_arguments(parser: argparse.ArgumentParser) -> None:
    """``--targets --vignettes --pairs``: the processed tables every reward-model command reads."""
    for name in ("targets", "vignettes", "pairs"):
        parser.add_argument(f"--{name}", required=True)


def read_rated_tables(targets: str, vignettes: str, pairs: str) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The processed targets, vignettes and rated pairs, each checked against its contract."""
    return (read_table(targets, TARGET_COLUMNS), read_table(vignettes, VIGNETTE_COLUMNS),
            read_table(pairs, RATED_PAIR_COLUMNS))


def parse_command(parser: argparse.ArgumentParser, argv: Sequence[str] | None
                  ) -> tuple[argparse.Namespace, Settings, list[str], str]:
    """Add ``--out`` and ``--params`` (after the command's own options), parse ``argv``, log at INFO and
    build the settings (the commands' door): ``(args, settings, rated dimensions, primary dimension)``."""
    parser.add_argument("--out", required=True)
    parser.add_argument("--params", default=None)
    a = parser.parse_args(argv)
    # the shared plumbing's lines (resuming from <checkpoint> (step N), waiting for a work folder's holder)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    settings = Settings.from_params(parse_params(a.params))
    dims, primary = rated_dimensions(settings.data)
    return a, settings, dims, primary


@dataclass
class TrainerInputs:
    """A reward trainer's parsed command line, its settings and its tables."""

    args: argparse.Namespace
    settings: Settings
    dimensions: list[str]
    primary: str
    targets: pd.DataFrame
    vignettes: pd.DataFrame
    pairs: pd.DataFrame
    tracking: Tracking


def trainer_inputs(prog: str, description: str, argv: Sequence[str] | None, *,
                   more: Callable[[argparse.ArgumentParser], None] = lambda parser: None) -> TrainerInputs:
    """Parse a reward trainer's command line (``more`` adds its own options), check the base model against
    the manifest and read the tables."""
    from ..base_models.manifest import check_manifest_base

    p = argparse.ArgumentParser(prog=prog, description=description)
    p.add_argument("--base-model", required=True, help="hub id or local path (config base_models.reward_base)")
    p.add_argument("--base-manifest", default=None, help="results/base_models/MANIFEST.json, cross-checked")
    p.add_argument("--live-dir", default=None, help=LIVE_DIR_HELP)
    add_table_arguments(p)
    more(p)
    a, settings, dims, primary = parse_command(p, argv)
    tracking = Tracking.from_settings(settings.training, a.live_dir)
    if a.base_manifest:
        check_manifest_base(a.base_manifest, "reward", a.base_model)
    return TrainerInputs(a, settings, dims, primary, *read_rated_tables(a.targets, a.vignettes, a.pairs), tracking)
