"""Debian packages a test needs, installed with apt-get when missing, one install at a time.

CI starts on a fresh machine, and the suite's workers reach for their packages at once (Chromium, TeX Live,
SLURM): two apt-get runs at once fail on apt's lock. Every install here takes the lock file that
``scripts/slurm-local.sh`` takes too, and looks again once it holds it (the other worker may have installed
the package meanwhile).
"""

from __future__ import annotations

import fcntl
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

#: Shared with scripts/slurm-local.sh.
INSTALL_LOCK = Path("/run/lock/reappraisal-apt.lock")
ENV = {"DEBIAN_FRONTEND": "noninteractive", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
#: apt's own lock may still be held by something else on the machine: wait for it rather than fail.
WAIT_FOR_APT = ("-o", "DPkg::Lock::Timeout=300")


def install_when_missing(present: Callable[[], bool], packages: Sequence[str], *, recommends: bool = True,
                         timeout: int = 1800) -> None:
    """Install ``packages`` unless ``present()`` says they are here; raise with apt-get's output on failure."""
    if present():
        return
    INSTALL_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with INSTALL_LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if present():
            return
        subprocess.run(["apt-get", *WAIT_FOR_APT, "update", "-q"], check=True, capture_output=True, env=ENV,
                       timeout=600)
        options = [] if recommends else ["--no-install-recommends"]
        proc = subprocess.run(["apt-get", *WAIT_FOR_APT, "install", "-y", "-q", *options, *packages],
                              capture_output=True, text=True, env=ENV, timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"apt-get install {' '.join(packages)} failed:\n{proc.stdout[-2000:]}\n"
                               f"{proc.stderr[-2000:]}")
