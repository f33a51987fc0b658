"""The ``record`` command: record what Snakemake built in ``dvc.lock`` and DVC's cache.

For every DVC stage whose outputs all exist, what ``dvc commit --force
--no-relink`` does: DVC hashes the outputs, copies them into its cache and writes
the stage (dependencies, config values, outputs) to ``dvc.lock``, without
touching the files in the workspace (so Snakemake's timestamps stay as they
were). Afterwards ``dvc status`` is clean for those stages, ``dvc checkout``
can restore them (:mod:`.restore_io`) and ``dvc push`` can copy them to the
remote. Stages with a missing output or dependency (not built yet) are left
as they were and listed; anything else DVC refuses is one line, no traceback.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

from .dvc_state import record


def cli_main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="reappraisal record", description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=Path("."), help="repository root")
    a = ap.parse_args(argv)
    recorded, skipped = record(a.root)
    print(f"recorded {len(recorded)} stage(s) in dvc.lock"
          + (f"; not built yet, left as they were: {', '.join(skipped)}" if skipped else ""))
    return 0
