"""Gold and the raw proxies along the KL from the start, per arm, from fresh draws at kept steps (demo). Pure.

Input: the trajectory_truth stage's rows (:data:`reappraisal.evaluation.trajectory_io.TRAJECTORY_COLUMNS`),
one per arm and checkpoint: step 0 is the model GRPO started from (its own KL reference), then the kept
steps, then the final model. Every number is a truth of the demo world up to its Monte Carlo error: the
answers are fresh draws, the gold is the world's.

* ``gold_gain``: the checkpoint's mean gold minus the start's; ``truth_vs_start``: the panel's expected
  verdict of a checkpoint answer against a start answer (0.5: no better, no worse).
* ``proxy``: the scorers the arm was trained on, on a fixed scale: each scorer's mean minus its mean on the
  start's answers, over its standard deviation across the start's answers, weighted by the arm's committee
  weights (``w_rm``, ``w_grm``). The start's answers are the fixed reference distribution; nothing is
  normalised within a group or a checkpoint, so the proxy rises when the policy climbs its scorers.
* Gao, Schulman & Hilton's (2022) form for RL, ``R(d) = d·(α − β·log d)`` with ``d = √KL``, fitted by least
  squares to ``gold_gain`` at the checkpoints past the start (exact at d = 0); its peak is at
  ``d* = exp(α/β − 1)`` when β > 0 (no interior peak otherwise).
* ``overoptimized``: gold at the last checkpoint below the best checkpoint's by more than
  :data:`DROP_SES` standard errors (theirs combined) while the proxy there is above its value at that
  checkpoint (Gao's signature, from truths, not from the training log);
  ``first_raises_gold``: the best checkpoint's truth against the start has its lower bound
  (truth − z·se, z of :data:`CONFIDENCE`) above 0.5 (the best of a handful of checkpoints, so slightly
  favoured by its pick).
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.stats import norm

from .summary_table import Table, not_computable

DROP_SES = 3.0
CONFIDENCE = 0.95
TRAJECTORY_TABLE_COLUMNS = ["arm", "step", "sqrt_kl", "kl", "kl_se", "gold_mean", "gold_se", "gold_gain",
                            "truth_vs_start", "truth_se", "ensemble_mean", "grm_mean", "proxy", "answers"]
FIT_COLUMNS = ["arm", "checkpoints", "alpha", "beta", "sqrt_kl_peak_fit", "gold_gain_peak_fit", "best_step",
               "best_truth", "best_truth_low", "last_truth", "gold_drop", "gold_drop_se", "proxy_at_best",
               "proxy_last", "overoptimized", "first_raises_gold", "note"]


def gao_fit(d: Sequence[float], gain: Sequence[float]) -> tuple[float, float]:
    """(α, β) of ``gain ≈ d·(α − β·log d)`` by least squares over the points with d > 0 (NaN with < 2)."""
    d, gain = np.asarray(d, dtype=float), np.asarray(gain, dtype=float)
    keep = (d > 0) & np.isfinite(gain)
    if keep.sum() < 2:
        return math.nan, math.nan
    x = np.column_stack([d[keep], -d[keep] * np.log(d[keep])])
    (alpha, beta), *_ = np.linalg.lstsq(x, gain[keep], rcond=None)
    return float(alpha), float(beta)


def gao_peak(alpha: float, beta: float) -> tuple[float, float]:
    """(d*, R(d*)) of the fitted form: the interior maximum when β > 0, else NaN (it rises or falls throughout)."""
    if not (math.isfinite(alpha) and math.isfinite(beta)) or beta <= 0:
        return math.nan, math.nan
    d = math.exp(alpha / beta - 1.0)
    return d, beta * d


def fixed_scale_proxy(frame: pd.DataFrame) -> pd.Series:
    """Per checkpoint: the arm's weighted scorers, each standardised once against the start's answers."""
    start = frame.loc[frame["step"].idxmin()]
    parts, weights = [], []
    for name, weight in (("ensemble", "w_rm"), ("grm", "w_grm")):
        w = float(start[weight])
        sd = float(start[f"{name}_sd"])
        if w > 0 and math.isfinite(sd) and sd > 0 and frame[f"{name}_mean"].notna().all():
            parts.append(w * (frame[f"{name}_mean"] - float(start[f"{name}_mean"])) / sd)
            weights.append(w)
    if not parts:
        return pd.Series(math.nan, index=frame.index)
    return sum(parts) / sum(weights)


def arm_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """One arm's checkpoints with :data:`TRAJECTORY_TABLE_COLUMNS`, in step order."""
    frame = frame.sort_values("step").reset_index(drop=True)
    out = frame.copy()
    out["gold_gain"] = frame["gold_mean"] - float(frame.loc[0, "gold_mean"])
    out["proxy"] = fixed_scale_proxy(frame)
    return out[TRAJECTORY_TABLE_COLUMNS]


def arm_fit(rows: pd.DataFrame) -> dict:
    """One arm's fit and verdicts (:data:`FIT_COLUMNS`) from its :func:`arm_rows`."""
    z = float(norm.ppf(0.5 + CONFIDENCE / 2))
    out: dict = {"arm": rows["arm"].iloc[0], "checkpoints": int(len(rows)), "note": None}
    alpha, beta = gao_fit(rows["sqrt_kl"], rows["gold_gain"])
    d_peak, r_peak = gao_peak(alpha, beta)
    out.update(alpha=alpha, beta=beta, sqrt_kl_peak_fit=d_peak, gold_gain_peak_fit=r_peak)
    later = rows[rows["step"] > rows["step"].min()]
    if later.empty:
        out["note"] = "no checkpoint past the start"
        return out
    best = later.loc[later["truth_vs_start"].idxmax()]
    last = rows.iloc[-1]
    drop = float(best["gold_mean"] - last["gold_mean"])
    drop_se = math.hypot(float(best["gold_se"]), float(last["gold_se"])) if best["step"] != last["step"] else 0.0
    out.update(best_step=int(best["step"]), best_truth=float(best["truth_vs_start"]),
               best_truth_low=float(best["truth_vs_start"] - z * best["truth_se"]),
               last_truth=float(last["truth_vs_start"]), gold_drop=drop, gold_drop_se=drop_se,
               proxy_at_best=float(best["proxy"]), proxy_last=float(last["proxy"]))
    proxy_rose = math.isfinite(out["proxy_last"]) and out["proxy_last"] > out["proxy_at_best"]
    out["overoptimized"] = bool(best["step"] != last["step"] and drop > DROP_SES * drop_se and proxy_rose)
    out["first_raises_gold"] = bool(out["best_truth_low"] > 0.5)
    return out


def trajectory_tables(frames: Mapping[str, pd.DataFrame], sources: Mapping[str, str]) -> dict[str, Table]:
    """``trajectory`` (every arm's checkpoints) and ``trajectory_fit`` (one row per arm)."""
    title = "Gold and proxy along the KL from the start (fresh draws at kept steps)"
    caption = ("Each checkpoint of an arm (step 0: the model it started from, also its KL reference; the kept "
               "steps; the final model) draws fresh answers on the training scenarios. gold: the world's gold, "
               "its mean and the gain over the start; truth vs start: the panel's expected verdict of its answer "
               "against a start answer, with its Monte Carlo error; √KL: the square root of the sampled sequence "
               "KL to the start; proxy: the scorers the arm was trained on (the ensemble's score, the GRM's win "
               "rate), each standardised once against the start's answers and weighted as in its committee.")
    fit_title = "Overoptimization from truths: Gao's fit and verdicts per arm"
    fit_caption = ("Gao, Schulman & Hilton's RL form gold gain = d(α − β log d), d = √KL, fitted by least squares; "
                   "its peak d* = exp(α/β − 1) when β > 0. best: the checkpoint past the start with the highest "
                   "truth against the start (lower bound truth − 1.96 se). overoptimized: the last checkpoint's "
                   f"gold below the best's by more than {DROP_SES:g} standard errors while its proxy is higher. "
                   "first raises gold: the best checkpoint's lower bound above 0.5.")
    estimand = "truths of the demo world (fresh draws; Monte Carlo error only)"
    if not frames:
        why = "no trajectory drawn (demo truth with evaluation.truth.trajectory.arms)"
        return {"trajectory": not_computable("trajectory", title, caption, estimand, TRAJECTORY_TABLE_COLUMNS, why),
                "trajectory_fit": not_computable("trajectory_fit", fit_title, fit_caption, estimand, FIT_COLUMNS, why)}
    rows, fits, row_sources, fit_sources = [], [], [], []
    for arm in sorted(frames):
        arm_table = arm_rows(frames[arm])
        rows.append(arm_table)
        row_sources += [(sources[arm],)] * len(arm_table)
        fits.append(arm_fit(arm_table))
        fit_sources.append((sources[arm],))
    frame = pd.concat(rows, ignore_index=True)
    display = [("arm", ("arm",)), ("step", ("step",)), ("sqrt KL", ("sqrt_kl",)), ("gold", ("gold_mean",)),
               ("gold gain", ("gold_gain",)), ("truth vs start", ("truth_vs_start",)), ("se", ("truth_se",)),
               ("ensemble", ("ensemble_mean",)), ("GRM win rate", ("grm_mean",)), ("proxy", ("proxy",))]
    fit_frame = pd.DataFrame(fits, columns=FIT_COLUMNS)
    fit_display = [("arm", ("arm",)), ("alpha", ("alpha",)), ("beta", ("beta",)), ("sqrt KL at fitted peak", ("sqrt_kl_peak_fit",)),
                   ("best step", ("best_step",)), ("best truth vs start", ("best_truth",)), ("lower", ("best_truth_low",)),
                   ("last truth", ("last_truth",)), ("gold drop", ("gold_drop",)), ("se", ("gold_drop_se",)),
                   ("proxy at best", ("proxy_at_best",)), ("proxy last", ("proxy_last",)),
                   ("overoptimized", ("overoptimized",)), ("first raises gold", ("first_raises_gold",))]
    return {"trajectory": Table("trajectory", title, caption, estimand, frame, row_sources, display=display),
            "trajectory_fit": Table("trajectory_fit", fit_title, fit_caption, estimand, fit_frame, fit_sources,
                                    display=fit_display)}
