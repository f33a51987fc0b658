"""Training health of a GRPO run: the per-step log and a verdict (pure).

The per-step log keeps, for every optimizer step, TRL's metrics under short
column names (:data:`LOG_COLUMNS`): reward and its std, each committee
component, KL, entropy, ``frac_reward_zero_std``, the share of completions
truncated at the length limit, the format-gate rates and completion lengths.

The verdict checks, with thresholds from ``policy.health`` in the config
(``window`` = the last ``window`` steps, or all when fewer):

* ``kl_bounded``: the largest per-step KL ≤ ``kl_max``;
* ``entropy_alive``: mean entropy of the last window ≥ ``entropy_min_ratio`` ×
  mean entropy of the first window (no collapse to a deterministic policy);
* ``reward_std_alive``: mean ``reward_std`` of the last window ≥
  ``reward_std_min`` and mean ``frac_reward_zero_std`` ≤
  ``frac_zero_std_max`` (groups still disagree, so GRPO still has signal);
* ``truncation_low``: mean truncated share of the last window ≤
  ``clipped_ratio_max``;
* ``format_ok``: mean format-gate pass rate of the last window ≥ ``gate_pass_min``.

A check whose metric is missing fails (it cannot vouch for the run).
"""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any, Iterable, Mapping

from reappraisal.settings import HealthSettings

#: CSV column -> TRL log key.
LOG_COLUMNS: dict[str, str] = {
    "reward": "reward",
    "reward_std": "reward_std",
    "committee_reward": "rewards/committee/mean",
    "rm_score": "committee/rm_score",
    "grm_score": "committee/grm_score",
    "gold": "rewards/gold/mean",
    "gold_std": "rewards/gold/std",
    "guard": "committee/guard",
    "rm_flat_rate": "committee/rm_flat_rate",
    "grm_flat_rate": "committee/grm_flat_rate",
    "grm_error_rate": "committee/grm_error_rate",
    "gate_pass_rate": "committee/gate_pass_rate",
    "gate_empty_rate": "committee/gate_empty_rate",
    "gate_too_long_rate": "committee/gate_too_long_rate",
    "kl": "kl",
    "entropy": "entropy",
    "frac_reward_zero_std": "frac_reward_zero_std",
    "clipped_ratio": "completions/clipped_ratio",
    "completion_mean_length": "completions/mean_length",
    "completion_min_length": "completions/min_length",
    "completion_max_length": "completions/max_length",
    "loss": "loss",
    "grad_norm": "grad_norm",
    "learning_rate": "learning_rate",
}


def training_log_rows(log_history: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per logged training step (entries carrying ``reward``), under :data:`LOG_COLUMNS` names."""
    rows = {}
    for entry in log_history:
        if "reward" not in entry or "step" not in entry:
            continue
        row = {"step": int(entry["step"])}
        for col, key in LOG_COLUMNS.items():
            value = entry.get(key)
            row[col] = float(value) if isinstance(value, (int, float)) and value is not None else math.nan
        rows[row["step"]] = row  # a resumed run may re-log a step: keep the latest
    return [rows[s] for s in sorted(rows)]


def _mean(rows: list[Mapping[str, Any]], col: str) -> float:
    vals = [r.get(col, math.nan) for r in rows]
    vals = [v for v in vals if isinstance(v, (int, float)) and math.isfinite(v)]
    return sum(vals) / len(vals) if vals else math.nan


def _check(value: float, threshold: float, ok: bool, description: str) -> dict[str, Any]:
    finite = isinstance(value, (int, float)) and math.isfinite(value)
    return {
        "value": value if finite else None,
        "threshold": threshold,
        "passed": bool(finite and ok),
        "description": description,
    }


def health_verdict(rows: list[Mapping[str, Any]], thresholds: HealthSettings) -> dict[str, Any]:
    """The verdict on a run's per-step rows (see module doc); ``verdict`` is healthy/unhealthy/no_data."""
    t = thresholds
    if not rows:
        return {"verdict": "no_data", "n_steps": 0, "checks": {}, "failed": [], "thresholds": asdict(t)}
    w = max(1, min(t.window, len(rows)))
    first, last = rows[:w], rows[-w:]
    kls = [r.get("kl", math.nan) for r in rows]
    kls = [k for k in kls if math.isfinite(k)]
    kl_max = max(kls) if kls else math.nan
    ent0, ent1 = _mean(first, "entropy"), _mean(last, "entropy")
    ratio = ent1 / ent0 if math.isfinite(ent0) and ent0 > 0 else math.nan
    rstd = _mean(last, "reward_std")
    fzero = _mean(last, "frac_reward_zero_std")
    clipped = _mean(last, "clipped_ratio")
    gate = _mean(last, "gate_pass_rate")
    checks = {
        "kl_bounded": _check(kl_max, t.kl_max, kl_max <= t.kl_max, "largest per-step KL to the reference model"),
        "entropy_alive": _check(
            ratio, t.entropy_min_ratio, ratio >= t.entropy_min_ratio,
            f"mean entropy of the last {w} step(s) / of the first {w} step(s)",
        ),
        "reward_std_alive": _check(
            rstd, t.reward_std_min,
            rstd >= t.reward_std_min and math.isfinite(fzero) and fzero <= t.frac_zero_std_max,
            f"mean reward std of the last {w} step(s) (and frac_reward_zero_std {fzero:.3f} <= {t.frac_zero_std_max})",
        ),
        "truncation_low": _check(
            clipped, t.clipped_ratio_max, clipped <= t.clipped_ratio_max,
            f"mean share of completions truncated at the length limit, last {w} step(s)",
        ),
        "format_ok": _check(
            gate, t.gate_pass_min, gate >= t.gate_pass_min, f"mean format-gate pass rate, last {w} step(s)"
        ),
    }
    failed = sorted(k for k, c in checks.items() if not c["passed"])
    return {
        "verdict": "healthy" if not failed else "unhealthy",
        "failed": failed,
        "checks": checks,
        "n_steps": len(rows),
        "window": w,
        "first_step": _clean(rows[0]),
        "last_step": _clean(rows[-1]),
        "thresholds": asdict(t),
    }


def _clean(row: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (v if not (isinstance(v, float) and not math.isfinite(v)) else None) for k, v in row.items()}
