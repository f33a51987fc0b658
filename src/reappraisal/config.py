"""Load, resolve and validate the pipeline configuration.

``config.yaml`` holds shared settings at the top level, a ``preset`` key
(``demo`` or ``paper``) and a ``presets`` mapping whose chosen entry is
deep-merged over the shared settings. The merged result is validated against
``workflow/schemas/config.schema.yaml`` (which also fills defaults); the same
function serves Snakemake (``workflow/rules/common.smk``) and the tests, so
both see one configuration.
"""

from __future__ import annotations

import copy
import functools
import re
from pathlib import Path
from typing import Any, Mapping, MutableMapping

import yaml

from .errors import ConfigError

REPO_ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = REPO_ROOT / "workflow" / "schemas" / "config.schema.yaml"

#: Settings spelled one way in every stage (the transformers/TRL argument
#: names); an old spelling is refused with its new name, not as an unknown key.
RENAMED_KEYS: dict[str, str] = {
    "policy.lr": "policy.learning_rate",
    "policy.precision": "policy.bf16",
    "policy.warm_start.steps": "policy.warm_start.max_steps",
    "policy.warm_start.lr": "policy.warm_start.learning_rate",
    "policy.warm_start.batch_size": "policy.warm_start.per_device_train_batch_size",
    "grm.sft.epochs": "grm.sft.num_train_epochs",
    "grm.sft.batch_size": "grm.sft.per_device_train_batch_size",
    "grm.grpo.steps": "grm.grpo.max_steps",
    "evaluation.demo_judge.epochs": "evaluation.demo_judge.num_train_epochs",
    "evaluation.demo_judge.batch_size": "evaluation.demo_judge.per_device_train_batch_size",
}


#: A policy arm's name (``policy.arms``; a folder in ``results/policy/``), and the one name an arm may not
#: take: the demo's warm start has that folder.
ARM_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
WARM_START = "warm_start"


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``base`` with ``override`` merged in; mappings merge, everything else replaces."""
    out = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def resolve_preset(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Merge the chosen preset over the shared settings.

    The result keeps ``preset`` and drops ``presets``. Raises ConfigError for
    an unknown preset.
    """
    if not isinstance(raw, Mapping):
        raise ConfigError("the configuration must be a mapping", where="config")
    preset = raw.get("preset", "demo")
    presets = raw.get("presets") or {}
    if not isinstance(preset, str) or preset not in presets:
        known = ", ".join(sorted(presets)) or "none declared"
        raise ConfigError(f"unknown preset {preset!r} (known: {known})", where="config key 'preset'")
    shared = {k: v for k, v in raw.items() if k != "presets"}
    resolved = deep_merge(shared, presets[preset] or {})
    resolved["preset"] = preset
    return resolved


def validate_config(config: dict[str, Any], schema_path: Path = SCHEMA_PATH) -> dict[str, Any]:
    """Validate (and fill defaults into) a resolved config; one clear line on error."""
    import jsonschema

    check_renamed_keys(config)
    check_arm_names(config.get("policy"))
    drop_disabled_arms(config.get("policy"))
    schema = _load_schema(schema_path)
    validator_cls = _validator_with_defaults(jsonschema.Draft202012Validator)
    errors = sorted(validator_cls(schema).iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        key = config_key(err.absolute_path) or "(top level)"
        raise ConfigError(_short_message(err), where=f"config key '{key}'")
    _check_semantics(config)
    return config


def load_config(path: str | Path = REPO_ROOT / "config.yaml", overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Read ``config.yaml``, apply ``overrides`` (deep-merged), resolve the preset and validate."""
    path = Path(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise ConfigError("file not found", where=str(path)) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"not valid YAML ({exc.__class__.__name__})", where=str(path)) from None
    if overrides:
        raw = deep_merge(raw, overrides)
    return validate_config(resolve_preset(raw))


def config_key(path) -> str:
    """A path into the config as users and the stages write it: ``data.ingest.ratings[0].layout``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def check_renamed_keys(config: Mapping[str, Any]) -> None:
    """Refuse a setting under its old name with one line naming the new one."""
    for old, new in RENAMED_KEYS.items():
        node: Any = config
        for part in old.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
            if node is None:
                break
        else:
            raise ConfigError(f"renamed to '{new}' (one spelling per setting in every stage)", where=f"config key '{old}'")


def check_arm_names(policy: Any) -> None:
    """Refuse an arm name with the reason, before the schema (whose message could not say why)."""
    arms = policy.get("arms") if isinstance(policy, Mapping) else None
    for name in arms if isinstance(arms, Mapping) else ():
        where = f"config key 'policy.arms.{name}'"
        if not ARM_NAME.match(name):
            raise ConfigError("arm names are lowercase letters, digits and '_'", where=where)
        if name == WARM_START:
            raise ConfigError(f"{WARM_START!r} names the warm start's folder in results/policy/; pick another arm "
                              "name", where=where)


def _short_message(err) -> str:
    if err.validator == "type":
        return f"{err.instance!r} is not of type {err.validator_value!r}"
    if err.validator == "enum":
        return f"{err.instance!r} is not one of {err.validator_value!r}"
    if err.validator == "additionalProperties":
        return err.message.replace("Additional properties", "unknown key(s)")
    return err.message


def drop_disabled_arms(policy: Any) -> None:
    """Remove every arm declared ``enabled: false`` from ``policy`` (in place), and the key from the others.

    An arm turned off is as if it were never declared: nothing trains, evaluates or lists it. This is how a
    lighter calibration world leaves arms out: ``calibration.world_config`` is merged over the preset, and a
    merge cannot delete a key."""
    arms = policy.get("arms") if isinstance(policy, MutableMapping) else None
    if not isinstance(arms, MutableMapping):
        return
    for name in list(arms):
        spec = arms[name]
        if not isinstance(spec, MutableMapping) or "enabled" not in spec:
            continue
        enabled = spec.pop("enabled")
        if not isinstance(enabled, bool):
            raise ConfigError(f"true or false, got {enabled!r}", where=f"config key 'policy.arms.{name}.enabled'")
        if not enabled:
            del arms[name]
    if not arms:
        raise ConfigError("every arm is turned off (enabled: false); at least one must be kept",
                          where="config key 'policy.arms'")


def _check_semantics(config: Mapping[str, Any]) -> None:
    """Rules a JSON schema cannot express well, with the reason in the message."""
    beta = (config.get("policy") or {}).get("beta")
    if beta is not None:
        check_kl_beta(beta, where="config key 'policy.beta'")
    dims = (config.get("data") or {}).get("dimensions") or []
    primary = (config.get("data") or {}).get("primary_dimension")
    if primary is not None and dims and primary not in dims:
        raise ConfigError(f"{primary!r} is not among data.dimensions {dims}", where="config key 'data.primary_dimension'")


def check_kl_beta(beta: float, *, where: str) -> float:
    """The KL coefficient of a GRPO stage, refused unless > 0 (every GRPO stage and the config check call it)."""
    beta = float(beta)
    if not beta > 0:
        raise ConfigError(
            f"beta must be > 0 (got {beta}): without a KL penalty GRPO drifts freely from the "
            "reference model and reward-hacks the committee",
            where=where,
        )
    return beta


def with_defaults(section: str, values: Mapping[str, Any] | None, schema_path: Path = SCHEMA_PATH) -> dict[str, Any]:
    """A top-level config section as a stage received it, validated and with the schema's defaults filled.

    The schema is the one source of defaults: :mod:`reappraisal.settings`
    builds each section's typed settings through this, once, at a command's
    door; stages read those, never a section with fallbacks of their own. A
    copy is returned; ``values`` is not changed.
    """
    import jsonschema

    whole = schema(schema_path)  # read only: the validator fills defaults into copies
    if section not in whole["properties"]:
        raise KeyError(f"the config schema has no section {section!r}")
    check_renamed_keys({section: values or {}})
    check_arm_names(values if section == "policy" else None)
    sub = {**whole["properties"][section], "$defs": whole.get("$defs", {})}
    out = copy.deepcopy(dict(values or {}))
    drop_disabled_arms(out if section == "policy" else None)
    validator_cls = _validator_with_defaults(jsonschema.Draft202012Validator)
    errors = sorted(validator_cls(sub).iter_errors(out), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        key = config_key([section, *err.absolute_path])
        raise ConfigError(_short_message(err), where=f"config key '{key}'")
    return out


def _load_schema(schema_path: Path = SCHEMA_PATH) -> dict[str, Any]:
    """A copy of the schema (the caller may change it)."""
    return copy.deepcopy(schema(schema_path))


def schema(schema_path: Path = SCHEMA_PATH) -> dict[str, Any]:
    """The config schema, parsed once per process (libyaml's parser where installed) and shared: read it, never
    change it. Every job validates its sections through it, several dozen times in some."""
    key = str(schema_path)
    if key not in _SCHEMAS:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        _SCHEMAS[key] = yaml.load(Path(schema_path).read_text(), Loader=loader)
    return _SCHEMAS[key]


_SCHEMAS: dict[str, dict[str, Any]] = {}


@functools.cache
def _validator_with_defaults(validator_class):
    """A jsonschema validator that fills ``default`` values (as Snakemake's validate does)."""
    from jsonschema import validators

    validate_properties = validator_class.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for prop, subschema in properties.items():
                if "default" in subschema and prop not in instance:
                    instance[prop] = copy.deepcopy(subschema["default"])
        yield from validate_properties(validator, properties, instance, schema)

    return validators.extend(validator_class, {"properties": set_defaults})
