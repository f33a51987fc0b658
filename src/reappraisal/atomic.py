"""Atomic file and directory writes: a crash never leaves a half-written output.

Outputs are written under a temporary name in the destination's folder and
renamed into place only once complete (rename is atomic on one filesystem).
Append-only JSONL files are cut back to their last complete line before
anything is appended to them again (:func:`cut_torn_tail`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterator


@contextlib.contextmanager
def atomic_path(dest: str | os.PathLike, *, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary file path; on success rename it to ``dest``.

    On any exception the temporary file is removed and ``dest`` is untouched.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=suffix or ".tmp", dir=dest.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    os.chmod(tmp_path, 0o666 & ~_umask())  # mkstemp makes 0600; outputs get the usual mode
    try:
        yield tmp_path
        os.replace(tmp_path, dest)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def atomic_dir(dest: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary directory; on success it replaces ``dest`` whole."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp_path = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".tmp", dir=dest.parent))
    os.chmod(tmp_path, 0o777 & ~_umask())  # mkdtemp makes 0700
    try:
        yield tmp_path
        replace_dir(tmp_path, dest)
    except BaseException:
        shutil.rmtree(tmp_path, ignore_errors=True)
        raise


def replace_dir(src: str | os.PathLike, dest: str | os.PathLike) -> None:
    """Put the finished folder ``src`` in place of ``dest`` whole (same filesystem; ``src`` is gone after)."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if dest.exists():
        shutil.rmtree(dest)
    os.replace(src, dest)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_json(obj: Any, dest: str | os.PathLike) -> None:
    """Write ``obj`` as indented, key-sorted JSON, atomically."""
    with atomic_path(dest, suffix=".json") as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True, default=_json_default) + "\n")


def write_parquet(df, dest: str | os.PathLike) -> None:
    """Write a DataFrame to Parquet (no index), atomically."""
    with atomic_path(dest, suffix=".parquet") as tmp:
        df.to_parquet(tmp, index=False)


def _json_default(o: Any):
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def cut_torn_tail(path: str | Path) -> int:
    """Cut an append-only JSONL file back to the end of its last complete line; return the bytes cut.

    A kill while a line was being written leaves it without its newline;
    appending after it would glue the next record to it, and both would be
    unreadable. Used by the judges' reply cache and the policy's rewards log.
    """
    try:
        fh = open(path, "r+b")
    except FileNotFoundError:
        return 0
    with fh:
        size = fh.seek(0, os.SEEK_END)
        keep, end = 0, size
        while end > 0:
            start = max(0, end - (1 << 16))
            fh.seek(start)
            newline = fh.read(end - start).rfind(b"\n")
            if newline >= 0:
                keep = start + newline + 1
                break
            end = start
        if keep < size:
            fh.truncate(keep)
            fh.flush()
            os.fsync(fh.fileno())
        return size - keep
