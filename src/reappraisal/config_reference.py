"""Generate ``docs/configuration-reference.md`` from the config schema.

``workflow/schemas/config.schema.yaml`` is the one home of every default and of
every setting's description; the reference page is rendered from it alone: one
table per top-level section (key, type, default, description) and one per
shared definition (``$defs``: a data source, an id field, ...). A *leaf* is a
setting that is not itself an object with ``properties``; the walk also goes
into list entries (``items``, keys written ``[]``), mappings of names chosen by
the user (``additionalProperties``, keys written ``<name>``) and the branches of
``oneOf``/``anyOf``. ``python -m reappraisal.config_reference check`` fails when
a leaf has no description or the committed page differs from what the schema
implies; ``write`` regenerates the page. Only yaml, json and the standard
library are used, so the check runs without the training stack.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from .config import REPO_ROOT, SCHEMA_PATH
from .generated_files import write_or_check

PAGE = Path("docs") / "configuration-reference.md"
COMMAND = ".venv/bin/python -m reappraisal.config_reference write"
#: Table of the top-level settings that are not sections (``preset``, ``seed``).
TOP_LEVEL = "top level"
DEFS = "$defs"
TAG_START = re.compile(r"<(?=[A-Za-z/!?])")


#: A leaf without a default.
NO_DEFAULT = object()


@dataclass(frozen=True)
class Leaf:
    """One setting: its ``table`` (a top-level section, :data:`TOP_LEVEL` or ``$defs.<name>``), its dotted
    ``key`` as written in config.yaml (relative to the definition for ``$defs``), its schema ``node``,
    whether its parent object requires it, and its ``default``: its own, else the one its parent object's
    default gives it (``base_models.tiny.seeds``), else :data:`NO_DEFAULT`."""

    table: str
    key: str
    node: Mapping[str, Any] = field(compare=False)
    required: bool = False
    default: Any = field(default=NO_DEFAULT, compare=False)
    #: not a setting but an object of settings with a description of its own (a row of the page, no leaf)
    group: bool = False


def load_schema(path: Path = SCHEMA_PATH) -> dict[str, Any]:
    return yaml.safe_load(Path(path).read_text(encoding="utf-8"))


def _ref_name(node: Mapping[str, Any]) -> str | None:
    ref = node.get("$ref")
    prefix = f"#/{DEFS}/"
    return ref[len(prefix):] if isinstance(ref, str) and ref.startswith(prefix) else None


def _walk(node: Any, prefix: str, table: str, out: list[Leaf], refs: dict[str, list[str]]) -> None:
    """The rows under the schema ``node`` whose key is ``prefix`` into ``out``; ``refs``: definition -> keys using it."""
    if not isinstance(node, Mapping):
        return
    name = _ref_name(node)
    if name is not None:
        where = f"{table.removeprefix(DEFS + '.')}.{prefix}" if table.startswith(DEFS) else prefix
        refs.setdefault(name, []).append(where)
    props = node.get("properties")
    required = set(node.get("required") or [])
    given = node.get("default") if isinstance(node.get("default"), Mapping) else {}
    if isinstance(props, Mapping):
        for key, sub in props.items():
            if not isinstance(sub, Mapping):
                continue
            dotted = f"{prefix}.{key}" if prefix else str(key)
            if not isinstance(sub.get("properties"), Mapping):
                leaf = Leaf(table, dotted, sub, key in required, sub.get("default", given.get(key, NO_DEFAULT)))
                if not any(seen == leaf and seen.node == sub for seen in out):  # one key in two branches
                    out.append(leaf)
            elif str(sub.get("description") or "").strip():
                out.append(Leaf(table, dotted, sub, key in required, group=True))
            _walk(sub, dotted, table, out, refs)
    if isinstance(node.get("items"), Mapping):
        _walk(node["items"], f"{prefix}[]", table, out, refs)
    if isinstance(node.get("additionalProperties"), Mapping):
        _walk(node["additionalProperties"], f"{prefix}.<name>", table, out, refs)
    for branches in ("oneOf", "anyOf"):
        for branch in node.get(branches) or []:
            _walk(branch, prefix, table, out, refs)


def walk(schema: Mapping[str, Any]) -> tuple[list[Leaf], dict[str, list[str]]]:
    """The page's rows, in schema order (sections first, then ``$defs``): every leaf, and every object of
    settings below a section that has a description; and, per definition, the keys that use it."""
    out: list[Leaf] = []
    refs: dict[str, list[str]] = {}
    for key, sub in (schema.get("properties") or {}).items():
        if isinstance(sub, Mapping) and isinstance(sub.get("properties"), Mapping):
            _walk(sub, str(key), str(key), out, refs)
        else:
            out.append(Leaf(TOP_LEVEL, str(key), sub, key in set(schema.get("required") or []),
                            sub.get("default", NO_DEFAULT) if isinstance(sub, Mapping) else NO_DEFAULT))
            _walk(sub, str(key), TOP_LEVEL, out, refs)
    for name, sub in (schema.get(DEFS) or {}).items():
        _walk(sub, "", f"{DEFS}.{name}", out, refs)
    return out, refs


def leaves(schema: Mapping[str, Any]) -> list[Leaf]:
    """Every setting of ``schema`` that is not itself an object with ``properties``."""
    return [row for row in walk(schema)[0] if not row.group]


def missing_descriptions(schema: Mapping[str, Any]) -> list[str]:
    """Leaves without a non-empty ``description``, as ``key`` (or ``$defs.<name>.key``)."""
    return [_full_key(leaf) for leaf in leaves(schema) if not str(leaf.node.get("description") or "").strip()]


def _full_key(leaf: Leaf) -> str:
    return f"{leaf.table}.{leaf.key}" if leaf.table.startswith(DEFS) else leaf.key


# --------------------------------------------------------------------------- rendering
def _prose(text: Any) -> str:
    """One line of table-safe Markdown: whitespace collapsed, ``|`` escaped, and outside code spans a
    ``<`` that would open an HTML tag (``<role>``)."""
    parts = " ".join(str(text or "").split()).split("`")
    for i in range(0, len(parts), 2):
        parts[i] = TAG_START.sub(r"\\<", parts[i])
    return _pipes("`".join(parts))


def _pipes(text: str) -> str:
    """A table cell's text: a ``|`` would end the cell."""
    return text.replace("|", "\\|")


def _code(value: str) -> str:
    return _pipes(f"`{value}`")


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def type_text(node: Mapping[str, Any]) -> str:
    """The type column: JSON type(s), what a list holds, allowed values, numeric bounds, a definition's link."""
    name = _ref_name(node)
    if name is not None:
        return f"[{name}](#{name.lower()})"
    if "const" in node:
        return f"const {_json(node['const'])}"
    kind = node.get("type")
    kinds = [str(k) for k in kind] if isinstance(kind, list) else [str(kind)] if kind else []
    branches = node.get("oneOf") or node.get("anyOf")
    if not kinds and branches:
        kinds = [type_text(b) for b in branches]
    if isinstance(node.get("items"), Mapping):
        inner = type_text(node["items"])
        inner = f"({inner})" if " or " in inner or "," in inner else inner
        kinds = [f"array of {inner}" if k == "array" else k for k in kinds] or [f"array of {inner}"]
    text = " or ".join(kinds)
    if "enum" in node:
        values = ", ".join(_json(v) for v in node["enum"])
        text = f"{text}: {values}" if text else f"one of {values}"
    bounds = [f"{op} {_json(node[k])}" for k, op in (("minimum", ">="), ("exclusiveMinimum", ">"),
                                                      ("maximum", "<="), ("exclusiveMaximum", "<")) if k in node]
    if bounds:
        text = f"{text}, {', '.join(bounds)}" if text else ", ".join(bounds)
    return text or "any"


def _row(leaf: Leaf) -> str:
    node = leaf.node
    default = _code(_json(leaf.default)) if leaf.default is not NO_DEFAULT else ("required" if leaf.required else "")
    kind = "object" if leaf.group else _pipes(type_text(node))
    return f"| {_code(leaf.key)} | {kind} | {default} | {_prose(node.get('description'))} |"


def _table(rows: list[Leaf]) -> list[str]:
    return ["| key | type | default | description |", "| --- | --- | --- | --- |", *(_row(r) for r in rows)]


def render(schema: Mapping[str, Any]) -> str:
    """The reference page for ``schema``."""
    found, refs = walk(schema)
    lines = [
        "# Configuration reference",
        "",
        f"Generated from `workflow/schemas/config.schema.yaml` by `{COMMAND}`; do not edit by hand",
        "(`tests/test_config_reference.py` fails when this page and the schema disagree). What the",
        "configuration is and how presets merge: [configuration.md](configuration.md).",
        "",
        "A key is the dotted path of a setting in `config.yaml` (a preset writes the same keys under",
        "`presets.<preset>`); `[]` is an entry of a list, `<name>` a key of your choosing. A setting",
        "with a default may be left out; `required` marks one its section cannot do without.",
        "",
    ]
    tables: dict[str, list[Leaf]] = {}
    for leaf in found:
        tables.setdefault(leaf.table, []).append(leaf)
    props = schema.get("properties") or {}
    defs = schema.get(DEFS) or {}
    for table, rows in tables.items():
        if table.startswith(DEFS):
            continue
        node = {"description": schema.get("description")} if table == TOP_LEVEL else props[table]
        lines += [f"## {table}", ""]
        if node.get("description"):
            lines += [_prose(node["description"]), ""]
        lines += [*_table(rows), ""]
    def_tables = [(t, rows) for t, rows in tables.items() if t.startswith(DEFS)]
    if def_tables:
        lines += ["## Shared definitions", "",
                  "Settings of the schema's `$defs`, each used by the keys listed under its name.", ""]
    for table, rows in def_tables:
        name = table.removeprefix(f"{DEFS}.")
        lines += [f"### {name}", ""]
        if refs.get(name):
            lines += ["Used by " + ", ".join(_code(k) for k in refs[name]) + ".", ""]
        if defs[name].get("description"):
            lines += [_prose(defs[name]["description"]), ""]
        lines += [*_table(rows), ""]
    return "\n".join(lines).rstrip("\n") + "\n"


# --------------------------------------------------------------------------- entry point
def check(repo: Path = REPO_ROOT) -> list[str]:
    """Problems with the schema's descriptions and the committed page (empty when in order)."""
    schema = load_schema(repo / SCHEMA_PATH.relative_to(REPO_ROOT))
    problems = [f"schema leaf without a description: {key}" for key in missing_descriptions(schema)]
    page = repo / PAGE
    if not page.is_file() or page.read_text(encoding="utf-8") != render(schema):
        problems.append(f"{PAGE} is out of date: run `{COMMAND}`")
    return problems


def write(repo: Path = REPO_ROOT) -> Path:
    page = repo / PAGE
    page.write_text(render(load_schema(repo / SCHEMA_PATH.relative_to(REPO_ROOT))), encoding="utf-8")
    return page


def main(argv: list[str] | None = None) -> int:
    return write_or_check(argv, prog="python -m reappraisal.config_reference", description=__doc__.splitlines()[0],
                          write=write, check=check)


if __name__ == "__main__":
    sys.exit(main())
