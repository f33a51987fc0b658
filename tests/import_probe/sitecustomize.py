"""Test-only probe: with REAPPRAISAL_IMPORT_PROBE set and this folder on PYTHONPATH, every
Python process prints, at exit, the package modules it actually had loaded (``sys.modules``:
lazy imports and ``importlib.import_module`` included) as one stderr line, which lands in the
job's Snakemake log. Tests compare it with the code deps the DVC generator derived statically."""

import atexit
import os
import sys

MARKER = "imported-package-modules:"


def _dump() -> None:
    mods = {m for m in sys.modules if m == "reappraisal" or m.startswith("reappraisal.")}
    main = getattr(sys.modules.get("__main__"), "__file__", "") or ""
    if main.replace(os.sep, "/").endswith("reappraisal/__main__.py"):
        mods.add("reappraisal.__main__")
    sys.stderr.write(f"{MARKER} {' '.join(sorted(mods))}\n")
    sys.stderr.flush()


if os.environ.get("REAPPRAISAL_IMPORT_PROBE"):
    atexit.register(_dump)
