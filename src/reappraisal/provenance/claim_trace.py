"""A claim's trace to its roots, and what changed since it was computed (pure).

The summary writes one provenance document beside the claims
(``results/summary/provenance.json``, :func:`provenance_document`): the
record of every stage upstream of the summary, hashed as DVC hashes them in
that same run (:mod:`.dvc_state`), the files the data stage fetched with
their OSF or bundle checksums, and, per claim, the stages its numbers came
through. From it, :func:`claim_trace` lists what one claim was computed
from, all the way up:

* **stages**: the summary and every stage upstream of the files the claim read;
* **raw inputs**: dependencies no stage writes, outside the code (the bundled
  data folder, the claims ledger), and the fetched files of the manifest;
* **config**: every config value (leaf) those stages read, with its stages
  (values of presets other than the one the run used are left out: DVC
  tracks whole sections, but another preset's values cannot have moved a
  number of this run);
* **code**: every module and rule file those stages run, with its hash;
* **artifacts**: the intermediate outputs in between.

:func:`changes` compares those with the records hashed now: any raw input,
config value, code file or artifact that differs marks the claim changed.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from .stage_graph import StageGraph, norm

CODE_PREFIXES = ("src/", "workflow/")
KINDS = ("raw", "config", "code", "artifact")


def is_code(path: str) -> bool:
    return norm(path).startswith(CODE_PREFIXES)


def flatten(value: Any, prefix: str) -> dict[str, Any]:
    """Leaves of a config value: ``{"a.b[0].c": 1, ...}`` (an empty mapping or list is a leaf)."""
    if isinstance(value, Mapping) and value:
        out: dict[str, Any] = {}
        for key, sub in value.items():
            out.update(flatten(sub, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(value, list) and value:
        out = {}
        for i, sub in enumerate(value):
            out.update(flatten(sub, f"{prefix}[{i}]"))
        return out
    return {prefix: value}


def _active_preset(records: Mapping[str, Mapping]) -> str | None:
    for record in records.values():
        if "preset" in record.get("params", {}):
            return record["params"]["preset"]
    return None


def _config_leaves(params: Mapping[str, Any], preset: str | None) -> dict[str, Any]:
    """Leaves of a stage's config values, without those of presets the run did not use."""
    leaves: dict[str, Any] = {}
    for key, value in params.items():
        leaves.update(flatten(value, key))
    if preset is None:
        return leaves
    return {k: v for k, v in leaves.items()
            if not k.startswith("presets.") or k.startswith(f"presets.{preset}.") or k == f"presets.{preset}"}


def provenance_document(records: Mapping[str, Mapping], claim_inputs: Mapping[str, Iterable[str]], *,
                        computing_stage: str, fetched_files: list[dict]) -> dict:
    """The document the summary writes: records upstream of it, fetched files, each claim's stages."""
    graph = StageGraph(records)
    upstream = graph.upstream([computing_stage])
    claims = {}
    for claim_id, paths in claim_inputs.items():
        # the files the claim read, and the summary's own code, config and ledger (not all its inputs)
        writers = {graph.writer(p)[0] for p in paths} - {None, computing_stage}
        claims[claim_id] = graph.upstream(writers) + ([computing_stage] if computing_stage in records else [])
    return {"computing_stage": computing_stage,
            "stages": {s: records[s] for s in upstream},
            "fetched_files": list(fetched_files),
            "claims": claims}


def recorded_hash(graph: StageGraph, path: str) -> tuple[str | None, str | None, bool]:
    """(stage, hash DVC records, exact) for a file: the output (or output folder) holding it, else a dependency."""
    stage, out = graph.writer(path)
    if stage is not None:
        return stage, graph.records[stage]["outs"].get(out), out == norm(path)
    for stage, record in graph.records.items():
        for dep, digest in record.get("deps", {}).items():
            if norm(dep) == norm(path):
                return stage, digest, True
    return None, None, False


def claim_trace(document: Mapping, claim_id: str) -> dict:
    """What ``claim_id`` was computed from: stages, raw inputs, fetched files, config, code, artifacts."""
    if claim_id not in document.get("claims", {}):
        known = ", ".join(sorted(document.get("claims", {}))) or "none"
        raise KeyError(f"no claim {claim_id!r} in the provenance document (claims: {known})")
    records = document["stages"]
    stages = [s for s in document["claims"][claim_id] if s in records]
    graph = StageGraph(records)
    raw: dict[str, dict] = {}
    code: dict[str, dict] = {}
    config: dict[str, dict] = {}
    artifacts: dict[str, dict] = {}
    for stage in stages:
        record = records[stage]
        for path, digest in record.get("deps", {}).items():
            if graph.is_written(path):
                continue
            bucket = code if is_code(path) else raw
            bucket.setdefault(path, {"path": path, "hash": digest, "stages": []})["stages"].append(stage)
        for leaf, leaf_value in _config_leaves(record.get("params", {}), _active_preset(records)).items():
            config.setdefault(leaf, {"key": leaf, "value": leaf_value, "stages": []})["stages"].append(stage)
        for path, digest in record.get("outs", {}).items():
            artifacts[path] = {"path": path, "hash": digest, "stages": [stage]}
    fetched = document.get("fetched_files", []) if "fetch_data" in stages else []
    return {"claim": claim_id, "stages": stages, "raw": sorted(raw.values(), key=lambda e: e["path"]),
            "fetched_files": fetched, "config": sorted(config.values(), key=lambda e: e["key"]),
            "code": sorted(code.values(), key=lambda e: e["path"]),
            "artifact": sorted(artifacts.values(), key=lambda e: e["path"])}


def changes(document: Mapping, current: Mapping[str, Mapping], claim_id: str) -> list[dict]:
    """What differs between the claim's trace and the stage records hashed now.

    Each change is ``{"kind", "name", "was", "now", "stages"}``; a stage that
    no longer exists makes every item of it ``now = None``.
    """
    trace = claim_trace(document, claim_id)
    stages = trace["stages"]
    now_deps: dict[str, Any] = {}
    now_outs: dict[str, Any] = {}
    now_config: dict[str, Any] = {}
    preset = _active_preset(document["stages"])
    for stage in stages:
        record = current.get(stage) or {}
        now_deps.update(record.get("deps", {}))
        now_outs.update(record.get("outs", {}))
        now_config.update(_config_leaves(record.get("params", {}), preset))
    missing = object()
    found = []
    for kind, entries, now, name_key, value_key in (
        ("raw", trace["raw"], now_deps, "path", "hash"),
        ("config", trace["config"], now_config, "key", "value"),
        ("code", trace["code"], now_deps, "path", "hash"),
        ("artifact", trace["artifact"], now_outs, "path", "hash"),
    ):
        for entry in entries:
            was = entry[value_key]
            is_now = now.get(entry[name_key], missing)
            if is_now is missing:
                is_now = None
            if is_now != was:
                found.append({"kind": kind, "name": entry[name_key], "was": was, "now": is_now,
                              "stages": entry["stages"]})
    recorded_keys = {e["key"] for e in trace["config"]}
    for key in sorted(set(now_config) - recorded_keys):
        found.append({"kind": "config", "name": key, "was": None, "now": now_config[key], "stages": []})
    return found
