"""The ``restore`` command: bring back the last recorded results after a failed or unwanted rerun.

``dvc checkout --force`` puts every output back as ``dvc.lock`` records it,
from DVC's cache (a summary that a failed rerun deleted, a judgments file
that was corrupted, a model that was retrained); then ``snakemake --touch``
on the target makes Snakemake's timestamps agree, so the next ``run`` finds
nothing to redo. Outputs never recorded are left alone.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Sequence

from ..errors import PipelineInputError
from .dvc_state import is_dvc_repository, open_repo


def restore(root: str | Path = ".") -> dict:
    """``dvc checkout --force`` of every recorded stage; return DVC's {added, modified, deleted, ...} lists."""
    root = Path(root)
    if not is_dvc_repository(root) or not (root / "dvc.lock").is_file():
        raise PipelineInputError("nothing recorded yet (no dvc.lock): run `reappraisal record` after a build",
                                 where=str(root / "dvc.lock"))

    with open_repo(root) as repo:
        return dict(repo.checkout(force=True))


def touch(root: Path, targets: Sequence[str]) -> None:
    proc = subprocess.run([sys.executable, "-m", "snakemake", *targets, "--touch", "--cores", "1", "--quiet", "all"],
                          cwd=root, capture_output=True, text=True)
    if proc.returncode != 0:
        raise PipelineInputError(f"snakemake --touch failed: {proc.stderr.strip().splitlines()[-1:]}",
                                 where=str(root / "Snakefile"))


def cli_main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="reappraisal restore", description=__doc__.splitlines()[0])
    ap.add_argument("targets", nargs="*", default=[],
                    help="Snakemake targets whose timestamps to align (default: the Snakefile's first rule)")
    ap.add_argument("--root", type=Path, default=Path("."), help="repository root")
    a = ap.parse_args(argv)
    changed = restore(a.root)
    touch(a.root, a.targets)
    restored = sorted({p for key in ("added", "modified") for p in changed.get(key, [])})
    print(f"restored {len(restored)} output(s) from DVC's cache as dvc.lock records them"
          + (": " + ", ".join(restored) if restored else ""))
    return 0
