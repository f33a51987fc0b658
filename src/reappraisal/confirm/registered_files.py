"""The files a pre-registration fixes.

The document itself (read with its sha256) and the hashes of the checkpoint
folders it names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import yaml

from ..errors import PipelineInputError
from ..file_hashes import file_digests


def checkpoint_folders(entry: Mapping) -> list[str]:
    """The folders of one candidate's ``--checkpoints`` entry: its policy, and a best-of-N scorer's models."""
    folders = [entry["policy"], *entry.get("rm", []), entry.get("bradley_terry"), entry.get("grm")]
    return [str(f) for f in folders if f]


def checkpoint_hashes(dirs: Sequence[str | Path]) -> dict[str, str]:
    """sha256 of every file under each folder (or of the file itself), by path; Snakemake's markers
    (``.snakemake_timestamp``) are not the model's files and are left out."""
    out = {}
    for d in dirs:
        d = Path(d)
        if d.is_file():
            out[d.as_posix()] = file_digests(d)[0]
            continue
        if not d.is_dir():
            raise PipelineInputError("checkpoint folder is missing", where=str(d))
        for f in sorted(p for p in d.rglob("*") if p.is_file() and not p.name.startswith(".snakemake")):
            out[f.as_posix()] = file_digests(f)[0]
    return out


def read_preregistration(path: str | Path) -> tuple[dict, str]:
    """(document, sha256 of the file's bytes)."""
    path = Path(path)
    if not path.is_file():
        raise PipelineInputError("the pre-registration is missing: run the preregister rule first", where=str(path))
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise PipelineInputError(f"not valid YAML ({type(exc).__name__})", where=str(path)) from None
    if not isinstance(document, dict) or "selected_system" not in document:
        raise PipelineInputError("not a pre-registration (no selected_system)", where=str(path))
    return document, file_digests(path)[0]
