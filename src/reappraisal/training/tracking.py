"""Live training metrics: where every trainer reports its logged steps while it trains (``training.report_to``).

Every trainer (the reward seeds, the Bradley-Terry model, the GRM's SFT and GRPO, the policy's warm start,
every policy arm, the demo judge) is built on transformers and takes the reporter through ``TrainingArguments.report_to``
(:meth:`Tracking.training_args`), so whatever a trainer logs reaches it, a policy arm's committee figures
(``committee/*``, ``rewards/gold/*``: what ``training_log.csv`` records) included, since TRL logs them with the
loss.

Each training has its own folder, ``dvclive/<rule>/<job>`` (its rule passes it as ``--live-dir``, the GRM's
SFT as ``--sft-live-dir``; the generated ``dvc.yaml`` lists every one's ``metrics.json`` and ``plots/metrics``
(:mod:`reappraisal.workflow_dvc`), so ``dvc exp show`` lists each one's last logged step and ``dvc plots show``
draws every step). The folders are no stage's output: their contents (wall-clock figures among them) never
enter a hashed output.

DVCLive (:func:`open_live`) writes there and nowhere else: no ``dvc.yaml`` of its own (transformers' reporter
would open ``./dvclive`` and add its entries to the generated ``dvc.yaml``), no experiment saved from inside a
job (``save_dvc_exp=False``; under ``dvc exp run`` DVC records the experiment itself), no model logged as an
artifact, its step the trainer's global step. TensorBoard writes its event files into the same folder; wandb
and trackio use their own services (``WANDB_MODE=offline`` keeps wandb local).
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..compat.dvclive import live_outside_dvc
from ..compat.transformers import dvclive_callback as job_dvclive_callback
from ..errors import ConfigError
from ..settings import TrainingSettings

#: The reporters ``training.report_to`` accepts (the schema's enum).
REPORTERS = ("dvclive", "tensorboard", "wandb", "trackio", "none")
#: Reporters that write into the job's folder (the others keep their runs in their own places).
WRITE_TO_FOLDER = ("dvclive", "tensorboard")
#: The settings of a trainer's arguments that only say where it reports (left out of a work folder's
#: fingerprint: another reporter resumes the same checkpoints).
TRACKING_KEYS = ("report_to", "run_name", "project")
#: The project of every run on wandb and trackio (``WANDB_PROJECT`` set beforehand wins for wandb).
PROJECT = "reappraisal"
WHERE = "config key 'training.report_to'"
#: The ``--live-dir`` option of every training command.
LIVE_DIR_HELP = "the folder of its live metrics (config training.report_to; without it dvclive and tensorboard report nowhere)"
#: The package each reporter needs (torch's TensorBoard writer needs ``tensorboard``).
PACKAGES = {"dvclive": "dvclive", "tensorboard": "tensorboard", "wandb": "wandb", "trackio": "trackio"}


@dataclass(frozen=True)
class Tracking:
    """A training job's reporter (``report_to``, one of :data:`REPORTERS`) and its folder (``live_dir``)."""

    report_to: str
    live_dir: Path | None

    def __post_init__(self) -> None:
        if self.report_to not in REPORTERS:
            raise ConfigError(f"{self.report_to!r} is not one of {list(REPORTERS)}", where=WHERE)
        if self.report_to in WRITE_TO_FOLDER and self.live_dir is None:
            raise ValueError(f"report_to {self.report_to!r} writes into the job's folder: give a live_dir")

    @classmethod
    def from_settings(cls, training: TrainingSettings, live_dir: str | Path | None) -> "Tracking":
        """The reporter of a job's ``training`` settings writing to ``live_dir`` (its ``--live-dir``), refused
        in one line when the reporter's package is missing. A command run by hand without ``--live-dir`` has
        no folder: dvclive and tensorboard then report nowhere."""
        report_to = training.report_to
        if live_dir is None and report_to in WRITE_TO_FOLDER:
            return OFF
        tracking = cls(report_to, Path(live_dir) if live_dir is not None else None)
        tracking.check_installed()
        return tracking

    def check_installed(self) -> None:
        if self.report_to == "none":
            return
        if importlib.util.find_spec(PACKAGES[self.report_to]) is None:
            raise ConfigError(f"{self.report_to} is not installed in this environment (the locks install dvclive "
                              f"only): pip install {self.report_to}, or choose dvclive or none", where=WHERE)

    def training_args(self) -> dict[str, Any]:
        """The ``TrainingArguments`` of the reporter: ``report_to``, the project (trackio's) and the run's name
        (the job's folder)."""
        if self.report_to == "none":
            return {"report_to": "none"}
        return {"report_to": [self.report_to], "project": PROJECT,
                **({"run_name": self.live_dir.as_posix()} if self.live_dir else {})}

    def attach(self, trainer, *, resume: bool) -> None:
        """Point the reporter transformers made from ``trainer.args.report_to`` at the job's folder.

        ``resume``: the training goes on from a checkpoint, so DVCLive keeps the steps logged before it
        (otherwise it starts the folder afresh)."""
        from transformers.integrations import DVCLiveCallback, TensorBoardCallback

        if self.report_to == "dvclive":
            trainer.pop_callback(DVCLiveCallback)  # transformers' own opens ./dvclive and writes a dvc.yaml
            trainer.add_callback(dvclive_callback(self.live_dir, resume=resume))
        elif self.report_to == "tensorboard":
            for callback in trainer.callback_handler.callbacks:
                if isinstance(callback, TensorBoardCallback):
                    callback.logging_dir = str(self.live_dir)
        elif self.report_to == "wandb":
            os.environ.setdefault("WANDB_PROJECT", PROJECT)  # transformers' wandb reporter reads it there


#: No reporter (a trainer called from Python without one: the tests).
OFF = Tracking("none", None)


def open_live(live_dir: str | Path, *, resume: bool):
    """A ``dvclive.Live`` writing into ``live_dir`` only (see the module doc).

    Its own look for a DVC repository and git history is skipped
    (:func:`reappraisal.compat.dvclive.live_outside_dvc`): it saves no experiment and writes no ``dvc.yaml`` here
    (the pipeline's ``dvc.yaml`` lists the folder), and the look failed in a git repository without commits (a
    fresh ``git init`` of an unpacked archive) and would ``dvc init`` a git repository that has no DVC."""
    return live_outside_dvc(dir=str(live_dir), resume=resume, save_dvc_exp=False, dvcyaml=False)


def dvclive_callback(live_dir: str | Path, *, resume: bool):
    """transformers' DVCLive reporter writing into ``live_dir``, at the trainer's global step
    (:func:`reappraisal.compat.transformers.dvclive_callback`)."""
    return job_dvclive_callback(lambda: open_live(live_dir, resume=resume))
