"""Overoptimization per arm (Gao, Schulman & Hilton 2022): does gold peak and fall while the proxy keeps rising? Pure.

From an arm's training log (one row per optimizer step: ``gold``, the log-only
gold scorer's mean quality of the step's completions; ``reward``, the proxy
the arm is optimised against; ``kl`` to the reference), with running means
over ``window`` steps:

* ``gold_peak``: the highest running mean of gold, at ``gold_peak_step``;
  ``gold_last``: the last window's; ``gold_drop`` = peak − last and its
  standard error ``gold_drop_se`` (the two windows' standard errors, steps
  treated as independent);
* ``proxy_at_peak`` / ``proxy_last``: the proxy's running mean at the gold
  peak and in the last window; ``sqrt_kl_at_peak`` / ``sqrt_kl_last``: √ of the
  running mean KL there (Gao et al.'s x-axis; empty at β = 0, where no
  reference model is kept and no KL is logged);
* ``overoptimized``: the gold fell from its peak by more than two standard
  errors while the proxy rose past its value at the peak (by more than
  float32 rounding, :data:`PROXY_RESOLUTION`) — measured on this run,
  whatever it shows. A peak in the last window is no drop.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import pandas as pd

from .summary_table import Table, not_computable

OVEROPTIMIZATION_COLUMNS = ["arm", "steps", "window", "gold_first", "gold_peak", "gold_peak_step", "gold_last",
                            "gold_drop", "gold_drop_se", "proxy_first", "proxy_at_peak", "proxy_last",
                            "sqrt_kl_at_peak", "sqrt_kl_last", "overoptimized", "note"]


#: The proxy is computed in float32: window means closer than this are equal, not risen (a demo arm's two
#: windows of rewards that were all multiples of 0.375 up to float32 rounding differed by 1e-8).
PROXY_RESOLUTION = 1e-6


def overoptimization_row(log: pd.DataFrame, window: int) -> dict:
    """The row of one training log (see module doc); raises ValueError without gold or proxy."""
    log = log.apply(pd.to_numeric, errors="coerce")
    if "gold" not in log or not log["gold"].notna().any() or "reward" not in log:
        raise ValueError("the training log has no gold column (policy.gold_scorer is not set)")
    log = log.dropna(subset=["gold", "reward"]).reset_index(drop=True)
    w = max(2, min(int(window), len(log)))
    gold = log["gold"].rolling(w).mean()
    proxy = log["reward"].rolling(w).mean()
    kl = log["kl"].rolling(w).mean() if "kl" in log and log["kl"].notna().any() else None
    peak = int(gold.idxmax())
    last = len(log) - 1
    se = lambda end: float(log["gold"].iloc[end - w + 1:end + 1].std(ddof=1) / math.sqrt(w))
    drop = float(gold.iloc[peak] - gold.iloc[last])
    drop_se = math.hypot(se(peak), se(last)) if peak != last else 0.0
    sqrt_kl = (lambda i: float(math.sqrt(max(0.0, kl.iloc[i])))) if kl is not None else (lambda i: None)
    return {"steps": len(log), "window": w, "gold_first": float(gold.iloc[w - 1]), "gold_peak": float(gold.iloc[peak]),
            "gold_peak_step": int(log["step"].iloc[peak]) if "step" in log else peak,
            "gold_last": float(gold.iloc[last]), "gold_drop": drop, "gold_drop_se": drop_se,
            "proxy_first": float(proxy.iloc[w - 1]), "proxy_at_peak": float(proxy.iloc[peak]),
            "proxy_last": float(proxy.iloc[last]), "sqrt_kl_at_peak": sqrt_kl(peak), "sqrt_kl_last": sqrt_kl(last),
            "overoptimized": bool(peak != last and drop > 2 * drop_se
                                  and proxy.iloc[last] - proxy.iloc[peak] > PROXY_RESOLUTION)}


def overoptimization_table(arms: Sequence[str], logs: Mapping[str, pd.DataFrame | None],
                           sources: Mapping[str, Sequence[str]], *, window: int) -> Table:
    title = "Overoptimization: gold against the proxy over training, per arm"
    caption = (f"Running means over {window} steps of each arm's training log: the gold (logged, never optimized) "
               "at its peak and at the end, the proxy reward the arm optimises and √KL to the reference there. "
               "overoptimized: gold fell from its peak by more than two standard errors while the proxy rose "
               "past its value at the peak (Gao et al.'s signature), as measured on this run; √KL is empty at "
               "β = 0 (no reference model is kept).")
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
            row.update(overoptimization_row(log, window))
        except ValueError as exc:
            row["note"] = str(exc)
        rows.append(row)
        row_sources.append(tuple(p for p in sources.get(arm, ()) if p.endswith(".csv")))
    frame = pd.DataFrame(rows, columns=OVEROPTIMIZATION_COLUMNS)
    display = [("arm", ("arm",)), ("gold peak", ("gold_peak",)), ("step", ("gold_peak_step",)),
               ("gold last", ("gold_last",)), ("drop", ("gold_drop",)), ("se", ("gold_drop_se",)),
               ("proxy at peak", ("proxy_at_peak",)), ("proxy last", ("proxy_last",)), ("sqrt KL", ("sqrt_kl_last",)),
               ("overoptimized", ("overoptimized",))]
    return Table("overoptimization", title, caption, estimand, frame, row_sources, display=display)
