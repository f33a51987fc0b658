"""Per-command profiles for the demo's profile benchmark (core layer).

When ``REAPPRAISAL_PROFILE_DIR`` is set, :func:`profiled` runs a command under
``cProfile`` and writes ``<dir>/<command>.<pid>.prof`` (pstats) and
``<dir>/<command>.<pid>.json`` (wall and CPU seconds of the command, and the
seconds the interpreter had spent before it: start-up and the CLI's imports).
``benchmarks/profile_demo.py`` sets it and reads them back per rule. Unset,
nothing changes.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Callable

PROFILE_DIR_ENV = "REAPPRAISAL_PROFILE_DIR"


def profiled(name: str, run: Callable[[], int]) -> int:
    """``run()``, under cProfile when :data:`PROFILE_DIR_ENV` names a folder."""
    folder = os.environ.get(PROFILE_DIR_ENV)
    if not folder:
        return run()
    import cProfile
    import resource

    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    before_cpu = time.process_time()
    started = time.perf_counter()
    profile = cProfile.Profile()
    try:
        return profile.runcall(run)
    finally:
        wall = time.perf_counter() - started
        stem = out / f"{name}.{os.getpid()}"
        profile.dump_stats(str(stem) + ".prof")
        usage = resource.getrusage(resource.RUSAGE_SELF)
        record = {"command": name, "wall_s": wall, "cpu_s": time.process_time() - before_cpu,
                  "startup_cpu_s": before_cpu, "max_rss_mib": usage.ru_maxrss / 1024}
        Path(str(stem) + ".json").write_text(json.dumps(record) + "\n")
