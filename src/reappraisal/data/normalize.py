"""Rating normalization: z-scores within (study, rater, dimension). Pure, no I/O.

z = (rating − rater's mean on that dimension in that study) / rater's sample
SD (ddof = 1) there. This removes each rater's severity (a shifted mean) and
each study's scale (a different spread), so ratings pool across studies.

A (study, rater, dimension) cell with zero variance has no z-score: policy
``drop`` removes its ratings and counts them; ``zero`` keeps them with z = 0
(they then carry no information but keep the rating count). Cells with fewer
than ``min_ratings_per_rater`` ratings are dropped and counted. No NaN or inf
ever reaches the output.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

GROUP = ["study", "rater_id", "dimension"]
ZERO_VARIANCE_TOL = 1e-12


def zscore_ratings(
    ratings: pd.DataFrame, *, zero_variance: str = "drop", min_ratings_per_rater: int = 2
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Return ``ratings`` with a ``z`` column and a summary of what was dropped."""
    if zero_variance not in {"drop", "zero"}:
        raise ValueError(f"zero_variance must be 'drop' or 'zero', got {zero_variance!r}")
    if ratings.empty:
        raise ValueError("no ratings to normalize")
    df = ratings.copy()
    grouped = df.groupby(GROUP, sort=False)["rating"]
    df["_n"] = grouped.transform("size")
    df["_mean"] = grouped.transform("mean")
    df["_sd"] = grouped.transform(lambda x: x.std(ddof=1) if len(x) > 1 else 0.0)

    too_few = df["_n"] < min_ratings_per_rater
    zero_var = ~too_few & (df["_sd"] <= ZERO_VARIANCE_TOL)
    cells = lambda mask: df.loc[mask, GROUP].drop_duplicates()

    summary: dict[str, Any] = {
        "n_ratings_in": int(len(df)),
        "n_cells": int(df.groupby(GROUP, sort=False).ngroups),
        "zero_variance_policy": zero_variance,
        "too_few_ratings": {"cells": int(len(cells(too_few))), "ratings_dropped": int(too_few.sum())},
        "zero_variance": {
            "cells": int(len(cells(zero_var))),
            "ratings_affected": int(zero_var.sum()),
            "examples": cells(zero_var).head(20).astype(str).to_dict("records"),
        },
    }
    keep = ~too_few
    if zero_variance == "drop":
        keep &= ~zero_var
    df = df[keep].copy()
    z = np.where(df["_sd"] > ZERO_VARIANCE_TOL, (df["rating"] - df["_mean"]) / df["_sd"].where(df["_sd"] > 0, 1.0), 0.0)
    df["z"] = z.astype("float64")
    if not np.isfinite(df["z"]).all():  # defensive: the masks above make this unreachable
        raise AssertionError("non-finite z-score produced")
    summary["n_ratings_out"] = int(len(df))
    summary["n_raters"] = int(df[["study", "rater_id"]].drop_duplicates().shape[0])
    return df.drop(columns=["_n", "_mean", "_sd"]).reset_index(drop=True), summary


def estimate_rater_offsets(ratings: pd.DataFrame) -> pd.DataFrame:
    """Estimate each rater's severity: mean residual after removing item means.

    For every (study, reappraisal, dimension) the mean rating is subtracted;
    a rater's offset is the mean of their residuals (in rating points). With
    raters assigned to items at random this recovers an additive severity.
    Returns columns study, rater_id, offset.
    """
    df = ratings.copy()
    item_mean = df.groupby(["study", "reappraisal_id", "dimension"])["rating"].transform("mean")
    df["residual"] = df["rating"] - item_mean
    out = df.groupby(["study", "rater_id"], as_index=False)["residual"].mean()
    return out.rename(columns={"residual": "offset"})
