"""fetch_data: put the raw export under ``data/raw/files`` with a sha256 manifest.

Source ``bundled`` copies the shipped demo dataset (minus its test-only
``truth/`` folder and README); source ``osf`` downloads the OSF node through
the API (:mod:`reappraisal.data.osf`). Either way the folder is replaced only
once complete, and the manifest lists every file with its size and sha256.
The command reads the ``data`` settings (:mod:`reappraisal.settings`: the
schema's defaults, no fallbacks here).
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
from pathlib import Path
from typing import Any, Sequence

from ..atomic import atomic_dir, write_json
from ..errors import ConfigError, DataValidationError
from ..file_hashes import sha256_file
from ..params import parse_params
from ..settings import DataSettings, OsfSettings, Settings


def bundled_files(root: Path) -> list[Path]:
    """Files of a bundled dataset, excluding test-only ``truth/`` and Markdown docs."""
    return sorted(
        p for p in root.rglob("*") if p.is_file() and "truth" not in p.relative_to(root).parts and p.suffix != ".md"
    )


def fetch_bundled(src: Path, out_dir: Path) -> list[dict[str, Any]]:
    if not src.is_dir():
        raise DataValidationError("bundled data folder does not exist", where=str(src))
    files = bundled_files(src)
    if not files:
        raise DataValidationError("bundled data folder has no files", where=str(src))
    entries = []
    with atomic_dir(out_dir) as tmp:
        for path in files:
            rel = path.relative_to(src)
            dest = tmp / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)
            entries.append({"path": str(rel), "size": dest.stat().st_size, "sha256": sha256_file(dest), "source": str(path)})
    return entries


def fetch_osf(osf_settings: OsfSettings, out_dir: Path) -> list[dict[str, Any]]:
    """Download the node into a persistent cache beside ``out_dir`` (so a rerun
    after a crash skips files already verified), then publish a copy atomically.

    ``osf_settings``: the ``data.osf`` settings."""
    from . import osf

    cache = out_dir.parent / ".osf_cache"
    manifest = osf.fetch_node(
        osf_settings.node,
        cache / "files",
        api_url=osf_settings.api_url,
        token_env=osf_settings.token_env,
        include=list(osf_settings.include),
        exclude=list(osf_settings.exclude),
        manifest_path=cache / "osf_manifest.json",
        retry=osf.RetryPolicy(max_retries=osf_settings.max_retries, timeout_s=osf_settings.timeout_s),
    )
    with atomic_dir(out_dir) as tmp:
        for entry in manifest["files"]:
            dest = tmp / entry["path"]
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(cache / "files" / entry["path"], dest)
            if sha256_file(dest) != entry["sha256"]:
                raise DataValidationError("copy does not match the verified download", where=str(dest))
    return manifest["files"]


def fetch(data: DataSettings, out_dir: str | Path, manifest_path: str | Path) -> dict[str, Any]:
    out_dir = Path(out_dir)
    source = data.source
    if source == "bundled":
        entries = fetch_bundled(Path(data.bundled_dir), out_dir)
        origin = {"source": "bundled", "bundled_dir": data.bundled_dir}
    elif source == "osf":
        if data.osf is None:
            raise ConfigError("source 'osf' needs an osf section (node, api_url)", where="config key 'data.osf'")
        entries = fetch_osf(data.osf, out_dir)
        origin = {"source": "osf", "node": data.osf.node, "api_url": data.osf.api_url}
    else:  # the schema already restricts this; kept for direct callers
        raise ConfigError(f"unknown source {source!r}", where="config key 'data.source'")
    manifest = {
        **origin,
        "fetched_at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "files": entries,
    }
    write_json(manifest, manifest_path)
    return manifest


def cli_main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(prog="reappraisal fetch-data", description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--params", required=True, help="JSON with the `data` config section")
    args = ap.parse_args(argv)
    settings = Settings.from_params(parse_params(args.params))
    if settings.data is None:
        raise ConfigError("the 'data' section is missing", where="--params")
    manifest = fetch(settings.data, args.out_dir, args.manifest)
    print(f"fetch_data: {len(manifest['files'])} files from {manifest['source']}")
    return 0
