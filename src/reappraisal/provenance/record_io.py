"""The ``record`` command: record what Snakemake built in ``dvc.lock`` and DVC's cache.

For every DVC stage whose outputs all exist, what ``dvc commit --force
--no-relink`` does: DVC hashes the outputs, copies them into its cache and writes
the stage (dependencies, config values, outputs) to ``dvc.lock``, without
touching the files in the workspace (so Snakemake's timestamps stay as they
were). Afterwards ``dvc status`` is clean for those stages, ``dvc checkout``
can restore them (:mod:`.restore_io`) and ``dvc push`` can copy them to the
remote. Stages with a missing output (not built yet) are left as they were
and listed.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Sequence

from ..errors import PipelineInputError
from .dvc_state import is_dvc_repository, open_repo

log = logging.getLogger("reappraisal.record")


def record(root: str | Path = ".") -> tuple[list[str], list[str]]:
    """Commit every stage whose outputs all exist; return (recorded, skipped) stage names.

    What ``dvc commit --force --no-relink`` does per stage (``save``: hash
    dependencies, config values and outputs; ``commit``: copy the outputs into
    the cache), with ``dvc.lock`` written once for all stages instead of once
    per stage (each write parses the whole lock again: seconds per stage).
    """
    if not is_dvc_repository(root):
        raise PipelineInputError("not a DVC repository (no .dvc/ or dvc.yaml): nothing to record", where=str(root))
    recorded, skipped = [], []
    with open_repo(root) as repo, repo.lock:
        by_file: dict = {}
        for stage in repo.index.stages:
            if stage.outs and all(out.exists for out in stage.outs):
                stage.save()
                stage.commit(relink=False)
                by_file.setdefault(stage.dvcfile.path, (stage.dvcfile, []))[1].append(stage)
                recorded.append(stage.addressing)
            else:
                skipped.append(stage.addressing)
        for dvcfile, stages in by_file.values():
            dvcfile.dump_stages(stages, update_pipeline=False)
    return recorded, skipped


def cli_main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="reappraisal record", description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=Path("."), help="repository root")
    a = ap.parse_args(argv)
    recorded, skipped = record(a.root)
    print(f"recorded {len(recorded)} stage(s) in dvc.lock"
          + (f"; not built yet, left as they were: {', '.join(skipped)}" if skipped else ""))
    return 0
