"""Settings are typed once at the door: each section a frozen dataclass of the schema, built in a command's
``cli_main`` and passed down; nothing below reads a raw config section or fills defaults again."""

from __future__ import annotations

import ast
import dataclasses
import typing
from pathlib import Path

import pytest
import yaml

from reappraisal.config import REPO_ROOT, resolve_preset, schema, validate_config, with_defaults
from reappraisal.errors import ConfigError
from reappraisal.settings import (CLASSES, UNSET, FormatGateSettings, PolicySettings, Section, Settings, as_config,
                                  build, help_text, schema_node, section)

SRC = REPO_ROOT / "src" / "reappraisal"
TOP_LEVEL = {name: cls for name, cls in CLASSES.items() if "." not in name}


def _presets() -> dict[str, dict]:
    raw = yaml.safe_load((REPO_ROOT / "config.yaml").read_text())
    return {name: validate_config(resolve_preset({**raw, "preset": name})) for name in raw["presets"]}


# --- the classes are the schema's ------------------------------------------------------------------------


def test_every_section_a_command_reads_has_its_class():
    assert set(TOP_LEVEL) == set(schema()["properties"]) - {"preset", "seed"}
    assert {f.name for f in dataclasses.fields(Settings)} == set(schema()["properties"])


@pytest.mark.parametrize("path", sorted(CLASSES))
def test_a_class_has_a_field_for_every_key_of_its_schema_object(path):
    cls = CLASSES[path]
    assert [f.name for f in dataclasses.fields(cls)] == list(schema_node(path)["properties"])


#: Objects of the schema that stay the validated mappings they are, each with the reason.
RAW_OBJECTS = {
    "data.ingest.vignettes[]": "a declared column mapping (id fields are a column or a derivation, oneOf): "
                               "reappraisal.data.mapping and .sources read it and name its keys in their errors",
    "data.ingest.reappraisals[]": "as data.ingest.vignettes[]",
    "data.ingest.ratings[]": "as data.ingest.vignettes[]",
}


def _nested_objects(cls) -> list[tuple[str, dict, object]]:
    """(key, schema object, the field's annotation) of every field of ``cls`` whose values are objects."""
    out = []
    hints = typing.get_type_hints(cls)
    for name in schema_node(cls.schema_path)["properties"]:
        key = f"{cls.schema_path}.{name}"
        node = schema_node(key)
        for inner, suffix in ((node, ""), (node.get("items"), "[]"), (node.get("additionalProperties"), ".*")):
            if isinstance(inner, dict) and schema_node(key + suffix).get("properties"):
                out.append((key + suffix, schema_node(key + suffix), hints[name]))
    return out


@pytest.mark.parametrize("path", sorted(CLASSES))
def test_an_object_inside_a_section_is_its_own_class(path):
    """A nested object becomes a nested class (a list of them a tuple, a mapping of them a dict)."""
    for key, node, hint in _nested_objects(CLASSES[path]):
        if key in RAW_OBJECTS:
            continue
        kinds = [k for k in _flatten(hint) if isinstance(k, type) and issubclass(k, Section)]
        assert kinds, f"{key} is an object with settings: give it a class in reappraisal.settings"
        assert set(node["properties"]) == {f.name for f in dataclasses.fields(kinds[0])}, key


def _flatten(hint):
    args = typing.get_args(hint)
    return [hint, *[k for a in args for k in _flatten(a)]]


@pytest.mark.parametrize("path", sorted(CLASSES))
def test_defaults_and_help_are_the_schemas(path):
    cls = CLASSES[path]
    node = schema_node(path)
    for f in dataclasses.fields(cls):
        prop = schema_node(f"{path}.{f.name}") if not path.startswith("$defs") else node["properties"][f.name]
        prop = {**prop, **node["properties"][f.name]}
        assert f.metadata["help"] == " ".join(prop.get("description", "").split()), f"{path}.{f.name}"
        assert f.metadata["help"] or prop.get("properties"), f"{path}.{f.name} has no description"
        if "default" in prop:
            value = f.default if f.default is not dataclasses.MISSING else f.default_factory()
            # an object's default is the schema's with the defaults of its own keys filled
            assert _within(prop["default"], as_config(value)), f"{path}.{f.name}"
        elif f.name in node.get("required", ()):
            assert f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING, f"{path}.{f.name}"
        else:
            assert f.default is None and f.metadata[UNSET], f"{path}.{f.name}"


def _within(declared, value) -> bool:
    """``value`` is ``declared``, mappings with keys added (the defaults an object's own keys have)."""
    if isinstance(declared, dict):
        return isinstance(value, dict) and all(k in value and _within(v, value[k]) for k, v in declared.items())
    return declared == value and type(declared) is type(value)


@pytest.mark.parametrize("name", sorted(set(TOP_LEVEL) - {"data"}))
def test_a_section_left_out_is_the_schemas_defaults(name):
    assert as_config(TOP_LEVEL[name]()) == with_defaults(name, {})
    assert as_config(TOP_LEVEL[name].from_config(None)) == with_defaults(name, {})


@pytest.mark.parametrize("preset", ["demo", "paper"])
def test_every_section_of_every_preset_round_trips(preset):
    config = _presets()[preset]
    settings = Settings.from_params(config)
    for name in TOP_LEVEL:
        assert as_config(getattr(settings, name)) == config[name], name
    assert (settings.preset, settings.seed) == (preset, config["seed"])


def test_a_field_says_what_it_means_as_the_reference_page_does():
    """TRL's ``help`` per field: the schema's description, the one the configuration reference shows."""
    assert help_text(PolicySettings, "beta") == "KL coefficient; must be > 0 (refused with an explanation by reappraisal.config)"
    assert help_text(FormatGateSettings, "penalty") == "the reward of an answer that fails the gate, in group-std units"
    reference = (REPO_ROOT / "docs" / "configuration-reference.md").read_text()
    assert "the reward of an answer that fails the gate, in group-std units" in reference


def test_settings_are_frozen_all_the_way_down():
    policy = PolicySettings.from_config({"snapshot_steps": [1, 2]})
    with pytest.raises(dataclasses.FrozenInstanceError):
        policy.lam = 1.0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        policy.format_gate.penalty = 0.0  # type: ignore[misc]
    assert policy.snapshot_steps == (1, 2) and isinstance(policy.seeds, tuple)
    assert isinstance(policy.arms["committee"].w_rm, float) and policy.arms["committee"].seeds is None


def test_a_bad_value_is_refused_naming_its_key():
    with pytest.raises(ConfigError, match=r"config key 'policy.learning_rate'"):
        PolicySettings.from_config({"learning_rate": "fast"})
    with pytest.raises(ConfigError, match=r"config key 'policy.format_gate.max_sentences'"):
        FormatGateSettings.from_config({"max_sentences": 0})
    with pytest.raises(ConfigError, match=r"renamed to 'policy.learning_rate'"):
        PolicySettings.from_config({"lr": 1e-5})


def test_a_command_without_a_section_gets_its_defaults_and_no_data():
    settings = Settings.from_params({"seed": 3, "preset": "demo", "policy": {"lam": 0.1}})
    assert settings.policy.lam == 0.1 and settings.summary == TOP_LEVEL["summary"]() and settings.data is None


def test_a_field_the_schema_does_not_declare_is_refused_at_import():
    with pytest.raises(TypeError, match="has no key 'max_words'"):
        @section("policy.format_gate")
        class Gate(Section):
            max_words: int
    with pytest.raises(TypeError, match="no field for policy.format_gate.max_words"):
        build(FormatGateSettings, {"max_sentences": 2, "penalty": -3.0, "max_words": 5})


# --- nothing below a command's door reads a raw section --------------------------------------------------

#: Where settings are built: the config's module and the settings module.
SETTINGS_MODULES = {"config.py", "settings.py"}
#: A command's door: the function that parses its arguments and builds its settings.
ENTRANCE = "cli_main"
#: Functions that are part of their commands' doors, each with the reason.
DOOR_HELPERS = {
    ("reward/trainer_command.py", "parse_command"): "the reward commands' shared argument parsing, called by each "
                                                    "one's cli_main only",
}
#: Names a raw config mapping goes by (also ``*_cfg``, ``*_config``, ``*_params``, ``*_section``; a bare
#: ``section`` is a page's section in the report).
CONFIG_NAMES = {"params", "cfg", "config", "conf"}
CONFIG_SUFFIXES = ("_cfg", "_config", "_params", "_section")
#: Calls that fill the schema's defaults or build settings: only at a door.
BUILDERS = {"with_defaults", "validate_config"}

#: Modules still reading raw sections below their commands' doors, each with the reason; the list only shrinks
#: (an entry whose module no longer reads one fails the test).
NOT_YET_TYPED: dict[str, str] = {}


def _sections() -> dict[str, set[str]]:
    whole = schema()["properties"]
    return {name: set(whole[name].get("properties") or ()) for name in whole if name not in {"preset", "seed"}}


def _name(node: ast.AST) -> str | None:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


def _keyed(node: ast.AST) -> tuple[ast.AST, str] | None:
    """``x["key"]`` or ``x.get("key", ...)``: (x, key)."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.value, node.slice.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in {"get", "pop"} \
            and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        return node.func.value, node.args[0].value
    return None


def raw_reads(src: Path = SRC) -> dict[str, list[str]]:
    """Module -> its raw config reads below a door: a defaults-filling call, a settings class built, a section
    read off a config mapping (``params["policy"]``, ``cfg.get("grm")``), a key read off a config mapping
    (``cfg["delta"]``) or off a variable named for a section (``policy["max_steps"]``)."""
    sections = _sections()
    found: dict[str, list[tuple[int, int, str]]] = {}
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src).as_posix()
        if rel in SETTINGS_MODULES:
            continue
        tree = ast.parse(path.read_text())
        door = {id(n) for fn in ast.walk(tree) if isinstance(fn, ast.FunctionDef)
                and (fn.name == ENTRANCE or (rel, fn.name) in DOOR_HELPERS) for n in ast.walk(fn)}
        for node in ast.walk(tree):
            if id(node) in door:
                continue
            what = None
            if isinstance(node, ast.Call):
                called = _name(node.func)
                if called in BUILDERS or (called in {"from_config", "from_params"} and isinstance(node.func, ast.Attribute)
                                          and (_name(node.func.value) or "").endswith("Settings")):
                    what = "builds settings"
            keyed = _keyed(node)
            if what is None and keyed:
                base, key = _name(keyed[0]) or "", keyed[1]
                config_like = base in CONFIG_NAMES or base.endswith(CONFIG_SUFFIXES)
                if config_like:
                    what = "reads a section" if key in sections else "reads a config mapping"
                elif key in sections.get(base, ()):
                    what = f"reads the raw {base} section"
            if what:
                found.setdefault(rel, []).append((node.lineno, node.col_offset, f"{what}: {ast.unparse(node)}"))
    return {rel: [f"{rel}:{line}: {text}" for line, _, text in sorted(hits)] for rel, hits in found.items()}


def test_no_module_below_a_door_reads_a_raw_section():
    found = raw_reads()
    new = [line for rel, lines in found.items() if rel not in NOT_YET_TYPED for line in lines]
    assert not new, ("raw config reads below a command's door (build the section's settings in cli_main with "
                     "reappraisal.settings and pass them down):\n" + "\n".join(new))
    stale = sorted(set(NOT_YET_TYPED) - set(found))
    assert not stale, f"typed now: remove from NOT_YET_TYPED: {stale}"


def test_the_scan_finds_each_kind_of_raw_read(tmp_path):
    (tmp_path / "stage_io.py").write_text(
        "from reappraisal.config import with_defaults\n"
        "from reappraisal.settings import PolicySettings\n\n"
        "def cli_main(argv):\n"
        "    params = parse(argv)\n"
        "    return train(params['policy'], with_defaults('grm', params.get('grm')))\n\n"
        "def train(policy, grm_cfg):\n"
        "    gate = with_defaults('policy', policy)['format_gate']\n"
        "    again = PolicySettings.from_config(policy)\n"
        "    return policy['max_steps'], grm_cfg['delta'], gate, again\n\n"
        "def fine(frame, summary, model):\n"
        "    return frame['split'], summary['win_rate'], model.from_config(3)\n")
    assert raw_reads(tmp_path)["stage_io.py"] == [
        "stage_io.py:9: builds settings: with_defaults('policy', policy)",
        "stage_io.py:10: builds settings: PolicySettings.from_config(policy)",
        "stage_io.py:11: reads the raw policy section: policy['max_steps']",
        "stage_io.py:11: reads a config mapping: grm_cfg['delta']"]
