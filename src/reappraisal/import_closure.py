"""Which files of the package a stage executes: the static import closure of its entry point.

Static analysis with :mod:`ast` over the package's own source (no import is
executed): every ``import``/``from … import`` anywhere in a module (top level,
inside functions, under ``TYPE_CHECKING``) that names a module of the package
is followed, relative imports are resolved, ``from pkg import name`` counts
``pkg/name.py`` when that is a submodule, and importing ``a.b.c`` counts the
``__init__.py`` of ``a`` and ``a.b`` (Python executes them). Non-Python files
inside a package of the closure (templates, packaged YAML) are package data the
code may read, and count too. Modules outside the package (torch, pandas) are
pinned by the lock file; :func:`external_imports` lists the ones a closure needs
(each stage's conda environment must install them, `tests/test_stage_envs.py`).

The result over-approximates what one run imports (a branch not taken still
counts), which is the safe direction for lineage: a code change can make a
stage rerun needlessly, never silently not rerun.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterable

PACKAGE = "reappraisal"


def module_path(src: Path, module: str) -> Path | None:
    """The file defining ``module`` under ``src`` (``a/b.py`` or ``a/b/__init__.py``), if any."""
    base = src.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


def imported_modules(src: Path, module: str, package: str = PACKAGE) -> set[str]:
    """Modules of ``package`` that ``module`` names in any import statement (not followed further)."""
    path = module_path(src, module)
    if path is None:
        raise FileNotFoundError(f"module {module!r} not found under {src}")
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    # The package a relative import is relative to: the module itself if it is a package.
    here = module.split(".") if _is_package(path) else module.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = here[: len(here) - (node.level - 1)] if node.level > 1 else here
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            found.add(base)
            # `from pkg import name`: name may be a submodule.
            found.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return {m for m in found if (m == package or m.startswith(package + ".")) and module_path(src, m)}


def _with_parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def closure(src: Path, entries: Iterable[str], package: str = PACKAGE) -> set[str]:
    """Every module of ``package`` that importing (and running) ``entries`` can execute."""
    todo = [m for e in entries for m in _with_parents(e)]
    seen: set[str] = set()
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        if module_path(src, module) is None:
            raise FileNotFoundError(f"module {module!r} not found under {src}")
        seen.add(module)
        for dep in imported_modules(src, module, package):
            todo.extend(_with_parents(dep))
    return seen


def closure_files(src: Path, entries: Iterable[str], package: str = PACKAGE) -> set[Path]:
    """The files of :func:`closure`: module sources plus the package data of each package in it."""
    files: set[Path] = set()
    for module in closure(src, entries, package):
        path = module_path(src, module)
        files.add(path)
        if _is_package(path):
            files.update(
                p for p in path.parent.rglob("*")
                if p.is_file() and p.suffix not in {".py", ".pyc"} and "__pycache__" not in p.parts
                and not _inside_subpackage(p, path.parent)
            )
    return files


def _inside_subpackage(path: Path, package_dir: Path) -> bool:
    """True when ``path`` lies in a nested package (its data belongs to that package)."""
    for parent in path.parents:
        if parent == package_dir:
            return False
        if (parent / "__init__.py").is_file():
            return True
    return False


_OPTIONAL_GUARDS = {"ImportError", "ModuleNotFoundError"}


def _guarded(node: ast.AST) -> bool:
    """``try:`` whose handlers catch a failed import, or ``if TYPE_CHECKING:``: imports under it are optional."""
    if isinstance(node, ast.Try):
        names = set()
        for handler in node.handlers:
            kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
            names.update(k.id if isinstance(k, ast.Name) else getattr(k, "attr", "") for k in kinds if k is not None)
        return bool(names & _OPTIONAL_GUARDS)
    if isinstance(node, ast.If):
        test = node.test
        return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
            isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    return False


def _required_imports(node: ast.AST, found: set[str]) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import):
            found.update(alias.name for alias in child.names)
        elif isinstance(child, ast.ImportFrom) and not child.level and child.module:
            found.add(child.module)
        elif _guarded(child):
            body = child.body
            rest = [n for n in ast.iter_child_nodes(child) if n not in body and not isinstance(n, ast.expr)]
            for part in rest:  # the handlers and `else:` run without the guarded imports
                _required_imports(part, found)
        else:
            _required_imports(child, found)


def external_imports(src: Path, modules: Iterable[str], package: str = PACKAGE) -> dict[str, set[str]]:
    """Top-level modules outside ``package`` and the standard library that ``modules`` import, each with the
    package modules importing it (pass a :func:`closure`: what a stage runs).

    Imports inside a ``try:`` that catches ``ImportError``/``ModuleNotFoundError`` (an optional engine such
    as vLLM) and under ``if TYPE_CHECKING:`` are not required to run and are left out.
    """
    import sys

    out: dict[str, set[str]] = {}
    for module in modules:
        path = module_path(src, module)
        if path is None:
            raise FileNotFoundError(f"module {module!r} not found under {src}")
        found: set[str] = set()
        _required_imports(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)), found)
        for name in found:
            top = name.split(".")[0]
            if top not in (package, "__future__") and top not in sys.stdlib_module_names:
                out.setdefault(top, set()).add(module)
    return out
