"""Selection on the selection pool, the pre-registration document and its checks. Pure.

*Selection*: every candidate's win rate against the confirmation opponent on
the selection pool (pool ``ood``), judged by the headline judge, runs pooled
inside each scenario; the metric is the headline estimand (the equally
weighted mean of the scenario win rates) and the best candidate is selected
(ties: the first in candidate order). The scenario-level rates of all
candidates give the expected selection inflation of
:func:`reappraisal.stats.selection.selection_report`
(SE·sqrt(1−ρ)·E[max of K standard normals], STATISTICS.md).

*Pre-registration*: what the confirmation will test, fixed before its
answers exist. :func:`check_unchanged` is what ``generate-confirmation`` and
``confirm`` run: the checkpoint files still hash as registered, and (for
``confirm``) the document is the one the confirmation answers were made under.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import PipelineInputError
from ..stats import ESTIMAND, HEADLINE_INTERVAL
from ..stats.selection import selection_report

SELECTION_POOL = "ood"
METRIC = "win_rate"
#: The one confirmatory test, its direction written out.
TEST = ("one-sided: the selected system's win rate against the opponent on the confirmation pool is above the bar; "
        "confirmed when the lower end of the headline interval lies above the bar")


def selection_rates(contests: pd.DataFrame, candidates: Sequence[str], *, opponent: str,
                    judge: str) -> tuple[list[str], list[str], np.ndarray]:
    """(candidates that played, scenario ids, K x G matrix of scenario win rates) on the selection pool.

    ``contests``: the contests tables of every run (evaluation contract). A
    candidate without a scored contest against ``opponent`` there (e.g. a
    best-of-N system scored by the GRM, which plays the study scenarios only)
    is not a candidate of this selection. A scenario a candidate has no
    scored contest on is NaN in its row.
    """
    part = contests[(contests["pool"] == SELECTION_POOL) & (contests["judge"] == judge)
                    & (contests["opponent"] == opponent) & ~contests["error"].astype(bool)]
    played = [c for c in candidates if (part["model"] == c).any()]
    if not played:
        raise PipelineInputError(f"no candidate has a scored contest against {opponent!r} on the selection pool "
                                 f"(judge {judge!r}); the opponent must play the ood pool",
                                 where="config confirm.opponent")
    means = part[part["model"].isin(played)].groupby(["model", "vignette_id"])["score"].mean().unstack()
    scenarios = sorted(map(str, means.columns))
    means.columns = means.columns.astype(str)
    return played, scenarios, means.reindex(index=played, columns=scenarios).to_numpy(dtype=float)


def select(contests: pd.DataFrame, candidates: Sequence[str], *, opponent: str, judge: str) -> dict:
    """The selection: every candidate's selection-pool estimate, the selected one and the expected inflation."""
    played, scenarios, rates = selection_rates(contests, candidates, opponent=opponent, judge=judge)
    report = selection_report(rates, played)
    return {"candidates": played, "scenarios": scenarios, **report}


def build_preregistration(*, selection: Mapping[str, Any], system: Mapping[str, Any],
                          checkpoint_sha256: Mapping[str, str], opponent: str, judge: str, bar: float,
                          confidence: float, confirmation_scenarios: Sequence[str], runs: Sequence[int],
                          answers_per_scenario: int, date: str) -> dict:
    """The pre-registration document (``results/confirm/preregistration.yaml``)."""
    return {
        "selected_system": selection["selected"],
        "system": dict(system),
        "checkpoint_sha256": dict(sorted(checkpoint_sha256.items())),
        "metric": {"name": METRIC, "estimand": ESTIMAND},
        "opponent": opponent,
        "judge": judge,
        "interval": {"method": HEADLINE_INTERVAL, "confidence": confidence, "clusters": "scenarios"},
        "bar": bar,
        "test": TEST,
        "confirmation_pool": {"scenarios": list(confirmation_scenarios), "runs": [int(r) for r in runs],
                              "answers_per_scenario": int(answers_per_scenario)},
        "selection": {
            "pool": SELECTION_POOL, "candidates": list(selection["candidates"]),
            "scenarios": list(selection["scenarios"]), "estimates": dict(selection["estimates"]),
            "selected_estimate": selection["estimate"], "k": selection["k"], "se": selection["se"],
            "rho": selection["rho"], "expected_inflation": selection["expected_inflation"],
            "shrunk_estimate": selection["shrunk_estimate"],
        },
        "date": date,
    }


def check_unchanged(preregistration: Mapping[str, Any], current_sha256: Mapping[str, str], *, where: str,
                    recorded_document_sha256: str | None = None, document_sha256: str | None = None) -> None:
    """Refuse (one line) a checkpoint whose files changed since the pre-registration, or a pre-registration
    edited after the confirmation answers were made under it."""
    if recorded_document_sha256 is not None and recorded_document_sha256 != document_sha256:
        raise PipelineInputError(
            f"the pre-registration changed after the confirmation answers were generated under it (sha256 "
            f"{str(recorded_document_sha256)[:12]}… then, {str(document_sha256)[:12]}… now); a confirmation tests "
            "what was registered before its data existed: restore the registered file, or register anew and "
            "confirm on a fresh pool of scenarios", where=where)
    registered = dict(preregistration.get("checkpoint_sha256") or {})
    if not registered:
        raise PipelineInputError("the pre-registration names no checkpoint files", where=where)
    changed = sorted(p for p in registered if current_sha256.get(p) != registered[p])
    extra = sorted(set(current_sha256) - set(registered))
    if changed or extra:
        first = (changed or extra)[0]
        raise PipelineInputError(
            f"the checkpoint of {preregistration.get('selected_system')!r} no longer matches its pre-registration: "
            f"{len(changed)} registered file(s) differ or are missing and {len(extra)} are new (e.g. {first}); the "
            "confirmation would not test the registered model", where=where)
