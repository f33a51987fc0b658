"""Base models of every role, prepared (demo) or verified (paper) before any training.

Roles: ``reward`` (regression reward model), ``grm`` (generative pairwise
judge to be trained), ``policy`` (GRPO policy) and ``judge`` (evaluation
judge). Config ``models.<role>_base`` names each as a hub id or a local
path, which every later stage passes to ``from_pretrained``.

* ``base_models.source: tiny`` (demo): train one byte-level BPE tokenizer on the
  corpus (train+val human reappraisals, train-pool scenarios, the fixed prompt
  texts) and save a random-init tiny Qwen3 causal LM per role (distinct
  seeds) with it into the role's directory, via ``save_pretrained``.
* ``base_models.source: pretrained`` (paper): check that each role resolves —
  a local path must exist; a hub id must be reachable or cached — and that
  its ``config.json`` has the expected ``model_type``; record the result in
  the role's directory (``SOURCE.json``) and fail before any GPU job starts.

Both write ``MANIFEST.json`` (per role: location, hub id or path,
architecture, parameter count), which every model stage takes as input.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
from pathlib import Path
from typing import Mapping, Sequence

from reappraisal.atomic import atomic_dir, write_json
from reappraisal.settings import BaseModelsSettings, Settings, as_config
from reappraisal.errors import ConfigError, DataValidationError, PipelineInputError
from reappraisal.file_hashes import sha256_file
from reappraisal.input_tables import read_table
from reappraisal.params import parse_params

from .manifest import check_model_location, looks_like_hub_id
from .prompts import template_texts
from .tiny import CHAT_TEMPLATE, TinyArchitecture, build_causal_lm, train_tokenizer

log = logging.getLogger("reappraisal.base_models.prepare_io")

ROLES = ("reward", "grm", "policy", "judge")


def tokenizer_corpus(targets, vignettes) -> list[str]:
    """Texts the demo tokenizer is trained on: train+val human reappraisals, train-pool scenarios, templates.

    Held-out answers (GPT-4, opponents) and out-of-distribution scenarios are
    left out, so nothing of the evaluation shapes the vocabulary.
    """
    for col in ("text", "split", "author_type"):
        if col not in targets.columns:
            raise DataValidationError(f"missing column {col!r}", where="targets.parquet")
    for col in ("text", "pool"):
        if col not in vignettes.columns:
            raise DataValidationError(f"missing column {col!r}", where="vignettes.parquet")
    human = targets[targets["split"].isin(["train", "val"]) & (targets["author_type"] == "human")]
    texts = human["text"].astype(str).tolist()
    texts += vignettes.loc[vignettes["pool"] == "train", "text"].astype(str).tolist()
    if not texts:
        raise PipelineInputError("no train/val human reappraisals or train-pool scenarios to build a tokenizer from", where="targets.parquet")
    return texts + list(template_texts())


def _tokenizer_info(tokenizer) -> dict:
    return {
        "class": type(tokenizer).__name__,
        "vocab_size": len(tokenizer),
        "pad_token": tokenizer.pad_token,
        "eos_token": tokenizer.eos_token,
        "has_chat_template": bool(getattr(tokenizer, "chat_template", None)),
    }


def _count_parameters(config) -> int:
    """Parameter count of a causal LM built from ``config`` on the meta device (no weights loaded)."""
    import torch
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    return int(sum(p.numel() for p in model.parameters()))


def build_tiny_roles(
    role_dirs: Mapping[str, str | Path],
    texts: Sequence[str],
    *,
    arch: TinyArchitecture | Mapping[str, TinyArchitecture],
    vocab_size: int,
    seeds: Mapping[str, int],
) -> dict[str, dict]:
    """Train one tokenizer on ``texts`` and save a tiny Qwen3 causal LM per role; return manifest entries.

    ``arch`` is one architecture for every role or a mapping role -> architecture.
    """
    tokenizer = train_tokenizer(texts, vocab_size=vocab_size)
    if tokenizer.chat_template != CHAT_TEMPLATE:  # pragma: no cover - guard against a changed builder
        raise RuntimeError("tiny tokenizer lost its chat template")
    entries = {}
    for role, out in role_dirs.items():
        seed = int(seeds[role])
        role_arch = arch[role] if isinstance(arch, Mapping) else arch
        model = build_causal_lm(tokenizer, role_arch, seed=seed)
        with atomic_dir(out) as tmp:
            tmp.chmod(0o755)  # mkdtemp makes it 0700
            model.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
            config_sha = sha256_file(tmp / "config.json")
        entries[role] = {
            "location": str(out),
            "hub_id": None,
            "local_path": str(out),
            "source": "tiny",
            "model_type": model.config.model_type,
            "architectures": [type(model).__name__],
            "n_parameters": int(sum(p.numel() for p in model.parameters())),
            "seed": seed,
            "config_sha256": config_sha,
            "tokenizer": _tokenizer_info(tokenizer),
        }
        log.info("built tiny %s model (%d parameters, seed %d) in %s", role, entries[role]["n_parameters"], seed, out)
    return entries


def verify_pretrained(role: str, location: str, expected_model_type: str | None) -> dict:
    """Check that ``location`` resolves to a model of ``expected_model_type``; return its manifest entry.

    Only ``config.json`` and the tokenizer files are read (from the local
    path, the hub, or the hub cache when ``HF_HUB_OFFLINE=1``); no weights.
    """
    from transformers import AutoConfig, AutoTokenizer

    where = f"config key 'base_models.{role}_base'"
    location = check_model_location(location, where=where)
    try:
        config = AutoConfig.from_pretrained(location)
    except (OSError, ValueError) as exc:
        hint = " (offline: it must be in the local Hugging Face cache)" if looks_like_hub_id(location) else ""
        raise PipelineInputError(
            f"cannot read the model config of {location}{hint}: {exc.__class__.__name__}: {str(exc).splitlines()[0]}",
            where=where,
        ) from None
    if expected_model_type and config.model_type != expected_model_type:
        raise PipelineInputError(
            f"{location} is a {config.model_type!r} model ({config.architectures}), expected {expected_model_type!r}",
            where=where,
        )
    try:
        tokenizer = AutoTokenizer.from_pretrained(location)
    except (OSError, ValueError) as exc:
        raise PipelineInputError(f"cannot load the tokenizer of {location}: {exc.__class__.__name__}", where=where) from None
    is_hub = looks_like_hub_id(location)
    return {
        "location": location,
        "hub_id": location if is_hub else None,
        "local_path": None if is_hub else str(Path(location).resolve()),
        "source": "pretrained",
        "model_type": config.model_type,
        "architectures": list(config.architectures or []),
        "n_parameters": _count_parameters(config),
        "seed": None,
        "config": {k: getattr(config, k, None) for k in ("hidden_size", "num_hidden_layers", "vocab_size", "max_position_embeddings")},
        "tokenizer": _tokenizer_info(tokenizer),
    }


def prepare_base_models(
    base_models: BaseModelsSettings,
    role_dirs: Mapping[str, str | Path],
    *,
    targets=None,
    vignettes=None,
    global_seed: int = 0,
) -> dict:
    """Build (``source: tiny``) or verify (``source: pretrained``) every role; return the manifest."""
    source = base_models.source
    if source == "tiny":
        for role, out in role_dirs.items():
            configured = Path(str(getattr(base_models, f"{role}_base")))
            if configured.resolve() != Path(out).resolve():
                raise ConfigError(
                    f"with base_models.source 'tiny' it must be the directory this stage writes ({out}), "
                    f"got {configured}",
                    where=f"config key 'base_models.{role}_base'",
                )
        if targets is None or vignettes is None:
            raise PipelineInputError("the tiny models need targets and vignettes to train a tokenizer", where="prepare_base_models")
        tiny = base_models.tiny
        # a role the config's seeds leave out is offset by its place among the roles
        offsets = {r: getattr(tiny.seeds, r) for r in ROLES}
        seeds = {r: int(global_seed) + int(i + 1 if offsets[r] is None else offsets[r]) for i, r in enumerate(ROLES)}
        if len(set(seeds.values())) != len(seeds):
            raise ConfigError(f"roles must have distinct seeds, got {seeds}", where="config key 'base_models.tiny.seeds'")
        shared = {k: getattr(tiny, k) for k in TinyArchitecture.__dataclass_fields__}
        overrides = {r: as_config(getattr(tiny.role_overrides, r)) or {} for r in role_dirs}
        arch = {r: TinyArchitecture(**{**shared, **overrides[r]}) for r in role_dirs}
        texts = tokenizer_corpus(targets, vignettes)
        roles = build_tiny_roles(role_dirs, texts, arch=arch, vocab_size=int(tiny.vocab_size), seeds=seeds)
        corpus = {"n_texts": len(texts), "sha256": hashlib.sha256("\n\x00".join(texts).encode()).hexdigest()}
    elif source == "pretrained":
        expected = base_models.expected_model_type
        roles = {}
        for role, out in role_dirs.items():
            entry = verify_pretrained(role, str(getattr(base_models, f"{role}_base")), getattr(expected, role))
            with atomic_dir(out) as tmp:
                tmp.chmod(0o755)
                write_json(entry, tmp / "SOURCE.json")
            entry["record"] = str(Path(out) / "SOURCE.json")
            roles[role] = entry
            log.info("verified %s base %s (%s, %d parameters)", role, entry["location"], entry["model_type"], entry["n_parameters"])
        corpus = None
    else:
        raise ConfigError(f"unknown source {source!r} (tiny or pretrained)", where="config key 'base_models.source'")
    return {"source": source, "roles": roles, "tokenizer_corpus": corpus}


def cli_main(argv: Sequence[str] | None = None) -> int:
    """``reappraisal prepare-base-models``: build or verify the base model of every role."""
    p = argparse.ArgumentParser(prog="reappraisal prepare-base-models", description=cli_main.__doc__)
    p.add_argument("--out-root", required=True, help="folder holding one directory per role")
    p.add_argument("--manifest", required=True)
    p.add_argument("--targets", default=None, help="data/processed/targets.parquet (tiny source)")
    p.add_argument("--vignettes", default=None, help="data/interim/vignettes.parquet (tiny source)")
    p.add_argument("--params", default=None)
    a = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    params = parse_params(a.params)
    if not params.get("base_models"):
        raise ConfigError("the 'base_models' section is missing", where="--params")
    settings = Settings.from_params(params)
    targets = vignettes = None
    if settings.base_models.source == "tiny":
        for name, path in (("--targets", a.targets), ("--vignettes", a.vignettes)):
            if not path:
                raise PipelineInputError("the tiny source needs this input table", where=name)
        targets, vignettes = read_table(a.targets), read_table(a.vignettes)
    role_dirs = {r: Path(a.out_root) / r for r in ROLES}
    manifest = prepare_base_models(settings.base_models, role_dirs, targets=targets, vignettes=vignettes,
                                   global_seed=int(settings.seed))
    manifest["preset"] = settings.preset
    write_json(manifest, a.manifest)
    for role, e in manifest["roles"].items():
        print(f"{role}: {e['location']} ({e['model_type']}, {e['n_parameters']:,} parameters)")
    return 0
