"""Which stage writes which path, and the stages upstream of others (pure).

Built from stage records (:mod:`.dvc_state`): a stage is upstream of another
when it writes (an output folder holding) one of the other's dependencies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, Iterable, Mapping


def norm(path: str) -> str:
    return PurePosixPath(str(path).replace("\\", "/")).as_posix().removeprefix("./")


@dataclass
class StageGraph:
    records: Mapping[str, Mapping[str, Any]]
    _writer: dict[str, str] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        for stage, record in self.records.items():
            for out in record.get("outs", {}):
                self._writer[norm(out)] = stage

    def writer(self, path: str) -> tuple[str | None, str | None]:
        """(stage, output) for ``path``: the stage writing it or the output folder holding it; (None, None)."""
        candidate = PurePosixPath(norm(path))
        for probe in (candidate, *candidate.parents):
            key = probe.as_posix()
            if key in self._writer:
                return self._writer[key], key
        return None, None

    def upstream(self, stages: Iterable[str]) -> list[str]:
        """``stages`` and every stage upstream of them, in run order (dependencies first)."""
        wanted: set[str] = set()
        todo = [s for s in stages if s in self.records]
        while todo:
            stage = todo.pop()
            if stage in wanted:
                continue
            wanted.add(stage)
            for dep in self.records[stage].get("deps", {}):
                writer, _ = self.writer(dep)
                if writer is not None and writer != stage:
                    todo.append(writer)
        return [s for s in self.run_order() if s in wanted]

    def run_order(self) -> list[str]:
        """All stages, each after the stages it depends on (ties in record order)."""
        order: list[str] = []
        placed: set[str] = set()

        def place(stage: str, path: tuple[str, ...]) -> None:
            if stage in placed:
                return
            if stage in path:
                raise ValueError(f"the stages form a cycle: {' -> '.join(path + (stage,))}")
            for dep in self.records[stage].get("deps", {}):
                writer, _ = self.writer(dep)
                if writer is not None and writer != stage:
                    place(writer, path + (stage,))
            placed.add(stage)
            order.append(stage)

        for stage in self.records:
            place(stage, ())
        return order

    def is_written(self, path: str) -> bool:
        return self.writer(path)[0] is not None
