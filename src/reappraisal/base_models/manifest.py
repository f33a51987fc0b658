"""The base-models manifest and model locations.

A hub id or a local folder, checked before anything loads it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from reappraisal.errors import PipelineInputError

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")


def looks_like_hub_id(location: str) -> bool:
    """``org/name`` with no leading ``/``, ``.`` or ``~`` (a path that exists wins over this)."""
    return bool(_HUB_ID.match(location)) and not Path(location).exists()


def check_model_location(location: str | Path, *, where: str) -> str:
    """Return ``location`` if it is an existing directory or a hub id; PipelineInputError otherwise."""
    text = str(location)
    if not text:
        raise PipelineInputError("empty model location", where=where)
    p = Path(text).expanduser()
    if p.exists():
        if not p.is_dir() or not (p / "config.json").is_file():
            raise PipelineInputError(f"{text} is not a saved model directory (no config.json)", where=where)
        return str(p)
    if looks_like_hub_id(text):
        return text
    raise PipelineInputError(f"model path {text} does not exist", where=where)


def read_manifest(path: str | Path) -> dict:
    """Read ``MANIFEST.json`` written by :func:`~reappraisal.base_models.prepare_io.prepare_base_models`."""
    p = Path(path)
    try:
        manifest = json.loads(p.read_text())
    except FileNotFoundError:
        raise PipelineInputError("base-model manifest not found; run prepare_base_models", where=str(p)) from None
    except ValueError:
        raise PipelineInputError("base-model manifest is not valid JSON", where=str(p)) from None
    if not isinstance(manifest.get("roles"), dict):
        raise PipelineInputError("base-model manifest has no 'roles'", where=str(p))
    return manifest


def check_manifest_base(manifest: str | Path, role: str, base: str) -> None:
    """``base`` must be the model the manifest names for ``role`` (a stage given one base and another's manifest
    would train on a model the recorded chain never prepared)."""
    entry = read_manifest(manifest)["roles"].get(role) or {}
    if Path(str(entry.get("location"))) != Path(base) and entry.get("location") != base:
        raise PipelineInputError(f"the manifest's {role} base {entry.get('location')!r} is not --base-model {base!r}; "
                                 "rerun prepare_base_models", where=str(manifest))
