"""Lineage of a number: the artifacts it was computed from, by content.

Each entry is ``{"path", "sha256", "dvc_stage", "dvc_hash"}``: the path
relative to the repository root, the sha256 of the file's bytes, the DVC
stage that writes the file (or, for an input no stage writes, such as the
claims ledger, the stage reading it) and the hash DVC records for it in
``dvc.lock`` once the run is recorded, computed in this same run by DVC's
own code (:mod:`reappraisal.provenance.dvc_state`). A file inside an output
folder gets that folder's ``.dir`` hash, with a note. Outside a DVC
repository ``dvc_stage`` and ``dvc_hash`` are null and ``dvc_note`` says why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Mapping

from ..file_hashes import file_digests
from ..provenance.claim_trace import recorded_hash
from ..provenance.stage_graph import StageGraph

NOT_DVC = "not a DVC repository: no DVC hash"
IN_FOLDER = "hash of the DVC output folder holding this file"


def lineage_entries(paths: Iterable[str], root: str | Path, records: Mapping[str, Mapping],
                    cache: dict | None = None) -> list[dict]:
    """One lineage entry per artifact path (sorted, each file hashed once per ``cache``).

    ``records``: the DVC stage records hashed in this run (empty outside a DVC repository).
    """
    cache = {} if cache is None else cache
    graph = StageGraph(records)
    out = []
    for path in sorted(set(paths)):
        if path not in cache:
            (sha256,) = file_digests(Path(root) / path, "sha256")
            entry = {"path": path, "sha256": sha256, "dvc_stage": None, "dvc_hash": None}
            if not records:
                entry["dvc_note"] = NOT_DVC
            else:
                stage, digest, exact = recorded_hash(graph, path)
                entry["dvc_stage"], entry["dvc_hash"] = stage, digest
                if stage is None:
                    entry["dvc_note"] = "no DVC stage writes or reads this file"
                elif not exact:
                    entry["dvc_note"] = IN_FOLDER
            cache[path] = entry
        out.append(dict(cache[path]))
    return out
