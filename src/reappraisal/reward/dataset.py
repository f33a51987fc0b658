"""Reward-model examples from the processed tables (pandas only, no torch).

One example = one reappraisal of the requested split: its scenario text (from
``vignettes.parquet``), its text, and its targets ``z_<dim>`` for each rating
dimension (mean z of its ratings; NaN where the dimension is unrated — the
loss masks those entries). Reappraisals with every target NaN carry no
signal and are dropped (and counted).

Bad input is a :class:`~reappraisal.errors.PipelineInputError` naming the
file: missing columns, an empty split, a reappraisal whose scenario is not
in the vignettes table.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from reappraisal.errors import ConfigError, DataValidationError, PipelineInputError
from reappraisal.settings import DataSettings


@dataclass
class Examples:
    """Aligned lists for one split; ``targets`` has shape (n, n_dims), NaN = unrated."""

    split: str
    dimensions: list[str]
    reappraisal_ids: list[str]
    vignette_ids: list[str]
    scenarios: list[str]
    reappraisals: list[str]
    targets: np.ndarray
    n_dropped_unrated: int = 0
    author_types: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.reappraisal_ids)

    def fingerprint(self) -> str:
        """sha256 of ids, texts and targets: changes whenever the training data changes."""
        h = hashlib.sha256()
        payload = {
            "split": self.split,
            "dimensions": self.dimensions,
            "ids": self.reappraisal_ids,
            "scenarios": self.scenarios,
            "reappraisals": self.reappraisals,
        }
        h.update(json.dumps(payload, sort_keys=True).encode())
        h.update(np.ascontiguousarray(self.targets, dtype=np.float64).tobytes())
        return h.hexdigest()


def examples_for_split(
    targets: pd.DataFrame,
    vignettes: pd.DataFrame,
    split: str,
    dimensions: Sequence[str],
    *,
    where: str = "targets.parquet",
) -> Examples:
    """Examples of one split (``train`` or ``val``) with scenario texts joined in.

    Raises PipelineInputError when the split has no reappraisal with at least
    one rated dimension, or when a ``z_<dim>`` column or a scenario is missing.
    """
    z_cols = [f"z_{d}" for d in dimensions]
    missing = [c for c in z_cols if c not in targets.columns]
    if missing:
        raise DataValidationError(f"missing target column(s) {missing} for data.dimensions", where=where)
    rows = targets[targets["split"] == split]
    y = rows[z_cols].to_numpy(dtype=float)
    rated = ~np.isnan(y).all(axis=1)
    n_dropped = int((~rated).sum())
    rows, y = rows[rated], y[rated]
    if rows.empty:
        raise PipelineInputError(
            f"the {split!r} split has no reappraisal with a rated dimension "
            f"({n_dropped} unrated rows dropped); check the split stage's settings",
            where=where,
        )
    text_of = dict(zip(vignettes["vignette_id"], vignettes["text"]))
    unknown = sorted(set(rows["vignette_id"]) - set(text_of))
    if unknown:
        raise DataValidationError(
            f"reappraisals of the {split!r} split refer to unknown scenario(s) {unknown[:5]}",
            where=where,
        )
    return Examples(
        split=split,
        dimensions=list(dimensions),
        reappraisal_ids=rows["reappraisal_id"].astype(str).tolist(),
        vignette_ids=rows["vignette_id"].astype(str).tolist(),
        scenarios=[str(text_of[v]) for v in rows["vignette_id"]],
        reappraisals=rows["text"].astype(str).tolist(),
        targets=y,
        n_dropped_unrated=n_dropped,
        author_types={str(k): int(v) for k, v in rows["author_type"].value_counts().sort_index().items()},
    )


def pairs_for_split(pairs: pd.DataFrame, split: str) -> pd.DataFrame:
    """Within-scenario pairs of one split (may be empty: a scenario with one reappraisal has none)."""
    return pairs[pairs["split"] == split].reset_index(drop=True)


def rated_dimensions(data: DataSettings | None) -> tuple[list[str], str]:
    """(``data.dimensions``, ``data.primary_dimension``) of a reward command's ``data`` settings (required)."""
    if data is None:
        raise ConfigError("data.dimensions and data.primary_dimension are required", where="--params")
    return list(data.dimensions), str(data.primary_dimension)
