"""The schema is the one source of defaults: config dataclasses either have none or the schema's."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest
import yaml

from reappraisal.config import _load_schema, with_defaults
from reappraisal.base_models.tiny import TinyArchitecture
from reappraisal.policy.committee import FormatGate
from reappraisal.reward.train_io import RewardTrainConfig
from reappraisal.settings import RewardSettings


def _schema_section(*path: str) -> dict:
    node = _load_schema()
    for key in path:
        node = node["properties"][key]
    return node["properties"]


@pytest.mark.parametrize("cls, path", [
    (FormatGate, ("policy", "format_gate")),
    (TinyArchitecture, ("base_models", "tiny")),
])
def test_dataclass_defaults_are_the_schemas(cls, path):
    declared = _schema_section(*path)
    for f in dataclasses.fields(cls):
        assert f.name in declared, f"{cls.__name__}.{f.name} is not a key of {'.'.join(path)}"
        assert f.default is not dataclasses.MISSING, f"{cls.__name__}.{f.name} has no default"
        assert f.default == declared[f.name]["default"], f"{cls.__name__}.{f.name}"


# --- scans of the whole package: no default is written twice -----------------

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src" / "reappraisal"
SCHEMAS = [REPO / "workflow" / "schemas" / "config.schema.yaml", REPO / "workflow" / "schemas" / "judge.schema.yaml"]

#: ``.get(<setting>, <literal>)`` calls that read something other than a config
#: section, or whose literal is not a default; each with the reason.
NOT_CONFIG_FALLBACKS = {
    ("config.py", "preset"): "the preset is chosen before the schema can be applied (the raw config.yaml)",
    ("grm/training_summary.py", "sft"): "reads the GRM's training summary JSON, not config",
    ("grm/training_summary.py", "grpo"): "reads the GRM's training summary JSON, not config",
    ("workflow_dvc.py", "files"): "reads workflow/dvc_stages.yaml, not config",
    ("data/sources.py", "delimiter"): "the delimiter follows the file's format (a tab for tsv), which the schema cannot express",
    ("training/run.py", "max_steps"): "reads a checkpoint's trainer state, not config",
}


def _schema_objects() -> list[tuple[str, dict]]:
    """Every object of the two schemas with its properties: (where, properties)."""
    out = []

    def walk(node, where):
        if not isinstance(node, dict):
            return
        if isinstance(node.get("properties"), dict):
            out.append((where, node["properties"]))
            for key, sub in node["properties"].items():
                walk(sub, f"{where}.{key}")
        for name, sub in (node.get("$defs") or {}).items():
            walk(sub, f"{where}.$defs.{name}")
        for key in ("items", "additionalProperties"):
            walk(node.get(key), f"{where}.{key}")

    for path in SCHEMAS:
        walk(yaml.safe_load(path.read_text()), path.name)
    return out


def _setting_names() -> set[str]:
    return {key for _, props in _schema_objects() for key in props}


def _empty_literal(node: ast.AST) -> bool:
    """``{}``, ``[]``, ``()``, ``None``, ``""``, ``0``: "nothing", not a default of its own."""
    return (isinstance(node, ast.Dict) and not node.keys) or (isinstance(node, (ast.List, ast.Tuple)) and not node.elts) \
        or (isinstance(node, ast.Constant) and not node.value)


def literal_fallbacks(src: Path = SRC, names: set[str] | None = None) -> list[str]:
    """``x.get("<setting>", <literal>)`` calls under ``src``: a default written beside the schema's."""
    names = _setting_names() if names is None else names
    found = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in {"get", "setdefault", "pop"} and len(node.args) == 2):
                continue
            key, default = node.args
            if not (isinstance(key, ast.Constant) and key.value in names):
                continue
            literal = isinstance(default, (ast.Constant, ast.List, ast.Dict, ast.Tuple, ast.Attribute, ast.UnaryOp))
            if literal and not (isinstance(default, ast.Constant) and default.value is None) \
                    and (rel, key.value) not in NOT_CONFIG_FALLBACKS:
                found.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
        for node in ast.walk(ast.parse(path.read_text())):  # x.get("<setting>") or <a default>
            if not (isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or)):
                continue
            first, rest = node.values[0], node.values[1:]
            if not (isinstance(first, ast.Call) and isinstance(first.func, ast.Attribute) and first.func.attr == "get"
                    and len(first.args) == 1 and isinstance(first.args[0], ast.Constant)
                    and first.args[0].value in names):
                continue
            if not all(_empty_literal(v) for v in rest) and (rel, first.args[0].value) not in NOT_CONFIG_FALLBACKS:
                found.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_module_reads_a_setting_with_a_default_of_its_own():
    found = literal_fallbacks()
    assert not found, ("settings read with a fallback of their own (read the section through "
                       "reappraisal.config.with_defaults and index it):\n" + "\n".join(found))


def test_the_fallback_scan_finds_one(tmp_path):
    (tmp_path / "stage.py").write_text("def f(cfg):\n    return cfg.get('n_boot', 1000), cfg.get('bar'), cfg['confidence']\n")
    assert literal_fallbacks(tmp_path) == ["stage.py:2: cfg.get('n_boot', 1000)"]


def test_the_fallback_scan_finds_a_default_after_or(tmp_path):
    (tmp_path / "stage.py").write_text("def f(ev):\n    return ev.get('judges_dir') or JUDGES_DIR, ev.get('judges') or []\n")
    assert literal_fallbacks(tmp_path) == ["stage.py:2: ev.get('judges_dir') or JUDGES_DIR"]


def _dataclass_fields(src: Path = SRC):
    """(module, class, {field: default node or None}) of every dataclass under ``src``."""
    for path in sorted(src.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any("dataclass" in ast.unparse(d) for d in node.decorator_list):
                fields = {s.target.id: s.value for s in node.body
                          if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
                          and "ClassVar" not in ast.unparse(s.annotation)}
                if fields:
                    yield path.relative_to(src).as_posix(), node.name, fields


def settings_dataclasses(src: Path = SRC):
    """Dataclasses whose fields are all keys of one schema object: (module, class, fields, where, properties)."""
    objects = _schema_objects()
    for module, name, fields in _dataclass_fields(src):
        for where, props in objects:
            if set(fields) <= set(props):
                yield module, name, fields, where, props


def _disagreements(module, name, fields, where, props) -> list[str]:
    out = []
    for field_name, value in fields.items():
        if value is None:
            continue
        declared = props[field_name].get("default", "<no default>")
        try:
            default = ast.literal_eval(value)
        except ValueError:
            out.append(f"{module} {name}.{field_name} = {ast.unparse(value)} (not a literal; {where} says {declared!r})")
            continue
        if default != declared:
            out.append(f"{module} {name}.{field_name} = {default!r}, but {where}.{field_name} default is {declared!r}")
    return out


def test_every_settings_dataclass_has_no_defaults_or_the_schemas():
    """A dataclass whose fields are the keys of a schema section takes its defaults from there or has none.

    A class that several schema objects could describe (e.g. the tiny
    architecture and its per-role override) must agree with one of them.
    """
    verdicts: dict[str, list[list[str]]] = {}
    for module, name, fields, where, props in settings_dataclasses():
        verdicts.setdefault(f"{module} {name}", []).append(_disagreements(module, name, fields, where, props))
    wrong = [min(found, key=len) for found in verdicts.values() if all(found)]
    assert not wrong, "\n".join(line for found in wrong for line in found)
    # the scan sees the settings classes (a rename that hid one would make this test pass vacuously)
    seen = {key.split()[-1] for key in verdicts}
    assert {"FormatGate", "TinyArchitecture", "RewardTrainConfig", "Decoding", "CommitteeWeights"} <= seen


def test_the_dataclass_scan_finds_a_default_that_disagrees(tmp_path):
    (tmp_path / "gate.py").write_text("from dataclasses import dataclass\n\n@dataclass\nclass Gate:\n"
                                      "    max_sentences: int = 3\n    penalty: float = -3.0\n")
    found = [_disagreements(*hit) for hit in settings_dataclasses(tmp_path)]
    assert found == [["gate.py Gate.max_sentences = 3, but config.schema.yaml.policy.format_gate.max_sentences default is 2"]]


def test_reward_train_config_takes_every_default_from_the_schema():
    assert all(f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
               for f in dataclasses.fields(RewardTrainConfig))
    cfg = RewardTrainConfig.from_settings(RewardSettings())
    declared = _schema_section("reward")
    assert dataclasses.asdict(cfg) == {f.name: declared[f.name]["default"] for f in dataclasses.fields(cfg)}
    # the values the review found disagreeing with the schema
    assert (cfg.num_train_epochs, cfg.weight_decay, cfg.warmup_ratio, cfg.lr_scheduler_type) == (2, 0.01, 0.05, "cosine")


def test_warm_start_defaults_come_from_the_schema():
    ws = with_defaults("policy", {})["warm_start"]
    assert (ws["max_steps"], ws["learning_rate"]) == (150, 3e-3)


def test_a_section_with_a_wrong_key_is_refused_with_its_config_key():
    from reappraisal.errors import ConfigError

    with pytest.raises(ConfigError, match=r"config key 'reward.learning_rate'"):
        RewardSettings.from_config({"learning_rate": "fast"})


@pytest.mark.parametrize("old, new", [("policy.lr", "policy.learning_rate"), ("grm.sft.epochs", "grm.sft.num_train_epochs"),
                                      ("policy.precision", "policy.bf16")])
def test_an_old_spelling_is_refused_with_its_new_name(old, new):
    from reappraisal.config import load_config
    from reappraisal.errors import ConfigError

    override: dict = {}
    node = override
    *parents, leaf = old.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = 1
    with pytest.raises(ConfigError, match=rf"config key '{old}'.*renamed to '{new}'"):
        load_config(overrides=override)
    section = old.split(".")[0]
    with pytest.raises(ConfigError, match=rf"renamed to '{new}'"):
        with_defaults(section, override[section])


def _leaves(node: dict, path: list[str]):
    for key, value in node.items():
        if isinstance(value, dict) and value and path[-1:] != ["arms"]:
            yield from _leaves(value, path + [key])
        elif value == {} and len(path) in (0, 2):
            continue  # an empty section, written so that DVC tracks what is added to it (not a setting)
        else:
            yield path + [key]


def _resolved(raw: dict, preset: str) -> str:
    import copy
    import json

    from reappraisal.config import resolve_preset, validate_config
    from reappraisal.errors import ConfigError

    try:
        return json.dumps(validate_config(resolve_preset({**copy.deepcopy(raw), "preset": preset})), sort_keys=True)
    except ConfigError as exc:
        return str(exc)


def _without(raw: dict, path: list[str]) -> dict:
    import copy

    out = copy.deepcopy(raw)
    node = out
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return out


def redundant_settings(raw: dict) -> list[str]:
    """Settings of a config.yaml whose removal changes no preset's resolved config (a default written twice)."""
    presets = list(raw["presets"])
    reference = {name: _resolved(raw, name) for name in presets}
    found = []
    for name in presets:
        for path in _leaves(raw["presets"][name], ["presets", name]):
            if _resolved(_without(raw, path), name) == reference[name]:
                found.append(".".join(path))
    shared = {k: v for k, v in raw.items() if k not in {"presets", "preset"}}
    for path in _leaves(shared, []):
        if all(_resolved(_without(raw, path), name) == reference[name] for name in presets):
            found.append(".".join(path))
    return found


def test_config_yaml_writes_no_setting_equal_to_its_default():
    raw = yaml.safe_load((REPO / "config.yaml").read_text())
    assert redundant_settings(raw) == []


def test_the_redundancy_check_finds_a_repeated_default():
    raw = yaml.safe_load((REPO / "config.yaml").read_text())
    raw["summary"] = {"bar": 0.608}
    raw["presets"]["demo"]["policy"]["beta"] = 0.04
    assert redundant_settings(raw) == ["presets.demo.policy.beta", "summary.bar"]
