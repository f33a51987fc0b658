"""Imports run downhill: no module of the package imports from a later layer.

Layers, first to last: core < data < base_models < reward < grm < policy <
evaluation < confirm < summary < report; ``cli``/``__main__`` dispatch on top, with
``run_io`` (the ``run`` command) and ``job_server`` (which forks commands). Every
``import`` counts, at the top of a module or inside a function. A new
top-level module or package must be given a layer here.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "reappraisal"

#: Top-level modules and packages of the core layer, usable by every stage.
CORE = {"errors", "atomic", "table_contracts", "numerics", "config", "settings", "config_reference", "generated_files", "params", "input_tables", "json_values", "training", "batched_generation", "profiling", "sentences", "workflow_dvc",
        "import_closure", "job_env", "stats", "file_hashes", "http_retry", "markdown_templates", "provenance", "compat"}
LAYERS = ["core", "data", "base_models", "reward", "grm", "policy", "evaluation", "confirm", "summary", "calibration",
          "report",
          "dispatcher"]


#: The entry points on top: the command dispatcher, the ``run`` command that drives Snakemake, and the job
#: server that forks commands through the dispatcher
#: (its job's side, which the dispatcher calls, apart: no circle).
DISPATCHER = ("cli", "__main__", "run_io", "job_server", "job_client")


def layer_of(module: str) -> str | None:
    """The layer of a dotted module name of the package (None: not the package's)."""
    parts = module.split(".")
    if parts[0] != "reappraisal":
        return None
    if len(parts) == 1 or parts[1] in DISPATCHER:
        return "dispatcher"
    if parts[1] in CORE:
        return "core"
    return parts[1]


def _module_name(path: Path, package: Path = PACKAGE) -> tuple[str, str]:
    rel = path.relative_to(package.parent).with_suffix("")
    name = ".".join(rel.parts)
    if path.name == "__init__.py":
        name = name.rsplit(".", 1)[0]
        return name, name
    return name, name.rsplit(".", 1)[0]


def imports_of(path: Path, root: Path = PACKAGE) -> list[tuple[int, str]]:
    """(line, imported module) for every import in the file, relative ones resolved."""
    name, package = _module_name(path, root)
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.append((node.lineno, target))
            # ``from reappraisal import grm`` imports the package grm
            found += [(node.lineno, f"{target}.{a.name}") for a in node.names if target == "reappraisal"]
    return found


def violations(root: Path = PACKAGE) -> tuple[list[str], list[str]]:
    """Imports from a later layer, and modules (or imported modules) that have no layer."""
    uphill, unplaced = [], []
    for path in sorted(root.rglob("*.py")):
        me = layer_of(_module_name(path, root)[0])
        rel = path.relative_to(root.parent)
        if me not in LAYERS:
            unplaced.append(f"{rel} (layer {me!r})")
            continue
        for line, target in imports_of(path, root):
            them = layer_of(target)
            if them is None or them == "dispatcher" and target == "reappraisal":
                continue
            if them not in LAYERS:
                unplaced.append(f"{rel}:{line} imports {target} (layer {them!r})")
            elif LAYERS.index(them) > LAYERS.index(me):
                uphill.append(f"{rel}:{line} ({me}) imports {target} ({them})")
    return uphill, unplaced


def test_no_module_imports_from_a_later_layer():
    uphill, unplaced = violations()
    assert not unplaced, "modules without a layer (add them to CORE or LAYERS):\n" + "\n".join(unplaced)
    assert not uphill, "imports running uphill:\n" + "\n".join(uphill)


def test_the_check_finds_uphill_imports_also_inside_functions(tmp_path):
    pkg = tmp_path / "reappraisal"
    for sub in ("base_models", "policy", "reward"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "policy" / "train_io.py").write_text("from ..reward import ensemble  # downhill: fine\n")
    (pkg / "base_models" / "prepare_io.py").write_text("import json\n\ndef corpus():\n    from ..policy import prompts\n")
    (pkg / "reward" / "card.py").write_text("from reappraisal.cli import main\n")
    (pkg / "newthing.py").write_text("")
    uphill, unplaced = violations(pkg)
    assert uphill == ["reappraisal/base_models/prepare_io.py:4 (base_models) imports reappraisal.policy (policy)",
                      "reappraisal/reward/card.py:1 (reward) imports reappraisal.cli (dispatcher)"]
    assert unplaced == ["reappraisal/newthing.py (layer 'newthing')"]


def module_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (a name that is a package counts as its ``__init__``)."""
    modules = {_module_name(p, root)[0] for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        me = _module_name(path, root)[0]
        targets = set()
        for _, target in imports_of(path, root):
            while target and target not in modules:  # ``from .x import name``: the module x
                target = target.rpartition(".")[0]
            if target and target != me:
                targets.add(target)
        graph[me] = targets
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The graph's strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_two_modules_import_each_other_directly_or_around_a_circle():
    """A package ``__init__`` that re-exports its modules counts too: a circle means neither module can be
    read, tested or replaced alone."""
    assert import_circles(module_graph()) == []


def test_the_circle_check_finds_a_circle_through_a_function_import(tmp_path):
    pkg = tmp_path / "reappraisal"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .b import f\n")
    (pkg / "b.py").write_text("def f():\n    from .c import g\n")
    (pkg / "c.py").write_text("from reappraisal.a import x\n")
    (pkg / "d.py").write_text("from . import a\n")
    assert import_circles(module_graph(pkg)) == [["reappraisal.a", "reappraisal.b", "reappraisal.c"]]
