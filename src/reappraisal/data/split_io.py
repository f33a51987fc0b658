"""split_reappraisals stage: targets, pairs and a summary from z-ratings."""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from ..atomic import atomic_path, write_json
from ..params import parse_params
from ..input_tables import read_table
from ..errors import ConfigError, DataValidationError
from ..settings import Settings
from .split import assign_splits, build_pairs, build_targets, split_summary


def cli_main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(prog="reappraisal split-reappraisals", description=__doc__)
    for name in ("ratings-z", "reappraisals", "vignettes", "targets", "pairs", "summary", "params"):
        ap.add_argument(f"--{name}", required=True)
    args = ap.parse_args(argv)
    settings = Settings.from_params(parse_params(args.params))
    data, split = settings.data, settings.split
    if data is None:
        raise ConfigError("the 'data' section is missing", where="--params")
    vignettes = read_table(args.vignettes)
    targets = build_targets(read_table(args.reappraisals), read_table(args.ratings_z), list(data.dimensions))
    train_pool = sorted(vignettes.loc[vignettes["pool"] == "train", "vignette_id"])
    if not train_pool:
        raise DataValidationError("no scenario has pool 'train'", where=args.vignettes)
    try:
        targets = assign_splits(
            targets,
            train_pool,
            primary_dimension=data.primary_dimension,
            val_fraction=split.val_fraction,
            heldout_author_types=list(split.heldout_author_types),
            min_ratings=split.min_ratings_per_reappraisal,
            seed=settings.seed,
        )
    except ValueError as exc:
        key = getattr(exc, "key", None)
        raise DataValidationError(str(exc), where=f"config key '{key}'" if key else args.reappraisals) from None
    pairs = build_pairs(
        targets,
        primary_dimension=data.primary_dimension,
        max_pairs_per_scenario=split.max_pairs_per_scenario,
        seed=settings.seed,
    )
    summary = split_summary(targets, pairs, vignettes, primary_dimension=data.primary_dimension)
    with atomic_path(args.targets) as t, atomic_path(args.pairs) as p:
        targets.to_parquet(t, index=False)
        pairs.to_parquet(p, index=False)
    write_json(summary, args.summary)
    same = summary["identical_texts"]
    print(
        f"split_reappraisals: {summary['reappraisals_by_split']}; pairs {summary['pairs_by_split']}; "
        f"identical texts: {same['groups']} group(s) of {same['reappraisals']} reappraisals kept on one side, "
        f"{sum(same['pairs_dropped'].values())} pair(s) of identical texts dropped"
    )
    for warning in summary["warnings"]:
        print(f"warning: scenario {warning['scenario']!r} ({warning['check']}): {warning['message']}", file=sys.stderr)
    return 0
