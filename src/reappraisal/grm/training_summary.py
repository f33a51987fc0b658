"""The GRM's training summary (``training_summary.json`` in the final model's
folder) and the compact view of it that the evaluation reports.
"""

from __future__ import annotations

from typing import Any, Mapping

SUMMARY_FILE = "training_summary.json"


def training_health(summary: Mapping[str, Any]) -> dict[str, Any]:
    """A compact view of ``training_summary.json``: SFT loss, GRPO reward / KL / unparseable per step."""
    sft_log = [r for r in summary.get("sft", {}).get("log", []) if "loss" in r]
    grpo_log = [r for r in summary.get("grpo", {}).get("log", []) if "reward" in r]
    keys = ("reward", "reward_std", "kl", "entropy", "grm/unparseable", "completions/clipped_ratio",
            "frac_reward_zero_std")
    return {
        "sft_source": summary.get("sft", {}).get("source"),
        "sft_rows": summary.get("sft", {}).get("n_rows"),
        "sft_loss_first": sft_log[0]["loss"] if sft_log else None,
        "sft_loss_last": sft_log[-1]["loss"] if sft_log else None,
        "grpo_steps": [{"step": r.get("step"), **{k: r.get(k) for k in keys}} for r in grpo_log],
        "seconds": summary.get("seconds"),
    }
