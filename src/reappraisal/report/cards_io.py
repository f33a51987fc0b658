"""Model cards (README.md) for every trained artifact, regenerated from artifacts and the claims ledger.

One card each for the reward-model ensemble (``results/reward/README.md``),
the GRM and each policy arm (``results/policy/{arm}/README.md``), in the
shape of a published Hugging Face card: YAML front matter, what the model is,
how it was trained, evaluation tables, the claims about it with their
verdicts (retracted ones struck through with the reason), limitations and
provenance (every file read, with its sha256). Every number is read from an
artifact; the card computes nothing.

The GRM's card cannot sit inside ``results/grm/model/``: that folder is the
training rule's directory output, and neither Snakemake nor DVC lets another
stage write inside it. It is written beside it, to ``results/grm/``.
"""

from __future__ import annotations

import argparse
import math
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from ..settings import Settings, as_config
from ..errors import PipelineInputError
from ..file_hashes import sha256_file
from ..markdown_templates import markdown_environment, write_markdown
from ..params import parse_params
from ..summary.overoptimization import GOLD_DROP_SES, WINDOW as GOLD_WINDOW, gold_trajectory
from ..summary.trajectory import DROP_SES as TRUTH_DROP_SES
from .formatting import DEMO_BANNER, fmt, fmt_interval, git_commit
from .inputs import Artifact, parse_manifest, read_claims, read_csv, read_json, read_tables_index
from .model_index import ensemble_index, front_matter, grm_index, policy_index


def md_cell(value: Any) -> str:
    """A value as one Markdown table cell (pipes escaped, newlines folded)."""
    text = value if isinstance(value, str) else fmt(value)
    return text.replace("|", "\\|").replace("\n", " ")


def _environment():
    """The shared Markdown environment (:mod:`reappraisal.markdown_templates`) on this package's templates."""
    return markdown_environment(
        "reappraisal.report",
        filters={"fmt": fmt, "cell": md_cell, "sentence": lambda t: (str(t)[:1].upper() + str(t)[1:]) if t else ""},
        globals={"interval": fmt_interval},
    )


def claims_about(claims: Sequence[Mapping[str, Any]], *, names: Sequence[str] = (), paths: Sequence[str] = ()) -> list[dict]:
    """Claims that name one of ``names`` as a word (id, text or rule) or were computed from a file under ``paths``."""
    pattern = re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(map(re.escape, names)) + r")(?![A-Za-z0-9_])") if names else None
    out = []
    for c in claims:
        text = " ".join(str(c.get(k, "")) for k in ("id", "text", "rule"))
        by_name = bool(pattern and pattern.search(text))
        by_path = any(str(entry.get("path", "")).startswith(tuple(paths)) for entry in c.get("lineage") or []) if paths else False
        if by_name or by_path:
            out.append(dict(c))
    return out


def _rows(df: pd.DataFrame | None, **match: Any) -> list[dict[str, Any]]:
    if df is None:
        return []
    sel = df
    for k, v in match.items():
        if k in sel.columns:
            sel = sel[sel[k].astype(str) == str(v)]
    return sel.to_dict("records")


class CardInputs:
    """Everything the cards read, loaded once from the manifest."""

    def __init__(self, artifacts: list[Artifact], settings: Settings):
        self.settings = settings
        self.artifacts = artifacts
        kinds: dict[str, list[Artifact]] = {}
        for a in artifacts:
            kinds.setdefault(a.kind, []).append(a)
        self.kinds = kinds
        self.tables = {}
        for a in kinds.get("tables_index", []):
            self.tables.update({t.name: t for t in read_tables_index(a.path)})
        self.claims = [c for a in kinds.get("claims", []) for c in read_claims(a.path)]
        self.health = {a.arm or a.name: read_json(a.path) for a in kinds.get("policy_health", [])}
        self.logs = {a.arm or a.name: read_csv(a.path) for a in kinds.get("training_log", [])}
        self.metrics = {a.name: read_json(a.path) for a in artifacts if a.kind in {"reward_models", "grm", "judge_calibration"}}

    def frame(self, name: str) -> pd.DataFrame | None:
        t = self.tables.get(name)
        return None if t is None else t.frame

    def provenance(self, kinds: Sequence[str] = (), extra: Sequence[Path] = (), arm: str | None = None) -> list[dict[str, Any]]:
        files = [a.path for a in self.artifacts
                 if a.kind in kinds and a.path.is_file() and (arm is None or a.arm in (None, arm))]
        files += [p for p in extra if p.is_file()]
        files += [t.csv for t in self.tables.values()] if "tables_index" in kinds else []
        seen, out = set(), []
        for p in files:
            if str(p) not in seen:
                seen.add(str(p))
                out.append({"path": str(p), "sha256": sha256_file(p)})
        return out


def _level(inp: CardInputs) -> float:
    """The summary's interval level (its intervals' confidence), the schema's default unless configured."""
    return float(inp.settings.summary.confidence)


def _common(inp: CardInputs) -> dict[str, Any]:
    head, dirty = git_commit()
    preset = inp.settings.preset
    return {"preset": preset, "banner": DEMO_BANNER if preset == "demo" else None,
            "commit": head, "dirty": dirty, "has_summary": bool(inp.tables), "has_claims": bool(inp.claims)}


def ensemble_card(inp: CardInputs, seed_dirs: Sequence[Path]) -> str:
    rm = inp.metrics.get("reward_models")
    if rm is None:
        raise PipelineInputError("the ensemble card needs the reward-model metrics (input named reward_models)", where="--inputs")
    seeds = []
    for d in seed_dirs:
        m = read_json(Path(d) / "metrics.json")
        pw = (m.get("validation") or {}).get("pairwise") or {}
        seeds.append({"name": Path(d).name, "dir": str(d), "seed": m.get("seed"), "effective_seed": m.get("effective_seed"),
                      "pairwise": pw, "train_loss": m.get("train_loss"), "steps": m.get("global_steps"),
                      "n_train": m.get("n_train"), "n_val": m.get("n_val"), "base": m.get("base"), "config": m.get("config") or {}})
    base = seeds[0]["base"] if seeds else None
    meta = {"library_name": "transformers", "pipeline_tag": "text-classification", "base_model": base,
            "tags": ["reward-model", "regression", "ensemble", "reappraisal"],
            "model-index": ensemble_index("reappraisal-reward-ensemble", rm, _level(inp))}
    ctx = _common(inp) | {
        "front_matter": front_matter(meta),
        "rm": rm, "ens": rm.get("ensemble") or {}, "per_seed": rm.get("per_seed") or {}, "seeds": seeds,
        "base": base, "tables": [t for n, t in inp.tables.items() if n == "reward_models"],
        "claims": claims_about(inp.claims, names=("reward_model", "reward model", "ensemble", "RMv2", "rm"),
                               paths=("results/reward/",)),
        "provenance": inp.provenance(("reward_models",), [Path(d) / "metrics.json" for d in seed_dirs]),
    }
    return _environment().get_template("card_ensemble.md.j2").render(**ctx)


def grm_card(inp: CardInputs, grm_dir: Path) -> str:
    grm = inp.metrics.get("grm")
    if grm is None:
        raise PipelineInputError("the GRM card needs the GRM metrics (input named grm)", where="--inputs")
    models = grm.get("models") or {}
    base = inp.settings.base_models.grm_base
    meta = {"library_name": "transformers", "pipeline_tag": "text-generation", "base_model": base,
            "tags": ["reward-model", "generative-judge", "pairwise", "reappraisal"],
            "model-index": grm_index("reappraisal-grm", grm, _level(inp))}
    ctx = _common(inp) | {
        "front_matter": front_matter(meta), "grm": grm, "models": models, "headline_model": grm.get("headline_model"), "grm_dir": str(grm_dir),
        "base": base,
        "tables": [t for n, t in inp.tables.items() if n == "grm"],
        "claims": claims_about(inp.claims, names=("grm", "GRM"), paths=("results/grm/",)),
        "provenance": inp.provenance(("grm",)),
    }
    return _environment().get_template("card_grm.md.j2").render(**ctx)


def gold_health(log: pd.DataFrame | None, fit: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
    """Gold along training for the card. From the truths when the arm has a ``trajectory_fit`` row (the demo's
    fresh draws at kept checkpoints, :mod:`reappraisal.summary.trajectory`): the best checkpoint's and the last
    one's mean gold, the drop and its standard error, and whether it fell by more than
    :data:`TRUTH_DROP_SES` of them. Otherwise from the log's gold column (the demo's; None without one): its
    running means over :data:`GOLD_WINDOW` steps at the peak and at the end
    (:class:`~reappraisal.summary.overoptimization.GoldTrajectory`)."""
    if fit is not None and _finite(fit.get("gold_drop")) and _finite(fit.get("gold_drop_se")):
        drop, se = float(fit["gold_drop"]), float(fit["gold_drop_se"])
        return {"source": "truths", "peak_step": int(fit["best_step"]), "drop": drop, "drop_se": se,
                "best_truth": fit.get("best_truth"), "last_truth": fit.get("last_truth"), "ses": TRUTH_DROP_SES,
                "fell": bool(se > 0 and drop > TRUTH_DROP_SES * se)}
    try:
        g = gold_trajectory(log, GOLD_WINDOW) if log is not None else None
    except ValueError:
        return None
    return g and {"source": "log", "peak": g.peak, "peak_step": g.peak_step, "last": g.last, "drop": g.drop,
                  "drop_se": g.drop_se, "window": g.window, "ses": GOLD_DROP_SES, "fell": g.fell}


def _finite(x: Any) -> bool:
    try:
        return x is not None and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def trajectory_fit_row(frame: pd.DataFrame | None, arm: str) -> dict[str, Any] | None:
    """The arm's row of the ``trajectory_fit`` table (None without one)."""
    rows = _rows(frame, arm=arm) if frame is not None and "arm" in frame.columns else []
    return rows[0] if rows else None


def training_verdict(health: Mapping[str, Any], gold: Mapping[str, Any] | None) -> str:
    """The card's training-health verdict: the health record's, except that a run whose gold fell from its peak
    beyond noise is never called healthy, whatever its checks say."""
    verdict = str(health.get("verdict"))
    if not (gold and gold["fell"]):
        return verdict
    return "gold fell from its peak" if verdict == "healthy" else f"{verdict}; gold fell from its peak"


def policy_card(inp: CardInputs, arm: str) -> str:
    policy = inp.settings.policy
    arms = {name: as_config(spec) for name, spec in policy.arms.items()}
    if arm not in inp.health:
        raise PipelineInputError(f"no training health for arm {arm!r} among the inputs", where="--inputs")
    log = inp.logs.get(arm)
    first = log.iloc[0].to_dict() if log is not None and not log.empty else {}
    last = log.iloc[-1].to_dict() if log is not None and not log.empty else {}
    gold = gold_health(log, trajectory_fit_row(inp.frame("trajectory_fit"), arm))
    headline = _rows(inp.frame("headline"), arm=arm)
    base = inp.settings.base_models.policy_base
    meta = {"library_name": "transformers", "pipeline_tag": "text-generation", "base_model": base,
            "tags": ["grpo", "rlhf", "reappraisal", arm],
            "model-index": policy_index(f"reappraisal-policy-{arm}", headline, _rows(inp.frame("ood"), arm=arm),
                                        _level(inp))}
    others = [{"name": t.name, "title": t.title, "caption": t.caption, "rows": _rows(t.frame, arm=arm)}
              for n, t in inp.tables.items()
              if n not in {"headline", "per_scenario"} and "arm" in t.frame.columns and _rows(t.frame, arm=arm)]
    ctx = _common(inp) | {
        "front_matter": front_matter(meta),
        # the weights it was trained with (its health record), else the config's (an arm of one seed is its instance)
        "arm": arm, "weights": inp.health[arm].get("weights") or arms.get(arm) or {},
        "policy": as_config(policy),
        "health": inp.health[arm], "gold": gold, "verdict": training_verdict(inp.health[arm], gold),
        "base": base, "first": first, "last": last,
        "n_logged": 0 if log is None else len(log), "headline": headline, "headline_caption": (inp.tables.get("headline").caption
                                                                                              if "headline" in inp.tables else None),
        "per_scenario": _rows(inp.frame("per_scenario"), arm=arm), "others": others,
        "claims": claims_about(inp.claims, names=(arm,), paths=(f"results/policy/{arm}/",)),
        "warm_start": bool(policy.warm_start.enabled),
        "provenance": inp.provenance(("policy_health", "training_log", "tables_index", "claims"), arm=arm),
    }
    return _environment().get_template("card_policy.md.j2").render(**ctx)


def cli_main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(prog="reappraisal write-model-cards", description=__doc__.splitlines()[0])
    ap.add_argument("--inputs", required=True, help="the report's manifest (JSON): name -> path or {path, kind, arm}")
    ap.add_argument("--params", required=True)
    ap.add_argument("--rm-dirs", nargs="+", required=True, help="the ensemble's seed folders")
    ap.add_argument("--ensemble-out", required=True)
    ap.add_argument("--grm-dir", required=True)
    ap.add_argument("--grm-out", required=True)
    ap.add_argument("--policy-out", nargs="*", default=[], metavar="ARM=PATH")
    args = ap.parse_args(argv)
    settings = Settings.from_params(parse_params(args.params))
    inp = CardInputs(parse_manifest(parse_params(args.inputs)), settings)
    outputs: dict[Path, str] = {Path(args.ensemble_out): ensemble_card(inp, [Path(d) for d in args.rm_dirs]),
                                Path(args.grm_out): grm_card(inp, Path(args.grm_dir))}
    for spec in args.policy_out:
        arm, sep, path = spec.partition("=")
        if not sep:
            raise PipelineInputError(f"expected ARM=PATH, got {spec!r}", where="--policy-out")
        outputs[Path(path)] = policy_card(inp, arm)
    # All rendered before any is written: a bad input leaves no card behind.
    for path, text in outputs.items():
        write_markdown(path, text)
    print(f"model cards: {', '.join(map(str, outputs))}")
    return 0
