"""Outputs a workspace lacks that Snakemake would not rebuild, read from its ``--summary``. Pure.

Snakemake reruns a job for a missing output only when a job it runs needs
that file: a folder deleted by hand (an arm's ``results/policy/<arm>/model``)
whose consumers' outputs are all present, or an output a killed rebuild
removed before its job ran, is "missing" with "no update" planned, and the
build says "Nothing to be done" while the workspace lacks it. ``reappraisal
run`` forces exactly these files (``--forcerun``), so they and everything
downstream of them are built again (:mod:`reappraisal.run_io`).
"""

from __future__ import annotations

#: The summary's status of an output that is not on disk (a removed temp file, a pipe or a service file is
#: missing by design and reported otherwise).
MISSING = "missing"
#: The summary's plan of a job Snakemake will not run.
NO_UPDATE = "no update"


def unplanned_missing(summary: str) -> list[str]:
    """Outputs of ``snakemake --summary`` whose status is missing and whose job is not planned to run.

    ``summary``: the command's standard output, a tab-separated table whose header names the columns
    (``output_file``, ``status``, ``plan``; ``--detailed-summary`` adds columns). Lines before the header
    and lines with fewer cells are ignored; no header gives no files.
    """
    columns: list[str] | None = None
    found: list[str] = []
    for line in summary.splitlines():
        cells = line.split("\t")
        if columns is None:
            if cells[0] == "output_file" and {"status", "plan"} <= set(cells):
                columns = cells
            continue
        if len(cells) < len(columns):
            continue
        row = dict(zip(columns, cells))
        if row["status"] == MISSING and row["plan"] == NO_UPDATE and row["output_file"] not in found:
            found.append(row["output_file"])
    return found
