"""The scorers a GRPO arm is rewarded by (its proxies): which, with which settings, and building them (lazy imports).

:func:`judge_settings` describes them from the arm and the config (what a training run's resume check
compares); :func:`build_scorers` builds the real ones on a device. Training (:mod:`.train_io`) and the truth
along the KL (:mod:`reappraisal.evaluation.trajectory_io`) both read an arm's proxies through them.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..errors import ConfigError, PipelineInputError
from ..settings import GrmSettings, RewardSettings, as_config
from .arms import ArmSpec


def judge_settings(arm: ArmSpec, *, reward: RewardSettings, grm: GrmSettings, primary_dimension: str | None,
                   rm_dirs, grm_dir) -> dict[str, Any]:
    """Which judges an arm uses and their settings: what :func:`build_scorers` builds.

    Each judge runs with the settings it is evaluated with: the ensemble with
    the ``reward`` settings (``ensemble.*``, ``max_length``), the GRM
    with the ``grm`` settings (``scorer_mode``, ``engine``, ``max_new_tokens``,
    ``batch_size``), its references being the median human train-split
    reappraisal on ``primary_dimension`` (``data.primary_dimension``).
    """
    out: dict[str, Any] = {}
    if arm.weights.uses_rm:
        bradley_terry = arm.reward == "bradley_terry"
        if not rm_dirs:
            what = "the Bradley-Terry reward model" if bradley_terry else "the reward-model ensemble"
            raise PipelineInputError(f"the arm is rewarded by {what} but no --rm-dirs were given", where=arm.name)
        if bradley_terry and len(rm_dirs) != 1:
            raise PipelineInputError(f"a bradley_terry arm takes the Bradley-Terry model's one folder as --rm-dirs, "
                                     f"got {len(rm_dirs)}", where=arm.name)
        out["rm"] = {"dirs": [str(d) for d in rm_dirs], "max_length": reward.max_length,
                     **as_config(reward.ensemble), **({"model": "bradley_terry"} if bradley_terry else {})}
    if arm.weights.uses_grm:
        if not grm_dir:
            raise PipelineInputError("the arm weights the GRM but no --grm-dir was given", where=arm.name)
        if not primary_dimension:
            raise ConfigError("data.primary_dimension is required for the GRM's references", where="--params")
        out["grm"] = {"dir": str(grm_dir), "primary_dimension": primary_dimension, "max_new_tokens": grm.max_new_tokens,
                      "batch_size": grm.batch_size, "scorer_mode": grm.scorer_mode, "engine": grm.engine}
    return out


def build_scorers(judges: Mapping[str, Any], *, targets, vignettes, device):
    """The real judges described by :func:`judge_settings`, on ``device`` (lazy imports)."""
    rm = grm = None
    if "rm" in judges:
        from reappraisal.reward.ensemble import EnsembleScorer

        j = judges["rm"]
        rm = EnsembleScorer.from_dirs(j["dirs"], penalty=str(j["penalty"]), lam=float(j["lam"]),
                                      batch_size=int(j["batch_size"]), max_length=int(j["max_length"]), device=device)
    if "grm" in judges:
        from reappraisal.grm.scorer import GRMScorer as RealGRM, median_references

        j = judges["grm"]
        grm = RealGRM.from_dir(
            j["dir"], references=median_references(targets, vignettes, j["primary_dimension"]),
            max_new_tokens=int(j["max_new_tokens"]), batch_size=int(j["batch_size"]), mode=str(j["scorer_mode"]),
            engine=str(j["engine"]), device=device,
        )
    return rm, grm
