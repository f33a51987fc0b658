"""Typed settings: each config section a command reads, as a frozen dataclass built once at its door.

A command's ``cli_main`` turns its ``--params`` into :class:`Settings` with
:meth:`Settings.from_params`: every section is validated against
``workflow/schemas/config.schema.yaml`` and the schema's defaults are filled
(:func:`reappraisal.config.with_defaults`, called here and nowhere below a
command). The command passes the sections down; everything below reads
attributes (``policy.format_gate.penalty``), never a raw mapping, so a
function sees the same value whoever called it (TRL's ``GRPOConfig`` is the
model: one typed object with a help text per field, built once).

The schema is the one source: a class here declares only its fields' names
and types (what a reader and a type checker see); :func:`section` reads each
field's default and help text (``metadata["help"]``) from the schema object
the class names, and refuses a field the schema does not declare
(``tests/test_settings.py`` checks the converse: every key of the object is a
field). Lists become tuples and nested objects nested classes; mappings of
names the user chooses (``policy.arms``, ``evaluation.opponents``) become
dicts of settings classes, and free-form mappings (``evaluation.generation.vllm``,
``calibration.world_config``) and the data section's declared column mappings
(``data.ingest``) stay the validated mappings they are (dicts: read them,
never change them). :func:`as_config` turns an object back into the mapping
the schema validated (what a fingerprint or a written record holds).

A field with no schema default is ``None`` when the config leaves it out
(``policy.arms.<name>.w_rm``: unset), unless the schema requires it.
"""

from __future__ import annotations

import copy
import dataclasses
import types
import typing
from collections.abc import Mapping as MappingABC
from typing import Any, Callable, ClassVar, Mapping, TypeVar, Union

from .config import schema, with_defaults

S = TypeVar("S", bound="Section")

#: Schema path -> the class of that schema object (``policy``, ``policy.format_gate``, ``policy.arms.*``).
CLASSES: dict[str, type] = {}
#: Field metadata key: the field has no schema default and is ``None`` when the config leaves it out.
UNSET = "unset"


class Section:
    """Base of every settings class: :meth:`from_config` at a command's entrance, :func:`as_config` back."""

    #: the schema object the class stands for: a top-level section (``policy``), a nested object
    #: (``policy.format_gate``), a mapping's value (``policy.arms.*``), a list's item (``...[]``) or a
    #: shared definition (``$defs.grpo_vllm``)
    schema_path: ClassVar[str]

    @classmethod
    def from_config(cls: type[S], values: Mapping[str, Any] | None) -> S:
        """The settings of ``values`` (a config section as ``config.yaml`` writes it, or a part of one),
        validated and the schema's defaults filled: a ConfigError naming the key otherwise."""
        top, *rest = cls.schema_path.split(".")
        if top == "$defs" or any(p == "*" or p.endswith("[]") for p in rest):
            raise TypeError(f"{cls.__name__} stands for {cls.schema_path}: build it within its section")
        wrapped: Any = dict(values or {})
        for part in reversed(rest):
            wrapped = {part: wrapped}
        filled: Any = with_defaults(top, wrapped)
        for part in rest:
            filled = filled[part]
        return build(cls, filled)


def schema_node(path: str) -> dict[str, Any]:
    """The schema object at ``path`` (``$ref`` resolved; ``*``: a mapping's values, ``[]``: a list's items)."""
    whole = schema()
    parts = path.split(".")
    if parts[0] == "$defs":
        node = _resolve(whole["$defs"][parts[1]])
        parts = parts[2:]
    else:
        node = _resolve(whole["properties"][parts[0]])
        parts = parts[1:]
    for part in parts:
        if part == "*":
            node = _resolve(node["additionalProperties"])
            continue
        items = part.endswith("[]")
        node = _resolve(node["properties"][part.removesuffix("[]")])
        if items:
            node = _resolve(node["items"])
    return node


def _resolve(node: Mapping[str, Any]) -> dict[str, Any]:
    """A schema node with its ``$ref`` followed; the node's own keys (``default``, ``description``) win."""
    if "$ref" not in node:
        return dict(node)
    target: Any = schema()
    for part in node["$ref"].removeprefix("#/").split("/"):
        target = target[part]
    return {**_resolve(target), **{k: v for k, v in node.items() if k != "$ref"}}


@typing.dataclass_transform(kw_only_default=True, frozen_default=True)
def section(path: str) -> Callable[[type[S]], type[S]]:
    """Make the decorated class a frozen, keyword-only dataclass of the schema object at ``path``.

    Each annotated field must be a key of that object; its default (frozen: a
    list becomes a tuple, an object its class) and its help text come from
    the schema. A key the object requires has no default; one it neither
    requires nor defaults is ``None`` when left out (``metadata["unset"]``).
    """

    def make(cls: type[S]) -> type[S]:
        node = schema_node(path)
        props = node.get("properties") or {}
        required = set(node.get("required") or ())
        hints = typing.get_type_hints(cls)
        for name in cls.__dict__.get("__annotations__", {}):
            if name not in props:
                raise TypeError(f"{cls.__name__}.{name}: the schema's {path} has no key {name!r}")
            prop = _resolve(props[name])
            meta = {"help": " ".join((prop.get("description") or "").split()), "key": f"{path}.{name}"}
            if "default" in prop:
                default = convert(hints[name], copy.deepcopy(prop["default"]), f"{path}.{name}")
                if isinstance(default, (Section, dict)) or type(default).__hash__ is None:
                    setattr(cls, name, dataclasses.field(default_factory=lambda d=default: copy.deepcopy(d),
                                                         metadata=meta))
                else:
                    setattr(cls, name, dataclasses.field(default=default, metadata=meta))
            elif name in required:
                setattr(cls, name, dataclasses.field(metadata=meta))
            else:
                setattr(cls, name, dataclasses.field(default=None, metadata={**meta, UNSET: True}))
        cls.schema_path = path
        made = dataclasses.dataclass(frozen=True, kw_only=True)(cls)
        CLASSES[path] = made
        return made

    return make


def build(cls: type[S], values: Mapping[str, Any], where: str | None = None) -> S:
    """``cls`` from a mapping the schema has validated and filled (nested objects, lists and mappings converted)."""
    where = where or cls.schema_path
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(values) - names)
    if unknown:
        raise TypeError(f"{cls.__name__} has no field for {where}.{unknown[0]} (add it to reappraisal.settings)")
    return cls(**{k: convert(hints[k], v, f"{where}.{k}") for k, v in values.items()})


def convert(hint: Any, value: Any, where: str) -> Any:
    """``value`` (validated JSON) as the annotation ``hint`` declares it: settings classes, tuples, dicts."""
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        if value is None:
            return None
        kinds = [a for a in typing.get_args(hint) if a is not type(None)]
        return convert(kinds[0], value, where) if len(kinds) == 1 else value
    if isinstance(hint, type) and issubclass(hint, Section):
        return build(hint, value, where)
    if origin is tuple:
        item = typing.get_args(hint)[0]
        return tuple(convert(item, v, f"{where}[{i}]") for i, v in enumerate(value))
    if origin in (MappingABC, dict):
        item = typing.get_args(hint)[1]
        return {k: convert(item, v, f"{where}.{k}") for k, v in value.items()}
    return value


def as_config(value: Any) -> Any:
    """A settings object back as the mapping the schema validated (tuples as lists, unset keys left out)."""
    if isinstance(value, Section):
        return {f.name: as_config(getattr(value, f.name)) for f in dataclasses.fields(value)  # type: ignore[arg-type]
                if not (f.metadata.get(UNSET) and getattr(value, f.name) is None)}
    if isinstance(value, tuple):
        return [as_config(v) for v in value]
    if isinstance(value, MappingABC):
        return {k: as_config(v) for k, v in value.items()}
    return value


def help_text(cls: type, name: str) -> str:
    """The schema's description of field ``name`` of settings class ``cls``."""
    return next(f.metadata["help"] for f in dataclasses.fields(cls) if f.name == name)


# --- shared definitions ----------------------------------------------------------------------------------


@section("$defs.grpo_vllm")
class GrpoVllmSettings(Section):
    """vLLM generation of a GRPO stage's completions (TRL's ``use_vllm``): ``policy.vllm``, ``grm.vllm``."""

    enabled: bool
    mode: str
    gpu_memory_utilization: float
    tensor_parallel_size: int
    max_model_length: int | None
    enable_sleep_mode: bool


# --- policy ----------------------------------------------------------------------------------------------


@section("policy.arms.*")
class ArmSettings(Section):
    """One arm as ``policy.arms.<name>`` declares it (:func:`reappraisal.policy.arms.parse_arms` reads it)."""

    reward: str
    w_rm: float | None
    w_grm: float | None
    lam: float | None
    beta: float | None
    seeds: tuple[int, ...] | None
    external: str | None
    #: unset on every arm a stage sees: an arm declared ``enabled: false`` is removed from the config, and the
    #: key from the others, before anything reads it (:func:`reappraisal.config.drop_disabled_arms`)
    enabled: bool | None


@section("policy.format_gate")
class FormatGateSettings(Section):
    max_sentences: int
    penalty: float


@section("policy.launcher")
class LauncherSettings(Section):
    accelerate_config: str | None
    num_processes: int


@section("policy.warm_start")
class WarmStartSettings(Section):
    enabled: bool
    max_steps: int
    learning_rate: float
    per_device_train_batch_size: int
    max_length: int
    save_steps: int


@section("policy.health")
class HealthSettings(Section):
    """Thresholds of a GRPO run's health verdict (:func:`reappraisal.policy.health.health_verdict`)."""

    kl_max: float
    entropy_min_ratio: float
    reward_std_min: float
    frac_zero_std_max: float
    clipped_ratio_max: float
    gate_pass_min: float
    window: int


@section("policy")
class PolicySettings(Section):
    """The ``policy`` section: GRPO policy arms on the committee reward."""

    arms: Mapping[str, ArmSettings]
    seeds: tuple[int, ...]
    lam: float
    gold_scorer: str | None
    format_gate: FormatGateSettings
    learning_rate: float
    beta: float
    num_generations: int
    per_device_train_batch_size: int
    gradient_accumulation_steps: int
    max_steps: int
    save_steps: int
    save_total_limit: int
    snapshot_steps: tuple[int, ...]
    max_completion_length: int
    temperature: float
    top_p: float
    warmup_steps: int
    lr_scheduler_type: str
    max_grad_norm: float
    bf16: str | bool
    use_cpu: bool
    cpu_threads: int | None
    gradient_checkpointing: bool
    launcher: LauncherSettings
    vllm: GrpoVllmSettings
    warm_start: WarmStartSettings
    health: HealthSettings


# --- training --------------------------------------------------------------------------------------------


@section("training")
class TrainingSettings(Section):
    """The ``training`` section: what every trainer shares (live training metrics)."""

    report_to: str


# --- data ------------------------------------------------------------------------------------------------


@section("data.osf")
class OsfSettings(Section):
    api_url: str
    node: str
    token_env: str
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    timeout_s: float
    max_retries: int


@section("data.ingest")
class IngestSettings(Section):
    """Where the three tables come from. Each source is the column mapping the config declares (a validated
    mapping: :mod:`reappraisal.data.mapping` and :mod:`reappraisal.data.sources` read it, naming its keys)."""

    vignettes: tuple[Mapping[str, Any], ...]
    reappraisals: tuple[Mapping[str, Any], ...]
    ratings: tuple[Mapping[str, Any], ...]
    case_insensitive_ids: bool
    leading_zero_insensitive_ids: bool


@section("data")
class DataSettings(Section):
    """The ``data`` section: the source, the rating dimensions and the ingestion's column mapping."""

    source: str
    bundled_dir: str
    dimensions: tuple[str, ...]
    primary_dimension: str
    osf: OsfSettings | None
    ingest: IngestSettings


@section("normalize")
class NormalizeSettings(Section):
    zero_variance: str
    min_ratings_per_rater: int


@section("split")
class SplitSettings(Section):
    val_fraction: float
    heldout_author_types: tuple[str, ...]
    max_pairs_per_scenario: int
    min_ratings_per_reappraisal: int


@section("leakage")
class LeakageSettings(Section):
    ngram: int
    max_shared_ngrams: int


# --- base models -----------------------------------------------------------------------------------------


@section("base_models.expected_model_type")
class ExpectedModelTypeSettings(Section):
    reward: str | None
    grm: str | None
    policy: str | None
    judge: str | None


@section("$defs.tiny_arch_override")
class TinyArchOverrideSettings(Section):
    hidden_size: int | None
    num_hidden_layers: int | None
    num_attention_heads: int | None
    num_key_value_heads: int | None
    head_dim: int | None
    intermediate_size: int | None
    max_position_embeddings: int | None


@section("base_models.tiny.role_overrides")
class RoleOverridesSettings(Section):
    reward: TinyArchOverrideSettings | None
    grm: TinyArchOverrideSettings | None
    policy: TinyArchOverrideSettings | None
    judge: TinyArchOverrideSettings | None


@section("base_models.tiny.seeds")
class TinySeedsSettings(Section):
    reward: int | None
    grm: int | None
    policy: int | None
    judge: int | None


@section("base_models.tiny")
class TinySettings(Section):
    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    max_position_embeddings: int
    role_overrides: RoleOverridesSettings
    seeds: TinySeedsSettings


@section("base_models")
class BaseModelsSettings(Section):
    """The ``base_models`` section: the base model of each role."""

    source: str
    reward_base: str
    grm_base: str
    policy_base: str
    judge_base: str
    expected_model_type: ExpectedModelTypeSettings
    tiny: TinySettings


# --- reward ----------------------------------------------------------------------------------------------


@section("reward.ensemble")
class EnsembleSettings(Section):
    penalty: str
    lam: float
    batch_size: int


@section("reward.evaluation")
class RewardEvaluationSettings(Section):
    best_of_n: int
    best_of_n_draws: int
    confidence: float


@section("reward.bradley_terry")
class BradleyTerrySettings(Section):
    min_gap: float
    max_pairs: int | None
    learning_rate: float
    num_train_epochs: float
    per_device_train_batch_size: int
    gradient_accumulation_steps: int
    weight_decay: float
    warmup_ratio: float
    lr_scheduler_type: str
    max_grad_norm: float
    center_rewards_coefficient: float | None
    save_steps: int
    save_total_limit: int
    logging_steps: int


@section("reward")
class RewardSettings(Section):
    """The ``reward`` section: the regression reward models, their ensemble and evaluation, the Bradley-Terry
    model."""

    seeds: tuple[int, ...]
    max_length: int
    learning_rate: float
    num_train_epochs: float
    per_device_train_batch_size: int
    per_device_eval_batch_size: int
    gradient_accumulation_steps: int
    weight_decay: float
    warmup_ratio: float
    lr_scheduler_type: str
    max_grad_norm: float
    save_steps: int
    save_total_limit: int
    eval_steps: int
    logging_steps: int
    early_stopping_patience: int
    bf16: str | bool
    gradient_checkpointing: bool
    cpu_threads: int | None
    ensemble: EnsembleSettings
    evaluation: RewardEvaluationSettings
    bradley_terry: BradleyTerrySettings


# --- grm -------------------------------------------------------------------------------------------------


@section("grm.sft")
class GrmSftSettings(Section):
    num_train_epochs: float
    learning_rate: float
    per_device_train_batch_size: int
    max_length: int
    max_pairs: int | None
    logging_steps: int
    save_steps: int


@section("grm.grpo")
class GrmGrpoSettings(Section):
    max_steps: int
    num_generations: int
    prompts_per_step: int
    beta: float
    learning_rate: float
    max_completion_length: int
    temperature: float
    save_steps: int


@section("grm")
class GrmSettings(Section):
    """The ``grm`` section: the generative pairwise reward model."""

    cpu_threads: int | None
    delta: float
    traces_file: str | None
    rationale_tie: float
    sft: GrmSftSettings
    grpo: GrmGrpoSettings
    vllm: GrpoVllmSettings
    max_new_tokens: int
    batch_size: int
    scorer_mode: str
    engine: str
    eval_max_pairs: int | None
    eval_logprob: bool


# --- evaluation ------------------------------------------------------------------------------------------


@section("evaluation.answers_per_scenario")
class AnswersPerScenarioSettings(Section):
    train: int
    ood: int
    confirm: int


@section("evaluation.confirmation_pool")
class ConfirmationPoolSettings(Section):
    enabled: bool
    fraction: float
    scenarios: tuple[str, ...] | None


@section("evaluation.truth.oracle")
class OracleSettings(Section):
    candidates: int
    draws_per_scenario: int


@section("evaluation.truth.trajectory")
class TrajectorySettings(Section):
    arms: tuple[str, ...]
    answers_per_scenario: int
    grm_answers_per_scenario: int


@section("evaluation.truth")
class TruthSettings(Section):
    enabled: bool
    answers_per_scenario: int
    oracle: OracleSettings
    trajectory: TrajectorySettings


@section("evaluation.generation")
class GenerationSettings(Section):
    backend: str
    max_new_tokens: int
    temperature: float
    top_p: float
    batch_size: int
    cpu_threads: int | None
    vllm: Mapping[str, Any]


@section("evaluation.opponents.*")
class OpponentSettings(Section):
    source: str
    author_type: str | None
    model: str | None
    pools: tuple[str, ...]


@section("evaluation.head_to_head[]")
class HeadToHeadSettings(Section):
    arm: str
    opponent_arm: str
    pools: tuple[str, ...]


@section("evaluation.calibration")
class JudgeCalibrationSettings(Section):
    candidates: tuple[str, ...]
    delta: float
    margin_edges: tuple[float, ...]
    min_agreement: float
    agreement_counted: str
    accept_weak_judge: bool
    judge_train_fraction: float


@section("evaluation.reward_path")
class RewardPathSettings(Section):
    enabled: bool
    opponents: tuple[str, ...] | None


@section("evaluation.ood")
class OodSettings(Section):
    ngram: int
    allow_short: bool


@section("evaluation.demo_judge")
class DemoJudgeSettings(Section):
    enabled: bool
    spec: str
    min_margin: float
    both_orders: bool
    num_train_epochs: float
    learning_rate: float
    per_device_train_batch_size: int
    max_length: int
    save_steps: int
    cpu_threads: int | None


@section("evaluation")
class EvaluationSettings(Section):
    """The ``evaluation`` section: answers, judges, calibration, opponents, the truth."""

    cpu_threads: int | None
    runs: tuple[int, ...]
    arms: tuple[str, ...] | None
    answers_per_scenario: AnswersPerScenarioSettings
    best_of_n: tuple[str, ...]
    confirmation_pool: ConfirmationPoolSettings
    truth: TruthSettings
    generation: GenerationSettings
    opponents: Mapping[str, OpponentSettings]
    head_to_head: tuple[HeadToHeadSettings, ...]
    judges: tuple[str, ...]
    judges_dir: str
    headline_judge: str
    headline_opponent: str
    calibration: JudgeCalibrationSettings
    reward_path: RewardPathSettings
    ood: OodSettings
    demo_judge: DemoJudgeSettings


# --- confirm, summary, calibration -----------------------------------------------------------------------


@section("confirm")
class ConfirmSettings(Section):
    """The ``confirm`` section: the selection's opponent and the confirmation's bar."""

    opponent: str
    bar: float


@section("summary")
class SummarySettings(Section):
    """The ``summary`` section: the tables' intervals and the claims' bar."""

    bar: float
    headline_arm: str
    confidence: float
    n_boot: int


@section("calibration")
class CalibrationSettings(Section):
    """The ``calibration`` section: many worlds of the demo."""

    worlds: int
    cores_per_world: int
    profile: str | None
    world_config: Mapping[str, Any]


# --- a command's whole --params --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings:
    """A command's ``--params`` typed: the config seed and preset, and every section.

    A section the rule does not pass has the schema's defaults (as a section
    the config leaves out); ``data``, which the schema requires, is ``None``
    then. Build it once, in the command's ``cli_main``, with :meth:`from_params`.
    """

    #: the config's preset and seed (``None``: the params carry none, as a command run by hand may)
    preset: str | None
    seed: int | None
    data: DataSettings | None
    normalize: NormalizeSettings
    split: SplitSettings
    leakage: LeakageSettings
    base_models: BaseModelsSettings
    reward: RewardSettings
    grm: GrmSettings
    policy: PolicySettings
    evaluation: EvaluationSettings
    confirm: ConfirmSettings
    summary: SummarySettings
    calibration: CalibrationSettings
    training: TrainingSettings

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> "Settings":
        """The settings of a command's parsed ``--params``, each section validated and its defaults filled."""
        hints = typing.get_type_hints(cls)
        out: dict[str, Any] = {"preset": params.get("preset"), "seed": params.get("seed")}
        for f in dataclasses.fields(cls):
            if f.name in out:
                continue
            kind = next(a for a in (*typing.get_args(hints[f.name]), hints[f.name]) if isinstance(a, type)
                        and issubclass(a, Section))
            values = params.get(f.name)
            out[f.name] = None if values is None and f.name == "data" else kind.from_config(values)
        return cls(**out)
