"""Command-line entry points, one per pipeline stage.

``reappraisal <command> [args]`` (or ``python -m reappraisal``). Each command
lives in the module that owns the concept and is imported lazily, so a data
stage never imports torch. Bad input (:class:`PipelineInputError`) is printed
as one line ``error: <where>: <what>`` and the exit status is 2; anything else
is a bug and keeps its traceback. A trainer that waited for an orphaned one
which then finished the same run (:class:`reappraisal.errors.FinishedElsewhere`)
exits 0: the outputs are in place.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any, Callable, Sequence

from .errors import FinishedElsewhere, PipelineInputError
from .job_env import SERVER_ENV
from .profiling import profiled


#: command name -> "module:function"; the function takes the remaining argv.
COMMANDS: dict[str, str] = {
    "fetch-data": "reappraisal.data.fetch_io:cli_main",
    "ingest": "reappraisal.data.ingest_io:cli_main",
    "normalize-ratings": "reappraisal.data.normalize_io:cli_main",
    "split-reappraisals": "reappraisal.data.split_io:cli_main",
    "check-leakage": "reappraisal.data.leakage_io:cli_main",
    "prepare-base-models": "reappraisal.base_models.prepare_io:cli_main",
    "train-reward-model": "reappraisal.reward.train_io:cli_main",
    "train-bradley-terry": "reappraisal.reward.bradley_terry_io:cli_main",
    "evaluate-reward-models": "reappraisal.reward.evaluate_io:cli_main",
    "train-grm": "reappraisal.grm.train_io:cli_main",
    "evaluate-grm": "reappraisal.grm.evaluate_io:cli_main",
    "warm-start-policy": "reappraisal.policy.warm_start_io:cli_main",
    "train-policy": "reappraisal.policy.train_io:cli_main",
    "check-ood": "reappraisal.evaluation.ood_gate_io:cli_main",
    "train-demo-judge": "reappraisal.evaluation.demo_judge_io:cli_main",
    "calibrate-judge": "reappraisal.evaluation.calibration_io:cli_main",
    "generate-answers": "reappraisal.evaluation.generation_io:cli_main",
    "generate-best-of-n": "reappraisal.evaluation.best_of_n_io:cli_main",
    "judge": "reappraisal.evaluation.judging_io:cli_main",
    "draw-truth": "reappraisal.evaluation.truth_draw_io:cli_main",
    "trajectory-truth": "reappraisal.evaluation.trajectory_io:cli_main",
    "compute-truth": "reappraisal.evaluation.truth_io:cli_main",
    "forget-unparsed-replies": "reappraisal.evaluation.forget_io:cli_main",
    "gold": "reappraisal.data.gold_io:cli_main",
    "preregister": "reappraisal.confirm.preregistration_io:cli_main",
    "generate-confirmation": "reappraisal.confirm.generation_io:cli_main",
    "confirm": "reappraisal.confirm.confirmation_io:cli_main",
    "summarize": "reappraisal.summary.summary_io:cli_main",
    "world": "reappraisal.calibration.world_io:cli_main",
    "calibration-summary": "reappraisal.calibration.coverage_io:cli_main",
    "report": "reappraisal.report.report_io:cli_main",
    "write-model-cards": "reappraisal.report.cards_io:cli_main",
    "trace": "reappraisal.provenance.trace_io:cli_main",
    "run": "reappraisal.run_io:cli_main",
    "record": "reappraisal.provenance.record_io:cli_main",
    "restore": "reappraisal.provenance.restore_io:cli_main",
}


def _resolve(name: str) -> Callable[[Sequence[str]], Any]:
    module_name, func_name = COMMANDS[name].split(":")
    return getattr(importlib.import_module(module_name), func_name)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in {"-h", "--help"}:
        print("usage: reappraisal <command> [args]\ncommands:\n  " + "\n  ".join(sorted(COMMANDS)))
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"error: unknown command {name!r}; known: {', '.join(sorted(COMMANDS))}", file=sys.stderr)
        return 2
    address = os.environ.get(SERVER_ENV)
    if address:  # a run's warm server forks the command with this process's streams (reappraisal.job_server)
        from .job_client import delegate

        code = delegate(address, name, rest)
        if code is not None:
            return code
    try:
        result = profiled(name, lambda: _resolve(name)(rest))  # as is unless REAPPRAISAL_PROFILE_DIR is set
    except PipelineInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except FinishedElsewhere as exc:  # an orphaned trainer this run waited for made the outputs
        print(f"{name}: {exc}", file=sys.stderr)
        return 0
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
