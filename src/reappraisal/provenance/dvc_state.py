"""Each DVC stage's dependencies, config values and outputs, hashed now as DVC hashes them.

A stage record is ``{"deps": {path: hash}, "params": {key: value},
"outs": {path: hash}}``: exactly what ``dvc commit`` writes for the stage to
``dvc.lock`` (a file's md5; a folder's ``<md5>.dir`` over its listing, with
``.dvcignore`` applied; the config values of the keys ``dvc.yaml`` lists).
The hashes come from DVC's own code (``Output.get_hash``), not a copy of it,
so they cannot disagree with the lock; DVC's state database makes hashing an
unchanged file again nearly free. A path that does not exist has hash
``None``. Outside a DVC repository there are no records (:func:`stage_records`
returns ``{}``).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, Iterable

from ..errors import PipelineInputError

#: Record of one stage: {"deps": {path: hash|None}, "params": {key: value}, "outs": {path: hash|None}}.
StageRecord = dict[str, dict[str, Any]]


def is_dvc_repository(root: str | Path) -> bool:
    return (Path(root) / ".dvc").is_dir() and (Path(root) / "dvc.yaml").is_file()


def open_repo(root: str | Path):
    """DVC's ``Repo`` at ``root``; a checkout without git (an unpacked archive) is opened without SCM."""
    from dvc.repo import Repo
    from dvc.scm import SCMError

    try:
        return Repo(str(root))
    except SCMError:
        return Repo(str(root), config={"core": {"no_scm": True}})


def stage_records(root: str | Path, *, stages: Iterable[str] | None = None,
                  without_outs: Iterable[str] = ()) -> dict[str, StageRecord]:
    """Records of ``stages`` (all by default) of the DVC project at ``root``, hashed now.

    ``without_outs``: stages whose outputs are not hashed (the stage calling
    this, whose outputs do not exist yet).
    """
    if not is_dvc_repository(root):
        return {}
    wanted = None if stages is None else set(stages)
    skip_outs = set(without_outs)
    hashes: dict[str, str | None] = {}
    records: dict[str, StageRecord] = {}
    with open_repo(root) as repo:
        stages = [(getattr(stage, "name", None) or stage.addressing, stage) for stage in repo.index.stages]
        stages = [(name, stage) for name, stage in stages if wanted is None or name in wanted]
        params = _ParamsFiles([dep for _, stage in stages for dep in stage.deps if _is_params(dep)])
        for name, stage in stages:
            record: StageRecord = {"deps": {}, "params": {}, "outs": {}}
            for dep in stage.deps:
                if _is_params(dep):
                    record["params"].update(_params_of(dep, params.values(dep)))
                else:
                    record["deps"][dep.def_path] = _hash(dep, hashes)
            if name not in skip_outs:
                for out in stage.outs:
                    record["outs"][out.def_path] = _hash(out, hashes)
            records[name] = record
    return records


def _is_params(dep) -> bool:
    from dvc.dependency.param import ParamsDependency

    return isinstance(dep, ParamsDependency)


class _ParamsFiles:
    """The config values every stage's params dependency lists, each file parsed once with DVC's own reader
    (``read_param_file``) for the keys of all the stages (a config of about 30 stages took 2.6 s parsed per
    stage under the profiler)."""

    def __init__(self, deps) -> None:
        self._keys: dict[str, list[str]] = {}
        for dep in deps:
            if dep.params:
                self._keys.setdefault(dep.fs_path, []).extend(dep.params)
        self._read: dict[str, dict[str, Any]] = {}

    def values(self, dep) -> dict[str, Any]:
        """What ``dep.read_params()`` returns (flattened keys; ``{}`` for a missing file)."""
        if not dep.params:
            return dep.read_params()
        if dep.fs_path not in self._read:
            from dvc.dependency.param import BadParamFileError, MissingParamsFile, read_param_file
            from dvc.utils.serialize import ParseError

            try:
                dep.validate_filepath()
                self._read[dep.fs_path] = read_param_file(dep.repo.fs, dep.fs_path,
                                                          list(dict.fromkeys(self._keys[dep.fs_path])), flatten=True)
            except MissingParamsFile:
                self._read[dep.fs_path] = {}
            except ParseError as exc:
                raise BadParamFileError(f"Unable to read parameters from '{dep}'") from exc
        found = self._read[dep.fs_path]
        return {key: copy.deepcopy(found[key]) for key in dep.params if key in found}


def _params_of(dep, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` of a params dependency keyed as dvc.lock keys them (``<file>:<key>`` when not config.yaml)."""
    prefix = "" if Path(dep.def_path).name == "params.yaml" or dep.def_path == "config.yaml" else f"{dep.def_path}:"
    return {f"{prefix}{key}": value for key, value in dict(values).items()}


def _hash(output, cache: dict[str, str | None]) -> str | None:
    path = output.def_path
    if path not in cache:
        if not output.exists:
            cache[path] = None
        else:
            cache[path] = output.get_hash().value
    return cache[path]


def stages_with_changed_sources(root: str | Path) -> list[str]:
    """Recorded stages whose code, config values or raw inputs changed since ``dvc.lock`` recorded them.

    Changed intermediate files (another stage's outputs) do not count: the
    stage that writes them is the one to rerun. Empty before anything is recorded.
    """
    if not is_dvc_repository(root) or not (Path(root) / "dvc.lock").is_file():
        return []
    with open_repo(root) as repo:
        written = {out.def_path for stage in repo.index.stages for out in stage.outs}
        status = repo.status()
    stale = []
    for stage, entries in status.items():
        for entry in entries:
            deps = entry.get("changed deps", {}) if isinstance(entry, dict) else {}
            if any(isinstance(what, dict) or not _under_any(path, written) for path, what in deps.items()):
                stale.append(stage)
                break
    return stale


def _under_any(path: str, outputs: set[str]) -> bool:
    p = Path(path)
    return any(str(q) in outputs for q in (p, *p.parents))


def record(root: str | Path = ".") -> tuple[list[str], list[str]]:
    """Commit every stage whose outputs and dependencies all exist; return (recorded, skipped) stage names.

    What ``dvc commit --force --no-relink`` does per stage (``save``: hash
    dependencies, config values and outputs; ``commit``: copy the outputs into
    the cache), with ``dvc.lock`` written once for all stages instead of once
    per stage (each write parses the whole lock again: seconds per stage). A
    stage with a missing dependency (another stage's deleted output) is
    skipped like one with a missing output: DVC could not hash it. Anything
    else DVC refuses is one line (:class:`PipelineInputError`) and
    ``dvc.lock`` is left as it was.
    """
    from dvc.exceptions import DvcException

    if not is_dvc_repository(root):
        raise PipelineInputError("not a DVC repository (no .dvc/ or dvc.yaml): nothing to record", where=str(root))
    try:
        return _record(root)
    except DvcException as exc:
        message = " ".join(str(exc).split()) or type(exc).__name__
        raise PipelineInputError(f"could not record the build in dvc.lock ({type(exc).__name__}: {message}); "
                                 "the outputs are in place, `dvc status` shows what is not recorded",
                                 where=str(root)) from None


def _record(root: str | Path) -> tuple[list[str], list[str]]:
    recorded, skipped = [], []
    with open_repo(root) as repo, repo.lock:
        by_file: dict = {}
        for stage in repo.index.stages:
            if stage.outs and all(out.exists for out in stage.outs) and all(dep.exists for dep in stage.deps):
                stage.save()
                stage.commit(relink=False)
                by_file.setdefault(stage.dvcfile.path, (stage.dvcfile, []))[1].append(stage)
                recorded.append(stage.addressing)
            else:
                skipped.append(stage.addressing)
        for dvcfile, stages in by_file.values():
            dvcfile.dump_stages(stages, update_pipeline=False)
    return recorded, skipped
