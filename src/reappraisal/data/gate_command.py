"""What the two text gates (the leakage check and the OOD check) share.

Their command line, and a report that is the declared output only when the
gate passed.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd

from ..atomic import write_json
from ..errors import LeakageError
from ..input_tables import read_table
from ..params import parse_params


def gate_arguments(prog: str, doc: str, argv: Sequence[str] | None
                   ) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame, Path]:
    """A gate command's ``--targets --vignettes --out --params``: (params, targets, vignettes, out)."""
    ap = argparse.ArgumentParser(prog=prog, description=doc.splitlines()[0])
    for name in ("targets", "vignettes", "out", "params"):
        ap.add_argument(f"--{name}", required=True)
    args = ap.parse_args(argv)
    params = parse_params(args.params)
    return params, read_table(args.targets), read_table(args.vignettes), Path(args.out)


def publish_gate_report(report: dict, out: Path, *, passed: bool, failure: Callable[[Path], str], where: str) -> None:
    """Write a gate's report to ``out`` when it passed; else beside it as ``<stem>_failed.json`` and stop.

    The failed report is never the declared output, so Snakemake and DVC never
    take a failed gate as done; ``failure(failed_path)`` is the one-line message
    of the :class:`LeakageError` raised.
    """
    failed = out.with_name(out.stem + "_failed.json")
    if not passed:
        write_json(report, failed)
        raise LeakageError(failure(failed), where=where)
    failed.unlink(missing_ok=True)
    write_json(report, out)
