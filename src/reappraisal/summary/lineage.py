"""Lineage of a number: the artifacts it was computed from, by content.

Each entry is ``{"path", "sha256", "dvc_stage", "dvc_hash"}``: the path
relative to the repository root, the sha256 of the file's bytes, and, for a
file DVC tracks, the stage that produces it and the md5 ``dvc.lock`` records
for it. The stage is read from ``dvc.lock`` (or, before the first ``dvc
commit``, from ``dvc.yaml``); ``dvc_hash`` is given only when the lock's md5
equals the file's own md5 (a stale lock gives ``None`` and ``dvc_note``
says so). A file inside a directory output gets that directory's stage and
its ``.dir`` hash as recorded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

import yaml

from ..file_hashes import file_digests

@dataclass
class DvcIndex:
    """Which DVC stage writes which output, and the md5 the lock records."""

    lock_outs: dict[str, tuple[str, str | None]] = field(default_factory=dict)  # path -> (stage, md5)
    yaml_outs: dict[str, str] = field(default_factory=dict)  # path -> stage

    @classmethod
    def read(cls, root: str | Path) -> "DvcIndex":
        root = Path(root)
        index = cls()
        lock = _load_yaml(root / "dvc.lock")
        for stage, body in ((lock or {}).get("stages") or {}).items():
            for out in (body or {}).get("outs") or []:
                if isinstance(out, Mapping) and "path" in out:
                    index.lock_outs[_norm(out["path"])] = (str(stage), out.get("md5"))
        spec = _load_yaml(root / "dvc.yaml")
        for stage, body in ((spec or {}).get("stages") or {}).items():
            for out in (body or {}).get("outs") or []:
                path = next(iter(out)) if isinstance(out, Mapping) else out
                index.yaml_outs[_norm(path)] = str(stage)
        return index

    def lookup(self, path: str) -> tuple[str | None, str | None, bool]:
        """(stage, recorded md5, exact) for ``path`` or the nearest output folder holding it."""
        candidate = Path(_norm(path))
        for probe in (candidate, *candidate.parents):
            key = probe.as_posix()
            if key in self.lock_outs:
                stage, md5 = self.lock_outs[key]
                return stage, md5, probe == candidate
        for probe in (candidate, *candidate.parents):
            if probe.as_posix() in self.yaml_outs:
                return self.yaml_outs[probe.as_posix()], None, probe == candidate
        return None, None, False


def _norm(path) -> str:
    return Path(str(path)).as_posix().removeprefix("./")


def _load_yaml(path: Path):
    if not path.is_file():
        return None
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError:
        return None


def lineage_entries(paths: Iterable[str], root: str | Path, dvc: DvcIndex, cache: dict | None = None) -> list[dict]:
    """One lineage entry per artifact path (sorted, each file hashed once per ``cache``)."""
    cache = {} if cache is None else cache
    out = []
    for path in sorted(set(paths)):
        if path not in cache:
            sha256, md5 = file_digests(Path(root) / path, "sha256", "md5")
            stage, recorded, exact = dvc.lookup(path)
            entry = {"path": path, "sha256": sha256, "dvc_stage": stage, "dvc_hash": None}
            if recorded is not None:
                if not exact:
                    entry["dvc_hash"] = recorded
                    entry["dvc_note"] = "hash of the DVC output folder holding this file"
                elif recorded == md5:
                    entry["dvc_hash"] = recorded
                else:
                    entry["dvc_note"] = "dvc.lock records a different md5 for this file (stale lock: run dvc commit)"
            cache[path] = entry
        out.append(dict(cache[path]))
    return out
