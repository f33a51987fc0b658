"""A static scan for the private names of the locked libraries used outside ``reappraisal.compat``.

A module of the package (``compat/`` apart) may use only the public names of TRL, transformers, accelerate, DVC
and DVCLive. :func:`private_uses` finds, per module, where it does not:

- an import of a private module or name: ``import trl._x``, ``from trl.trainer._x import y``,
  ``from trl.trainer.utils import _y``;
- a private attribute of something that comes from those libraries: ``trl_utils._use_triton`` (a module),
  ``Live(...)._x`` or ``live._x`` after ``live = Live(...)`` (an instance), ``getattr(trl_utils, "_x")``;
- inside a class built on a library class (a base imported from those libraries, a class parameter of a
  class factory, or another such class of the module): a private method defined (an override of one of the
  library's, or a helper grafted onto its object), ``self._x``, ``cls._x`` or ``super()._x``;
- a private attribute, on an object the scan cannot place, whose name the package defines nowhere
  (``trainer._metrics``, ``getattr(config, "_attn_implementation")``): someone else's private name.
  Names the project assigns or defines itself, and namedtuple's public ``_replace``/``_asdict``/``_fields``/
  ``_make``, are the project's or public.

Names are resolved through the module's imports (anywhere in the module, a function's imports included) and
simple assignments; what the scan cannot resolve falls to the last rule. A class built on another library's
class (the standard library's ``threading.Thread``) and that library's modules are left alone.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

#: The libraries whose private names only ``reappraisal.compat`` may touch (their top-level import names).
LOCKED = ("trl", "transformers", "accelerate", "dvc", "dvclive")
#: Underscore names that are public API (namedtuple's).
PUBLIC_UNDERSCORE = {"_replace", "_asdict", "_fields", "_make", "_field_defaults"}
REFLECTION = ("getattr", "setattr", "hasattr", "delattr")


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _locked(module: str) -> bool:
    return module.split(".")[0] in LOCKED


def _root(node: ast.AST) -> ast.AST:
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node


def _is_super_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"


def owned_names(trees) -> set[str]:
    """Private names the modules (parsed) define or assign (functions, classes, attributes, module names)."""
    owned: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                owned.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                owned.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                owned.add(node.id)
            elif isinstance(node, ast.arg):
                owned.add(node.arg)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" \
                    and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
                owned.add(str(node.args[1].value))
    return {name for name in owned if is_private(name)}


@dataclass
class _Scope:
    """What the module binds: names bound to the locked libraries, to other imports, and library-built classes."""

    library: set[str] = field(default_factory=set)
    imported: set[str] = field(default_factory=set)
    library_classes: set[str] = field(default_factory=set)


class _Scan(ast.NodeVisitor):
    def __init__(self, rel: str, owned: set[str]) -> None:
        self.rel, self.owned = rel, owned
        self.scope = _Scope()
        self.found: list[str] = []
        self.params: list[set[str]] = []  # the enclosing functions' parameters (class factories)
        self.classes: list[str] = []  # each enclosing class's kind: "library", "other" (another library's), "project"

    def report(self, node: ast.AST, what: str) -> None:
        self.found.append(f"{self.rel}:{node.lineno}: {what}")

    # -- pass 1: bindings --------------------------------------------------------------------------------------
    def bind(self, tree: ast.Module) -> None:
        for _ in range(2):  # a second pass sees assignments from classes defined later
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    for alias in node.names:
                        name = alias.asname or alias.name.split(".")[0]
                        (self.scope.library if _locked(alias.name) else self.scope.imported).add(name)
                elif isinstance(node, ast.ImportFrom) and not node.level:
                    for alias in node.names:
                        name = alias.asname or alias.name
                        (self.scope.library if _locked(node.module or "") else self.scope.imported).add(name)
                elif isinstance(node, ast.ClassDef) and self._library_class(node, factory=False):
                    self.scope.library_classes.add(node.name)
                elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.withitem)):
                    value = node.context_expr if isinstance(node, ast.withitem) else node.value
                    targets = ([node.optional_vars] if isinstance(node, ast.withitem)
                               else node.targets if isinstance(node, ast.Assign) else [node.target])
                    if value is not None and self._from_library(value):
                        self.scope.library |= {t.id for t in targets if isinstance(t, ast.Name)}
        self.scope.library -= {"self", "cls"}

    def _from_library(self, node: ast.AST) -> bool:
        """An expression rooted at a locked library's name, or a call of a library-built class."""
        root = _root(node)
        return isinstance(root, ast.Name) and (root.id in self.scope.library or root.id in self.scope.library_classes)

    def _library_class(self, node: ast.ClassDef, *, factory: bool = True) -> bool:
        return self._class_kind(node, factory=factory) == "library"

    def _class_kind(self, node: ast.ClassDef, *, factory: bool = True) -> str:
        """"library": built on a locked library's class; "other": on another library's; else "project"."""
        kinds = set()
        for base in node.bases:
            root = _root(base)
            if not isinstance(root, ast.Name):
                continue
            if root.id in self.scope.library or root.id in self.scope.library_classes:
                kinds.add("library")
            elif factory and any(root.id in params for params in self.params):
                kinds.add("library")
            elif root.id in self.scope.imported:
                kinds.add("other")
        return "library" if "library" in kinds else "other" if kinds else "project"

    # -- pass 2: uses ------------------------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if _locked(alias.name) and any(is_private(part) for part in alias.name.split(".")):
                self.report(node, f"imports the private module {alias.name}")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level or not _locked(module):
            return
        if any(is_private(part) for part in module.split(".")):
            self.report(node, f"imports from the private module {module}")
        for alias in node.names:
            if is_private(alias.name):
                self.report(node, f"imports the private name {alias.name} from {module}")

    def _function(self, node) -> None:
        kind = self.classes[-1] if self.classes and self._directly_in_class(node) else "project"
        if kind == "library" and is_private(node.name):
            self.report(node, f"defines the private method {node.name} on a library class")
        args = node.args
        self.params.append({a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]})
        self.classes.append(kind)  # self inside a method is its class's; a nested function's own
        self.generic_visit(node)
        self.classes.pop()
        self.params.pop()

    def _directly_in_class(self, node) -> bool:
        return self._class_body is not None and node in self._class_body

    _class_body: list | None = None

    visit_FunctionDef = visit_AsyncFunctionDef = _function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            self.visit(base)
        outer = self._class_body
        self._class_body = node.body
        self.classes.append(self._class_kind(node))
        for child in node.body:
            self.visit(child)
        self.classes.pop()
        self._class_body = outer

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if is_private(node.attr):
            self._private_attribute(node, node.value, node.attr)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if (isinstance(node.func, ast.Name) and node.func.id in REFLECTION and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
                and is_private(node.args[1].value)):
            self._private_attribute(node, node.args[0], node.args[1].value)
        self.generic_visit(node)

    def _private_attribute(self, node: ast.AST, owner: ast.AST, name: str) -> None:
        kind = self.classes[-1] if self.classes else "project"
        if _is_super_call(owner):
            if kind == "library":
                self.report(node, f"calls super().{name} of a library class")
            return
        root = _root(owner)
        if isinstance(root, ast.Name) and root.id in ("self", "cls"):
            if kind == "library":
                self.report(node, f"uses {root.id}.{name} inside a library class")
            elif kind == "project" and name not in self.owned:
                self.report(node, f"uses {name}, a private name the package does not define")
            return
        if self._from_library(owner):
            self.report(node, f"uses the private attribute {name} of {ast.unparse(owner)} (a locked library's)")
        elif isinstance(root, ast.Name) and root.id in self.scope.imported:
            return  # another library's (the standard library's)
        elif name not in self.owned and name not in PUBLIC_UNDERSCORE:
            self.report(node, f"uses {name} of {ast.unparse(owner)}, a private name the package does not define")


def private_uses(tree: ast.Module, rel: str, owned: set[str]) -> list[str]:
    """``file:line: what`` for each use of a locked library's private name in the module ``tree`` (file ``rel``)."""
    scan = _Scan(rel, owned)
    scan.bind(tree)
    scan.visit(tree)
    return scan.found


def package_private_uses(package: Path, exclude: str = "compat") -> list[str]:
    """Every use in ``package``'s modules (its ``exclude`` subpackage apart) of a locked library's private name."""
    paths = [p for p in sorted(package.rglob("*.py")) if exclude not in p.relative_to(package).parts[:1]]
    trees = {path: ast.parse(path.read_text(), str(path)) for path in paths}
    owned = owned_names(trees.values())
    found = []
    for path, tree in trees.items():
        found += private_uses(tree, path.relative_to(package.parent).as_posix(), owned)
    return found
