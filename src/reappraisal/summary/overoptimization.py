"""Overoptimization per arm (Gao, Schulman & Hilton 2022): does gold peak and fall while the proxy keeps rising? Pure.

From an arm's training log (one row per optimizer step, see
:data:`reappraisal.policy.health.LOG_COLUMNS`): ``gold``, the log-only gold
scorer's mean quality of the step's completions; the scorers' raw outputs
on those completions, the proxy the policy climbs: ``rm_score`` (the reward
ensemble's composite score) and ``grm_score`` (the GRM's win rate against
the median human), each the mean over the answers that passed the format
gate; ``kl`` to the reference. Running means over ``window`` steps.

The proxy is never the log's ``reward`` column: that is the committee reward
after z-scoring within each prompt group (minus the guard, plus the format
gate's penalties), whose z's average to 0 in every group, so its running
mean cannot rise however far the policy climbs its scorers. Instead each
scorer the arm was trained on (weight > 0) is put on a fixed scale once,
standardised against the arm's first window: ``z_k = (x_k − m_k) / s_k``
with ``m_k`` and ``s_k`` the mean and standard deviation (ddof 1) of its
step means over the first ``window`` steps (a scorer constant there takes
the whole run's spread; one constant throughout, its raw units). The proxy
is the weighted mean ``Σ w_k·z_k / Σ w_k`` with the arm's committee weights
(``w_rm``, ``w_grm``; without weights, every scorer the log carries,
equally). For an arm of one scorer this is an affine map of that scorer's
raw output; for a committee it puts the ensemble score and the GRM win rate
in one unit, the step-to-step spread at the run's start, the same at every
step and never recomputed within a group. Neither the disagreement guard
nor the format gate's penalty enters (both are defined within a group); the
gate's pass rate is in the training-health table.

* :class:`GoldTrajectory`: the steps are halved by parity; the even-numbered
  rows choose the peak's window (their highest running mean, at
  ``gold_peak_step``) and the odd-numbered rows measure it: ``gold_peak``,
  ``gold_first`` and ``gold_last`` are the odd rows' means in the peak's, the
  first and the last window, ``gold_drop`` = peak − last and its standard
  error ``gold_drop_se`` (the two windows' standard errors of the mean, steps
  treated as independent). Gold *fell* when the peak is not the last window
  and the drop exceeds :data:`GOLD_DROP_SES` standard errors. Measured on
  steps that did not choose it, the peak carries no winner's curse: the
  earlier rule (argmax and drop from the same running means) called flat gold
  fallen in 0.3-0.5 of simulated logs (``benchmarks/overoptimization_null.py``).
* ``ensemble_*`` / ``grm_*``: each raw scorer's running mean in the first
  window, at the gold peak and in the last window (empty for a scorer the
  arm does not use); ``proxy_first`` / ``proxy_at_peak`` / ``proxy_last``:
  the fixed-scale proxy there, in first-window standard deviations
  (``proxy_first`` is 0 by construction);
* ``sqrt_kl_at_peak`` / ``sqrt_kl_last``: √ of the running mean KL there
  (Gao et al.'s x-axis; empty at β = 0, where no reference model is kept and
  no KL is logged);
* ``overoptimized``: gold fell while the proxy rose past its value at the
  peak (by more than float32 rounding, :data:`PROXY_RESOLUTION`, carried
  through the standardisation) — measured on this run, whatever it shows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import pandas as pd

from .summary_table import Table, not_computable

OVEROPTIMIZATION_COLUMNS = ["arm", "steps", "window", "gold_first", "gold_peak", "gold_peak_step", "gold_last",
                            "gold_drop", "gold_drop_se", "ensemble_first", "ensemble_at_peak", "ensemble_last",
                            "grm_first", "grm_at_peak", "grm_last", "proxy_first", "proxy_at_peak", "proxy_last",
                            "sqrt_kl_at_peak", "sqrt_kl_last", "overoptimized", "note"]

#: Steps of the running means (the demo's arms train 80 steps).
WINDOW = 20

#: The raw scorers of the proxy: (training-log column, committee weight key, name in the table).
SCORERS: tuple[tuple[str, str, str], ...] = (("rm_score", "w_rm", "ensemble"), ("grm_score", "w_grm", "grm"))

#: The scorers compute in float32: window means closer than this are equal, not risen (a demo arm's two
#: windows of scores that were all multiples of 0.375 up to float32 rounding differed by 1e-8).
PROXY_RESOLUTION = 1e-6

#: Gold fell when its drop from the peak exceeds this many standard errors.
GOLD_DROP_SES = 2.0


@dataclass(frozen=True)
class GoldTrajectory:
    """Gold's running means over training: first window, peak (row ``peak_index``, ``peak_step``) and last."""

    steps: int
    window: int
    first: float
    peak: float
    peak_step: int
    peak_index: int
    last: float
    drop: float
    drop_se: float

    @property
    def fell(self) -> bool:
        """The last window lies below the peak by more than :data:`GOLD_DROP_SES` standard errors."""
        return self.drop_se > 0 and self.drop > GOLD_DROP_SES * self.drop_se


#: The largest lag-1 autocorrelation of gold's step noise the standard error allows for.
MAX_AUTOCORRELATION = 0.8


def long_run_variance_factor(gold: pd.Series) -> float:
    """How much neighbouring steps' correlated noise inflates the variance of a window mean: (1 + ρ)/(1 − ρ) for
    AR(1) noise, with ρ read from the first differences (their lag-1 autocorrelation is −(1 − ρ)/2, whatever
    gold's trend), clipped to [0, :data:`MAX_AUTOCORRELATION`]; 1 when the log is too short to say."""
    diffs = gold.diff().dropna().to_numpy()
    if len(diffs) < 8 or diffs.std() == 0:
        return 1.0
    d = diffs - diffs.mean()
    r = float(d[1:] @ d[:-1] / (d @ d))
    rho = min(max(1.0 + 2.0 * r, 0.0), MAX_AUTOCORRELATION)
    return (1.0 + rho) / (1.0 - rho)


def gold_trajectory(log: pd.DataFrame, window: int, *, split: bool = True) -> GoldTrajectory:
    """Gold's running means over ``window`` steps of a training log (steps without gold dropped); raises
    ValueError without gold or with fewer than two logged steps (four when ``split``).

    ``split`` (the verdict's rule): the steps are halved by parity. The peak's window is chosen on the even-numbered
    rows' running means (over window/2 of them) and every gold figure (first, peak, last, drop and its standard
    error) is read from the odd-numbered rows of the same windows: the window that happened to look best is
    measured on steps that did not choose it, so the maximum of many running means (the winner's curse) no longer
    passes for a peak; the standard errors allow for correlated noise between neighbouring steps
    (:func:`long_run_variance_factor`). ``peak_index`` is the full log's row that ends the peak's window. ``split=False``: the
    earlier rule, peak and drop from the same running means."""
    log = log.apply(pd.to_numeric, errors="coerce")
    if "gold" not in log or not log["gold"].notna().any():
        raise ValueError("the training log has no gold column (policy.gold_scorer is not set)")
    log = log.dropna(subset=["gold"]).reset_index(drop=True)
    if len(log) < (4 if split else 2):
        raise ValueError(f"fewer than {4 if split else 2} logged steps with gold")
    step_of = (lambda i: int(log["step"].iloc[i])) if "step" in log else (lambda i: int(i))
    if not split:
        w = max(2, min(int(window), len(log)))
        gold = log["gold"].rolling(w).mean()
        peak, last = int(gold.idxmax()), len(log) - 1
        se = lambda end: float(log["gold"].iloc[end - w + 1:end + 1].std(ddof=1) / math.sqrt(w))
        return GoldTrajectory(steps=len(log), window=w, first=float(gold.iloc[w - 1]), peak=float(gold.iloc[peak]),
                              peak_step=step_of(peak), peak_index=peak, last=float(gold.iloc[last]),
                              drop=float(gold.iloc[peak] - gold.iloc[last]),
                              drop_se=math.hypot(se(peak), se(last)) if peak != last else 0.0)
    pairs = len(log) // 2  # row 2i chooses, row 2i + 1 measures (an odd last row is left out)
    chooser = log["gold"].iloc[0:2 * pairs:2].reset_index(drop=True)
    measure = log["gold"].iloc[1:2 * pairs:2].reset_index(drop=True)
    h = max(2, min(int(window) // 2, pairs))
    chosen = int(chooser.rolling(h).mean().idxmax())
    held_out = measure.rolling(h).mean()
    last = pairs - 1
    inflation = math.sqrt(long_run_variance_factor(log["gold"]))
    se = lambda end: inflation * float(measure.iloc[end - h + 1:end + 1].std(ddof=1) / math.sqrt(h))
    peak_row = 2 * chosen + 1
    return GoldTrajectory(steps=len(log), window=2 * h, first=float(held_out.iloc[h - 1]),
                          peak=float(held_out.iloc[chosen]), peak_step=step_of(peak_row), peak_index=peak_row,
                          last=float(held_out.iloc[last]), drop=float(held_out.iloc[chosen] - held_out.iloc[last]),
                          drop_se=math.hypot(se(chosen), se(last)) if chosen != last else 0.0)


def proxy_weights(log: pd.DataFrame, weights: Mapping[str, float] | None = None) -> dict[str, float]:
    """The raw scorer columns the arm climbs, with their weights summing to 1 (see module doc); raises ValueError
    when the log lacks one the weights use, or carries none."""
    out = {}
    for column, key, name in SCORERS:
        logged = column in log and pd.to_numeric(log[column], errors="coerce").notna().any()
        w = (1.0 if logged else 0.0) if weights is None else float(weights.get(key) or 0.0)
        if w > 0 and not logged:
            raise ValueError(f"the training log has no raw {name} score ({column}) though the arm weights it")
        if w > 0:
            out[column] = w
    if not out:
        raise ValueError("the training log has no raw scorer column (rm_score, grm_score)")
    total = sum(out.values())
    return {c: w / total for c, w in out.items()}


def fixed_scale_proxy(log: pd.DataFrame, weights: Mapping[str, float], window: int) -> tuple[pd.Series, float]:
    """The per-step proxy Σ w_k·(x_k − m_k)/s_k with m_k, s_k from the first ``window`` rows (``weights`` from
    :func:`proxy_weights`), and the float32 resolution in its units. A scorer constant over the first window
    takes the whole run's spread as its scale, and one constant throughout its raw units (it adds nothing)."""
    proxy, resolution = pd.Series(0.0, index=log.index), 0.0
    for column, w in weights.items():
        x = pd.to_numeric(log[column], errors="coerce")
        m = float(x.iloc[:window].mean())
        s = next((v for v in (float(x.iloc[:window].std(ddof=1)), float(x.std(ddof=1)))
                  if math.isfinite(v) and v > PROXY_RESOLUTION), 1.0)
        proxy = proxy + w * (x - m) / s
        resolution += w * PROXY_RESOLUTION / s
    return proxy, resolution


def overoptimization_row(log: pd.DataFrame, window: int, weights: Mapping[str, float] | None = None, *,
                         split: bool = True) -> dict:
    """The row of one training log (see module doc); ``weights`` the arm's committee weights (``w_rm``,
    ``w_grm``) when known; ``split`` as in :func:`gold_trajectory`. Raises ValueError without gold or raw scorer
    columns."""
    log = log.apply(pd.to_numeric, errors="coerce")
    gold_trajectory(log, window, split=split)  # the log has gold
    parts = proxy_weights(log, weights)
    log = log.dropna(subset=["gold", *parts]).reset_index(drop=True)
    g = gold_trajectory(log, window, split=split)
    w, peak, last = g.window, g.peak_index, g.steps - 1
    proxy, resolution = fixed_scale_proxy(log, parts, w)
    proxy = proxy.rolling(w).mean()
    kl = log["kl"].rolling(w).mean() if "kl" in log and log["kl"].notna().any() else None
    sqrt_kl = (lambda i: float(math.sqrt(max(0.0, kl.iloc[i])))) if kl is not None else (lambda i: None)
    row = {"steps": g.steps, "window": w, "gold_first": g.first, "gold_peak": g.peak, "gold_peak_step": g.peak_step,
           "gold_last": g.last, "gold_drop": g.drop, "gold_drop_se": g.drop_se,
           "proxy_first": float(proxy.iloc[w - 1]), "proxy_at_peak": float(proxy.iloc[peak]),
           "proxy_last": float(proxy.iloc[last]), "sqrt_kl_at_peak": sqrt_kl(peak), "sqrt_kl_last": sqrt_kl(last),
           "overoptimized": bool(g.fell and proxy.iloc[last] - proxy.iloc[peak] > resolution)}
    for column, _, name in SCORERS:
        if column in parts:
            raw = log[column].rolling(w).mean()
            row.update({f"{name}_first": float(raw.iloc[w - 1]), f"{name}_at_peak": float(raw.iloc[peak]),
                        f"{name}_last": float(raw.iloc[last])})
    return row


def overoptimization_table(arms: Sequence[str], logs: Mapping[str, pd.DataFrame | None],
                           sources: Mapping[str, Sequence[str]], *, window: int = WINDOW,
                           weights: Mapping[str, Mapping[str, float] | None] | None = None) -> Table:
    """One row per arm; ``weights``: arm → its committee weights (its health record's), when known."""
    weights = weights or {}
    title = "Overoptimization: gold against the raw proxy over training, per arm"
    caption = (f"Running means over {window} steps of each arm's training log: the gold (logged, never optimized) "
               "at its peak and at the end, and there the raw scorers the arm climbs (the ensemble's composite "
               "score; the GRM's win rate against the median human; means over the answers that passed the format "
               "gate), never the group-normalised reward, whose mean cannot rise. proxy: the arm's scorers each "
               "standardised once against its first window and weighted as in its committee, in first-window "
               "standard deviations (0 in the first window). Gold's peak window is chosen on the even-numbered steps and "
               "every gold figure is read from the odd-numbered ones (no winner's curse). overoptimized: gold fell "
               "from its peak by more than "
               f"{GOLD_DROP_SES:g} standard errors while the proxy rose past its value at the peak (Gao et al.'s "
               "signature), as measured on this run; √KL is empty at β = 0 (no reference model is kept).")
    estimand = "per-run training trajectory (no sampling interval over runs)"
    if not arms:
        return not_computable("overoptimization", title, caption, estimand, OVEROPTIMIZATION_COLUMNS,
                              "no policy arms configured")
    rows, row_sources = [], []
    for arm in arms:
        log = logs.get(arm)
        row = {"arm": arm, "note": None}
        try:
            if log is None or log.empty:
                raise ValueError("no training log")
            row.update(overoptimization_row(log, window, weights.get(arm)))
        except ValueError as exc:
            row["note"] = str(exc)
        rows.append(row)
        row_sources.append(tuple(p for p in sources.get(arm, ()) if p.endswith(".csv")))
    frame = pd.DataFrame(rows, columns=OVEROPTIMIZATION_COLUMNS)
    display = [("arm", ("arm",)), ("gold peak", ("gold_peak",)), ("step", ("gold_peak_step",)),
               ("gold last", ("gold_last",)), ("drop", ("gold_drop",)), ("se", ("gold_drop_se",)),
               ("ensemble at peak", ("ensemble_at_peak",)), ("ensemble last", ("ensemble_last",)),
               ("GRM win rate at peak", ("grm_at_peak",)), ("GRM win rate last", ("grm_last",)),
               ("proxy at peak", ("proxy_at_peak",)), ("proxy last", ("proxy_last",)), ("sqrt KL", ("sqrt_kl_last",)),
               ("overoptimized", ("overoptimized",))]
    return Table("overoptimization", title, caption, estimand, frame, row_sources, display=display)
