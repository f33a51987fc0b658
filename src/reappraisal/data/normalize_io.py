"""normalize_ratings stage: read long ratings, write z-scored ratings and a summary."""

from __future__ import annotations

import argparse
from typing import Sequence

from ..atomic import write_json, write_parquet
from ..params import parse_params
from ..input_tables import read_table
from ..errors import DataValidationError
from ..settings import Settings
from .normalize import zscore_ratings


def cli_main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(prog="reappraisal normalize-ratings", description=__doc__)
    ap.add_argument("--ratings", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--summary", required=True)
    ap.add_argument("--params", required=True, help="JSON with the `data` and `normalize` sections")
    args = ap.parse_args(argv)
    normalize = Settings.from_params(parse_params(args.params)).normalize
    ratings = read_table(args.ratings)
    if ratings.empty:
        raise DataValidationError("no ratings", where=args.ratings)
    z, summary = zscore_ratings(
        ratings, zero_variance=normalize.zero_variance, min_ratings_per_rater=normalize.min_ratings_per_rater
    )
    if z.empty:
        raise DataValidationError("every rating was dropped during normalization (see zero-variance policy)", where=args.ratings)
    write_parquet(z, args.out)
    write_json(summary, args.summary)
    zv = summary["zero_variance"]
    print(f"normalize_ratings: {summary['n_ratings_out']} ratings z-scored; zero-variance cells: {zv['cells']} ({summary['zero_variance_policy']})")
    return 0
