"""The selection and confirmation pools: the OOD scenarios split before anything is scored. Pure.

Config ``evaluation.confirmation_pool``: the scenarios of the ``ood`` pool are split
into a *selection* pool (kept as ``ood``: every candidate is generated and
judged on it, and the best is selected there) and a *confirmation* pool
(``confirm``: generated only for the selected system, after the
pre-registration, :mod:`reappraisal.confirm`). The confirmation scenarios
are either listed (``scenarios``) or drawn: a ``fraction`` of the OOD scenarios, chosen by a permutation
seeded by the config seed, so the split depends on nothing scored. Both
pools are checked n-gram disjoint from training with the rest of the OOD
pool (``check_ood``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import ConfigError
from ..settings import ConfirmationPoolSettings, EvaluationSettings
from .seeds import derived_seed

SELECTION_POOL = "ood"
CONFIRMATION_POOL = "confirm"


def confirmation_scenarios(vignettes: pd.DataFrame, split: ConfirmationPoolSettings, seed: int) -> list[str]:
    """The confirmation pool's scenario ids (sorted); ``[]`` when ``split.enabled`` is false
    (``split``: the ``evaluation.confirmation_pool`` settings)."""
    if not split.enabled:
        return []
    # both pools: so splitting an already split table gives the same split
    ood = sorted(vignettes.loc[vignettes["pool"].isin([SELECTION_POOL, CONFIRMATION_POOL]), "vignette_id"].astype(str))
    listed = split.scenarios
    if listed:
        unknown = [v for v in listed if str(v) not in ood]
        if unknown:
            raise ConfigError(f"{unknown} are not scenarios of the ood pool ({len(ood)} scenarios)",
                              where="config evaluation.confirmation_pool.scenarios")
        chosen = sorted(map(str, listed))
    else:
        k = int(round(float(split.fraction) * len(ood)))
        order = np.random.default_rng(derived_seed(seed, "confirmation-pool")).permutation(len(ood))
        chosen = sorted(ood[i] for i in order[:k])
    return chosen


def check_pool_sizes(vignettes: pd.DataFrame, split: ConfirmationPoolSettings, seed: int) -> list[str]:
    """The confirmation scenarios, refusing a split that leaves either pool fewer than 2 scenarios (its
    interval needs clusters); the confirm stage's check."""
    chosen = confirmation_scenarios(vignettes, split, seed)
    n = int(vignettes["pool"].isin([SELECTION_POOL, CONFIRMATION_POOL]).sum())
    if len(chosen) < 2 or n - len(chosen) < 2:
        raise ConfigError(f"the split leaves {n - len(chosen)} selection and {len(chosen)} confirmation scenario(s) "
                          f"of {n} ood scenarios; each pool needs at least 2 (scenarios are the clusters)",
                          where="config evaluation.confirmation_pool")
    return chosen


def split_pools(vignettes: pd.DataFrame, evaluation: EvaluationSettings, seed: int) -> pd.DataFrame:
    """``vignettes`` with the confirmation scenarios' pool set to ``confirm`` (a copy)."""
    chosen = set(confirmation_scenarios(vignettes, evaluation.confirmation_pool, seed))
    out = vignettes.copy()
    if chosen:
        out.loc[out["vignette_id"].astype(str).isin(chosen), "pool"] = CONFIRMATION_POOL
    return out
