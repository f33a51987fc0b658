"""A session fixture's folder built once for the whole suite, whatever the number of pytest-xdist workers.

A session fixture lives in one process: under `scripts/test.sh` each worker would build its own. What
:func:`build_once` builds, the first worker to need it builds under a file lock in the workers' common
temporary folder (fresh for every run); the others wait for it, or for its failure, and use the same
folder. Only for folders the tests read and never change (a test that changes one copies it first).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest


def build_once(tmp_path_factory, worker_id: str, name: str, build: Callable[[Path], Path]) -> Path:
    """``build(folder)``'s result (a path under ``folder``, which it creates), built once per run: by this
    process without xdist (``worker_id == "master"``), else by the first worker to ask for ``name``."""
    if worker_id == "master":
        return build(tmp_path_factory.mktemp(name))
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp().parent  # the workers' common folder
    built, failed = shared / f"{name}.built", shared / f"{name}.failed"
    with FileLock(str(shared / f"{name}.lock")):
        if failed.exists():
            pytest.fail(f"building {name} failed in another worker: {failed.read_text()}")
        if not built.exists():
            try:
                result = build(shared / name)
            except BaseException as error:
                failed.write_text(str(error)[-3000:] or type(error).__name__)
                raise
            built.write_text(str(result))
    return Path(built.read_text())
