"""Builders of small judgments/contests tables and simulated clustered data."""

from __future__ import annotations

import numpy as np
import pandas as pd

from reappraisal.stats.simulation import (  # noqa: F401  (re-exported for the coverage tests and benchmarks)
    FAMILIES,
    logit_normal_moments,
    logit_normal_parameters,
    scenario_means_from_rates,
    scenario_rates,
)

# verdict pair (AB, BA) that yields each model score; 0.5 alternates split / tie
_VERDICTS_FOR_SCORE = {1.0: ("A", "B"), 0.0: ("B", "A")}
_HALF_VERDICTS = [("A", "A"), ("tie", "tie"), ("B", "B"), ("tie", "A")]


def judgments_table(rows, *, judge="judge-1", model="policy", opponent="gpt4") -> pd.DataFrame:
    """Long judgments from (run, contest_id, vignette_id, verdict_ab, verdict_ba) tuples."""
    records = []
    for run, contest_id, vignette_id, verdict_ab, verdict_ba in rows:
        for order, verdict in (("AB", verdict_ab), ("BA", verdict_ba)):
            records.append(
                {
                    "run": run,
                    "judge": judge,
                    "contest_id": contest_id,
                    "vignette_id": vignette_id,
                    "model": model,
                    "opponent": opponent,
                    "order": order,
                    "verdict": verdict,
                }
            )
    return pd.DataFrame.from_records(records)


def judgments_from_scores(scores: pd.DataFrame, **names) -> pd.DataFrame:
    """Judgments whose contests score as ``scores`` (columns run, vignette_id,
    score; NaN = an error verdict). Half scores cycle through split and tie
    verdict patterns."""
    rows = []
    for i, (run, vignette, score) in enumerate(scores[["run", "vignette_id", "score"]].itertuples(index=False)):
        if np.isnan(score):
            ab, ba = "error", "B"
        elif score == 0.5:
            ab, ba = _HALF_VERDICTS[i % len(_HALF_VERDICTS)]
        else:
            ab, ba = _VERDICTS_FOR_SCORE[float(score)]
        rows.append((run, f"c{i:05d}", vignette, ab, ba))
    return judgments_table(rows, **names)


def simulate_clustered(
    rng, n_datasets, *, n_scenarios=6, n_runs=3, per_cell=40, mean=0.75, spread=0.1, tie_share=0.3, family="beta"
):
    """Simulated (sums, sizes) of contests with ties, scenario-clustered.

    Each dataset: G scenarios with true rates p_g (mean ``mean``, sd
    ``spread``, drawn from ``family``: :func:`scenario_rates`); in each of ``n_runs`` runs each scenario gets ``per_cell``
    contests scored 1 / 0.5 / 0 with P(0.5) = tie_share·2·min(p, 1−p) and
    E[score] = p. Runs are pooled inside scenarios. Returns sums and sizes of
    shape (n_datasets, G).
    """
    p = scenario_rates(rng, n_datasets, n_scenarios, mean, spread, family)
    tie = tie_share * 2 * np.minimum(p, 1 - p)
    probs = np.clip(np.stack([p - tie / 2, tie, 1 - p - tie / 2], axis=-1), 0.0, 1.0)
    probs = np.broadcast_to(probs[:, :, None, :], (n_datasets, n_scenarios, n_runs, 3))
    counts = rng.multinomial(per_cell, probs).sum(axis=2)
    sums = counts[..., 0] + 0.5 * counts[..., 1]
    sizes = np.full(sums.shape, float(n_runs * per_cell))
    return sums, sizes


def simulate_regime(rng, n_datasets, *, n_scenarios, mean, spread, family="beta", per_scenario=40, unequal=False,
                    tie_share=0.0):
    """Simulated scenario means and scored-contest totals over the whole regime the pipeline produces.

    G scenarios with true rates from :func:`scenario_rates`; scenario g gets ``per_scenario`` contests, or, when
    ``unequal``, round(per_scenario x 0.4 ... 1.6) spread evenly across scenarios (at least 2). A contest scores
    0.5 with probability min(tie_share, 2·min(p, 1 − p)), else 1 or 0, with E[score] = p. Returns (means, n):
    (n_datasets, G) scenario means and the (n_datasets,) total contests.
    """
    p = scenario_rates(rng, n_datasets, n_scenarios, mean, spread, family)
    if unequal:
        sizes = np.maximum(2, np.round(per_scenario * np.linspace(0.4, 1.6, n_scenarios))).astype(int)
    else:
        sizes = np.full(n_scenarios, per_scenario)
    sizes = np.broadcast_to(sizes, (n_datasets, n_scenarios))
    means = scenario_means_from_rates(rng, p, sizes, tie_share)
    return means, sizes.sum(axis=1).astype(float)
