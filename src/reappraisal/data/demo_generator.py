"""Deterministic generator of the SYNTHETIC demo dataset shipped in ``data/demo/``.

Nothing here comes from the study of Li, Herderich, Nair & Goldenberg (2025).
The files imitate the *shape* of a plausible OSF export (several studies, each
with its own column names) and carry planted structure that the pipeline is
expected to recover:

* a latent reappraisal quality driven by textual features (second person,
  scenario-specific detail, an alternative interpretation, brevity) plus noise;
* three rater profiles that weigh those features differently (each rater has
  one; the latent quality is their share-weighted mean);
* four rating dimensions loading on that quality (effectiveness most strongly);
* a per-rater severity offset shared across the four dimensions;
* per-study scale differences (multiplier and offset around the scale centre);
* two raters who give a constant novelty rating (zero variance).

``python -m reappraisal.data.demo_generator --out data/demo`` rebuilds the
committed files bit-for-bit: all randomness comes from one
``numpy.random.Generator`` seeded explicitly, iteration is over lists/tuples
only (never over sets or hash-ordered data), floats are written with a fixed
format, and files are UTF-8 with ``\\n`` line endings.

The texts (scenarios, phrase banks, opponent templates) are data files beside
this module (``demo_texts/*.yaml``); sentences are counted with the format
gate's splitter (:mod:`reappraisal.sentences`).
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import re
from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path
from typing import Sequence

import numpy as np
import yaml

from reappraisal.atomic import atomic_path
from reappraisal.data.demo_quality import WEIGHTS as QUALITY_WEIGHTS
from reappraisal.data.demo_quality import PROFILE_SHARES, PROFILE_WEIGHTS, PROFILES, profile_raws
from reappraisal.data.demo_quality import FUNCTION_WORDS, FluencyModel, QualityReading, Scenario, read_quality
from reappraisal.markdown_templates import markdown_environment

DEFAULT_SEED = 20250101
#: The draw whose human reappraisals fix the quality scale of every world (the shipped demo's).
SCALE_SEED = DEFAULT_SEED
DATA_ORIGIN = "SYNTHETIC demo data - not from the study"

DIMENSIONS = ("effectiveness", "empathy", "novelty", "specificity")
# Loading of each dimension's latent score on the standardized quality; the
# remainder (sqrt(1 - a^2)) is reappraisal-specific, dimension-specific noise.
DIMENSION_LOADINGS = {"effectiveness": 0.90, "empathy": 0.70, "novelty": 0.45, "specificity": 0.60}

SCALE_MIN, SCALE_MAX, SCALE_CENTER = 1, 7, 4.0
RATER_SEVERITY_SD = 0.8
RATING_NOISE_SD = 0.7


@dataclass(frozen=True)
class StudySpec:
    name: str  # e.g. "study1" (file prefix)
    label: str  # study label used in truth/ and in the ingest mapping of config.yaml, e.g. "1"
    prefix: str  # id prefix, e.g. "s1"
    n_per_vignette: int  # human reappraisals per training vignette
    multiplier: float  # scale multiplier applied to the latent dimension score
    offset: float  # shift of the study's ratings around the scale centre
    reappraisal_file: str
    reappraisal_columns: tuple[str, str, str]  # (id, vignette, text)
    rating_file: str
    rating_columns: tuple[str, str, str, str, str, str]  # (rater, id, eff, emp, nov, spec)


STUDIES = (
    StudySpec(
        "study1", "1", "s1", 34, 1.00, 0.00,
        "study1_reappraisals.csv", ("reappraisal_id", "vignette_id", "response"),
        "study1_ratings.csv",
        ("rater", "reappraisal_id", "effectiveness", "empathy", "novelty", "specificity"),
    ),
    StudySpec(
        "study3", "3", "s3", 32, 0.70, 0.50,
        "study3_reappraisals.csv", ("rid", "scenario", "reappraisal_text"),
        "study3_ratings.csv",
        ("participant", "rid", "eff", "emp", "nov", "spec"),
    ),
    StudySpec(
        "study4", "4", "s4", 34, 1.15, -0.30,
        "study4_reappraisals.csv", ("reappraisal_id", "vignette_id", "response"),
        "study4_ratings.csv",
        ("rater", "reappraisal_id", "effectiveness", "empathy", "novelty", "specificity"),
    ),
)

# Raters who give the same novelty rating to everything they rate (zero
# variance on that dimension), to exercise the pipeline's zero-variance path.
CONSTANT_RATERS = (
    ("3", "s3_p004", "novelty", 4),
    ("4", "s4_p009", "novelty", 5),
)

RATINGS_PER_ITEM = (8, 12)  # inclusive range of ratings per reappraisal
ITEMS_PER_RATER = (20, 40)  # inclusive range of reappraisals per rater
TARGET_ITEMS_PER_RATER = 30

OPPONENT_MODELS = ("deepseek-r1", "qwen2.5-72b")
GPT4_MODEL = "gpt-4-0314"

#: The rater profiles' shares, in :data:`PROFILES` order.
SHARES = np.array([PROFILE_SHARES[p] for p in PROFILES])
# Latent quality (before standardization) = the world's reading of the text (demo_quality) + noise.
QUALITY_NOISE_SD = 0.5
#: The reading's components written to truth/reappraisal_features.csv.
READING_COLUMNS = tuple(f.name for f in fields(QualityReading))


# --------------------------------------------------------------------------
# Scenario content (all written for this demo)
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Vignette:
    vignette_id: str
    emotion: str
    text: str
    pool: str
    keywords: tuple[str, ...] = ()
    # human phrase banks (training scenarios only)
    name: str = ""
    specific_alts: tuple[str, ...] = ()
    specific_coping: tuple[str, ...] = ()
    gpt4: tuple[str, ...] = ()
    # opponent answer material (every scenario)
    opp_ref: str = ""
    opp_detail: str = ""
    opp_alts: tuple[str, str] = ("", "")


#: The scenario texts and phrase banks, as data files beside this module.
TEXTS_DIR = Path(__file__).with_name("demo_texts")


def _tuples(x):
    """YAML lists as tuples (the texts are constants)."""
    if isinstance(x, list):
        return tuple(_tuples(i) for i in x)
    if isinstance(x, dict):
        return {k: _tuples(v) for k, v in x.items()}
    return x


def _load_texts(name: str) -> dict:
    return _tuples(yaml.safe_load((TEXTS_DIR / name).read_text(encoding="utf-8")))


_SCENARIOS = _load_texts("scenarios.yaml")
TRAIN_VIGNETTES = tuple(Vignette(**v) for v in _SCENARIOS["train"])
OOD_VIGNETTES = tuple(Vignette(**v) for v in _SCENARIOS["ood"])

# Generic human phrase banks (shared across scenarios) and opponent answer
# templates: see demo_texts/phrases.yaml for the slots.
_PHRASES = _load_texts("phrases.yaml")
GENERIC_REFS = _PHRASES["generic_refs"]
GENERIC_ALTS = _PHRASES["generic_alts"]
ALT_TEMPLATES = _PHRASES["alt_templates"]
GENERIC_COPING = _PHRASES["generic_coping"]
FILLER = _PHRASES["filler"]
PERSONS = _PHRASES["persons"]
OPPONENT_TEMPLATES = _PHRASES["opponent_templates"]
GPT4_CLOSINGS = _PHRASES["gpt4_closings"]
SENTENCE_COUNT_CHOICES = (1, 2, 3, 4, 5)
SENTENCE_COUNT_PROBS = (0.30, 0.35, 0.17, 0.11, 0.07)
OPPONENT_SHORT = {"deepseek-r1": "r1", "qwen2.5-72b": "qwen"}

# --------------------------------------------------------------------------
# The world's quality of a text (the planted truth; see demo_quality)
# --------------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9]+")


def tokens(text: str) -> list[str]:
    """Lower-case word tokens (letters and digits), as used for n-gram checks."""
    return _WORD.findall(text.lower())


def _all_persons(template: str) -> list[str]:
    return [_cap(_fill(template, p)) for p in PERSONS]


def world_sentences() -> list[str]:
    """The world's phrase bank: every sentence the demo's texts can be made of (the fluency model's corpus)."""
    out: list[str] = []
    for template in ALT_TEMPLATES:
        for ref in GENERIC_REFS:
            for clause in GENERIC_ALTS:
                out += _all_persons(template.replace("{ref}", ref).replace("{clause}", clause))
    for bank in (GENERIC_COPING, FILLER):
        for template in bank:
            out += _all_persons(template)
    for v in TRAIN_VIGNETTES + OOD_VIGNETTES:
        out.append(v.text)
        for template in ALT_TEMPLATES:
            for clause in v.specific_alts:
                out += _all_persons(template.replace("{ref}", v.name).replace("{clause}", clause))
        for template in v.specific_coping:
            out += _all_persons(template)
        out += list(v.gpt4)
    out += list(GPT4_CLOSINGS) + [o["text"] for o in _opponent_answers()]
    return out


@lru_cache(maxsize=1)
def fluency_model() -> FluencyModel:
    """The world's word bigram model, fitted to :func:`world_sentences`."""
    return FluencyModel(world_sentences())


def scenario_of(v: Vignette) -> Scenario:
    """The world's view of one of its scenarios: its text, keywords and people (the name and the reference), and
    the names of the people of its other scenarios."""
    people = tuple(dict.fromkeys(w for w in tokens(f"{v.name} {v.opp_ref}") if w != "s"))
    keywords = v.keywords or tuple(w for w in tokens(v.text) if len(w) >= 4)
    return Scenario(text=v.text, keywords=tuple(keywords), people=people,
                    other_people=tuple(n for n in world_names() if n not in people))


_NAME = re.compile(r"\b[A-Z][a-z]+\b")


@lru_cache(maxsize=1)
def world_names() -> tuple[str, ...]:
    """Lower-case names of the people of every scenario (train and OOD): the capitalized words of each scenario's
    name and reference ("Jordan", "Professor Lind"; not "Your" of "your grandmother")."""
    found = (m.lower() for v in TRAIN_VIGNETTES + OOD_VIGNETTES for m in _NAME.findall(f"{v.name} {v.opp_ref}"))
    return tuple(dict.fromkeys(n for n in found if n not in FUNCTION_WORDS))


def raw_quality(text: str, v: Vignette) -> float:
    """The world's raw (unstandardized) quality of ``text`` as a reappraisal of scenario ``v``."""
    return read_quality(text, scenario_of(v), fluency_model()).raw


# --------------------------------------------------------------------------
# Generation
# --------------------------------------------------------------------------


def _fill(template: str, person: str) -> str:
    return template.format(**PERSONS[person])


def _cap(sentence: str) -> str:
    return sentence[0].upper() + sentence[1:]


def _compose_human(v: Vignette, rng: np.random.Generator) -> str:
    person = "you" if rng.random() < 0.55 else "I"
    alt = rng.random() < 0.60
    specific = rng.random() < 0.50
    n_sent = int(rng.choice(SENTENCE_COUNT_CHOICES, p=SENTENCE_COUNT_PROBS))
    core_n = min(n_sent, 2)
    core: list[str] = []
    if alt:
        template = ALT_TEMPLATES[int(rng.integers(len(ALT_TEMPLATES)))]
        if specific:
            ref = v.name
            clause = v.specific_alts[int(rng.integers(len(v.specific_alts)))]
        else:
            ref = GENERIC_REFS[int(rng.integers(len(GENERIC_REFS)))]
            clause = GENERIC_ALTS[int(rng.integers(len(GENERIC_ALTS)))]
        sentence = template.replace("{ref}", ref).replace("{clause}", clause)
        core.append(_cap(_fill(sentence, person)))
    while len(core) < core_n:
        use_specific = specific and (not alt or rng.random() < 0.5)
        bank = v.specific_coping if use_specific else GENERIC_COPING
        sentence = _cap(_fill(bank[int(rng.integers(len(bank)))], person))
        if sentence not in core:
            core.append(sentence)
    n_filler = n_sent - core_n
    filler_idx = rng.permutation(len(FILLER))[:n_filler]
    sentences = list(core)
    for i in filler_idx:
        pos = int(rng.integers(1, len(sentences) + 1))  # never before the first core sentence
        sentences.insert(pos, _cap(_fill(FILLER[int(i)], person)))
    return " ".join(sentences)


def _human_reappraisals(rng: np.random.Generator) -> dict[str, list[dict]]:
    """Per study: list of {id, vignette_id, text}. Unique texts within a scenario."""
    out: dict[str, list[dict]] = {s.name: [] for s in STUDIES}
    for v in TRAIN_VIGNETTES:
        seen: set[str] = set()  # membership only, never iterated
        for study in STUDIES:
            for _ in range(study.n_per_vignette):
                for _attempt in range(1000):
                    text = _compose_human(v, rng)
                    if text not in seen:
                        break
                else:  # pragma: no cover - banks are large enough
                    raise RuntimeError(f"could not compose a unique reappraisal for {v.vignette_id}")
                seen.add(text)
                out[study.name].append({"vignette_id": v.vignette_id, "text": text})
    # Shuffle within each study, then number in file order, so that neither the
    # row order nor the ids reveal the scenario.
    for study in STUDIES:
        rows = out[study.name]
        rows = [rows[int(i)] for i in rng.permutation(len(rows))]
        for k, row in enumerate(rows, start=1):
            row["id"] = f"{study.prefix}_r{k:04d}"
        out[study.name] = rows
    return out


def _opponent_answers() -> list[dict]:
    rows = []
    for v in TRAIN_VIGNETTES + OOD_VIGNETTES:
        for model in OPPONENT_MODELS:
            for j, template in enumerate(OPPONENT_TEMPLATES[model], start=1):
                text = template.format(ref=v.opp_ref, alt0=v.opp_alts[0], alt1=v.opp_alts[1], detail=v.opp_detail)
                rows.append({
                    "answer_id": f"opp_{OPPONENT_SHORT[model]}_{v.vignette_id}_{j}",
                    "vignette_id": v.vignette_id,
                    "model": model,
                    "text": _cap(text),
                })
    return rows


def _assign_raters(n_items: int, rng: np.random.Generator) -> list[list[int]]:
    """Return, per rater, the (ordered) item indices they rate.

    Each item gets RATINGS_PER_ITEM ratings (uniform in the inclusive range),
    each rater rates ITEMS_PER_RATER items, no rater rates an item twice.
    Greedy: items in decreasing demand go to the raters with the most
    remaining capacity (random tie-break), which always succeeds here.
    """
    lo_k, hi_k = RATINGS_PER_ITEM
    lo_l, hi_l = ITEMS_PER_RATER
    demand = rng.integers(lo_k, hi_k + 1, size=n_items)
    total = int(demand.sum())
    n_raters = max(1, int(round(total / TARGET_ITEMS_PER_RATER)))
    loads = np.full(n_raters, total // n_raters, dtype=np.int64)
    loads[: total % n_raters] += 1
    for _ in range(6 * n_raters):  # spread loads while keeping them in range
        a, b = (int(x) for x in rng.choice(n_raters, size=2, replace=False))
        d = int(rng.integers(1, 9))
        if loads[a] - d >= lo_l and loads[b] + d <= hi_l:
            loads[a] -= d
            loads[b] += d
    remaining = loads.copy()
    per_rater: list[list[int]] = [[] for _ in range(n_raters)]
    perm = rng.permutation(n_items)
    order = perm[np.argsort(-demand[perm], kind="stable")]
    for item in order:
        tie = rng.random(n_raters)
        chosen = np.lexsort((tie, -remaining))[: int(demand[item])]
        if np.any(remaining[chosen] <= 0):  # pragma: no cover
            raise RuntimeError("rater assignment failed")
        remaining[chosen] -= 1
        for r in chosen:
            per_rater[int(r)].append(int(item))
    assert int(remaining.sum()) == 0
    return [[lst[int(i)] for i in rng.permutation(len(lst))] for lst in per_rater]


def _gpt4_references() -> list[dict]:
    """GPT-4's answers: each scenario's texts, the last sentence extended by one of the GPT-4 closings (in turn),
    so an answer keeps two sentences."""
    rows, k = [], 0
    for v in TRAIN_VIGNETTES:
        for j, text in enumerate(v.gpt4, start=1):
            closing = GPT4_CLOSINGS[k % len(GPT4_CLOSINGS)]
            rows.append({"id": f"gpt4_{v.vignette_id}_{j}", "vignette_id": v.vignette_id,
                         "text": f"{text.rstrip('.')}, and {closing}"})
            k += 1
    return rows


def _latent_raw_quality(humans: dict[str, list[dict]], gpt4: list[dict], rng: np.random.Generator):
    """Every rated item's reading, its raw latent quality per rater profile (the profile's reading + the item's
    noise, shared by every profile) and the human (mean, SD) of each profile's."""
    by_id = {v.vignette_id: v for v in TRAIN_VIGNETTES}
    all_items = [dict(r, author_type="human", study=s.label) for s in STUDIES for r in humans[s.name]]
    all_items += [dict(g, author_type="gpt4", study="1") for g in gpt4]  # GPT-4 references are rated in study 1
    model = fluency_model()
    readings = [read_quality(it["text"], scenario_of(by_id[it["vignette_id"]]), model) for it in all_items]
    noise = rng.normal(0.0, QUALITY_NOISE_SD, size=len(all_items))
    raw = np.array([profile_raws(r) for r in readings]) + noise[:, None]
    is_human = np.array([it["author_type"] == "human" for it in all_items])
    return all_items, readings, raw, (raw[is_human].mean(axis=0), raw[is_human].std(axis=0))


def quality_standardization(seed: int = DEFAULT_SEED) -> tuple[np.ndarray, np.ndarray]:
    """Per rater profile (:data:`PROFILES`), the (mean, SD) of the human reappraisals' raw quality that
    :func:`build` standardizes the profile's quality by.

    Replays exactly the random draws :func:`build` makes up to that point, so
    ``(profile_raws(reading) - mean) / SD`` is a text's expected latent quality per profile, and its
    share-weighted mean the ``quality`` of ``truth/reappraisal_quality.csv``.
    """
    rng = np.random.default_rng(seed)
    return _latent_raw_quality(_human_reappraisals(rng), _gpt4_references(), rng)[3]


def _fmt(x: float) -> str:
    return f"{round(float(x), 4) + 0.0:.4f}"


def _csv_bytes(header: Sequence[str], rows: Sequence[Sequence[object]]) -> bytes:
    buf = io.StringIO(newline="")
    writer = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(header)
    for row in rows:
        writer.writerow(row)
    return buf.getvalue().encode("utf-8")


def _write(path: Path, data: bytes) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)
        os.chmod(tmp, 0o644)  # mkstemp creates 0600 files


def build(seed: int = DEFAULT_SEED) -> dict[str, bytes]:
    """Build every file of the demo dataset in memory: {relative path: bytes}."""
    rng = np.random.default_rng(seed)
    files: dict[str, bytes] = {}
    origin = DATA_ORIGIN

    # 1. vignettes
    files["vignettes.csv"] = _csv_bytes(
        ("vignette_id", "text", "emotion", "pool", "data_origin"),
        [(v.vignette_id, v.text, v.emotion, v.pool, origin) for v in TRAIN_VIGNETTES + OOD_VIGNETTES],
    )

    # 2. human reappraisals
    humans = _human_reappraisals(rng)
    for study in STUDIES:
        files[study.reappraisal_file] = _csv_bytes(
            study.reappraisal_columns + ("data_origin",),
            [(r["id"], r["vignette_id"], r["text"], origin) for r in humans[study.name]],
        )

    # 3. GPT-4 references
    gpt4 = _gpt4_references()
    files["gpt4_reappraisals.csv"] = _csv_bytes(
        ("reappraisal_id", "vignette_id", "text", "model", "data_origin"),
        [(g["id"], g["vignette_id"], g["text"], GPT4_MODEL, origin) for g in gpt4],
    )

    # 4. opponents
    files["opponents.csv"] = _csv_bytes(
        ("answer_id", "vignette_id", "model", "text", "data_origin"),
        [(o["answer_id"], o["vignette_id"], o["model"], o["text"], origin) for o in _opponent_answers()],
    )

    # Latent quality: features + noise, standardized by the human mean and SD of the reference draw (the world's
    # fixed scale: every world drawn with another seed reads quality on it, so one gold serves every world).
    all_items, readings, raw, (mu, sd) = _latent_raw_quality(humans, gpt4, rng)
    if seed != SCALE_SEED:
        mu, sd = quality_standardization(SCALE_SEED)
    by_profile = {it["id"]: (q - mu) / sd for it, q in zip(all_items, raw)}  # per profile, standardized
    quality = {i: round(float(q @ SHARES), 4) + 0.0 for i, q in by_profile.items()}

    # Reappraisal-level latent score per dimension, as each rater profile reads it (e: the reappraisal's own).
    dim_scores: dict[str, np.ndarray] = {}
    for it in all_items:
        e = rng.normal(0.0, 1.0, size=len(DIMENSIONS))
        a = np.array([DIMENSION_LOADINGS[d] for d in DIMENSIONS])
        dim_scores[it["id"]] = a[None, :] * by_profile[it["id"]][:, None] + np.sqrt(1.0 - a**2)[None, :] * e

    # 5. ratings
    severity_rows = []
    n_clipped = n_values = 0
    constant = {(s, r, d): val for s, r, d, val in CONSTANT_RATERS}
    for study in STUDIES:
        items = [r["id"] for r in humans[study.name]]
        if study.name == "study1":
            items += [g["id"] for g in gpt4]
        assignment = _assign_raters(len(items), rng)
        rows = []
        for k, rater_items in enumerate(assignment, start=1):
            rater_id = f"{study.prefix}_p{k:03d}"
            sev = round(float(rng.normal(0.0, RATER_SEVERITY_SD)), 4) + 0.0
            profile = int(rng.choice(len(PROFILES), p=SHARES))
            severity_rows.append((study.label, rater_id, _fmt(sev), PROFILES[profile], origin))
            for idx in rater_items:
                rid = items[idx]
                noise = rng.normal(0.0, RATING_NOISE_SD, size=len(DIMENSIONS))
                latent = SCALE_CENTER + study.multiplier * dim_scores[rid][profile] + study.offset + sev + noise
                rounded = np.floor(latent + 0.5)
                n_clipped += int(np.sum((rounded < SCALE_MIN) | (rounded > SCALE_MAX)))
                n_values += rounded.size
                values = np.clip(rounded, SCALE_MIN, SCALE_MAX).astype(int)
                out = []
                for d, val in zip(DIMENSIONS, values):
                    out.append(constant.get((study.label, rater_id, d), int(val)))
                rows.append((rater_id, rid, *out, origin))
        files[study.rating_file] = _csv_bytes(study.rating_columns + ("data_origin",), rows)
    for s, r, _d, _v in CONSTANT_RATERS:
        if not any(row[0] == s and row[1] == r for row in severity_rows):  # pragma: no cover
            raise RuntimeError(f"constant rater {r} does not exist in {s}")

    # 6. truth (not part of the export)
    files["truth/rater_severity.csv"] = _csv_bytes(("study", "rater_id", "severity", "profile", "data_origin"),
                                                   severity_rows)
    files["truth/reappraisal_quality.csv"] = _csv_bytes(
        ("reappraisal_id", "vignette_id", "quality", "data_origin"),
        [(it["id"], it["vignette_id"], _fmt(quality[it["id"]]), origin) for it in all_items],
    )
    files["truth/reappraisal_features.csv"] = _csv_bytes(
        ("reappraisal_id", "vignette_id", "author_type", "study", *READING_COLUMNS, "data_origin"),
        [(it["id"], it["vignette_id"], it["author_type"], it["study"],
          *(_fmt(v) if isinstance(v, float) else v for v in (getattr(r, c) for c in READING_COLUMNS)), origin)
         for it, r in zip(all_items, readings)],
    )
    files["truth/study_scale.csv"] = _csv_bytes(
        ("study", "center", "multiplier", "offset", "noise_sd", "data_origin"),
        [(s.label, _fmt(SCALE_CENTER), _fmt(s.multiplier), _fmt(s.offset), _fmt(RATING_NOISE_SD), origin)
         for s in STUDIES],
    )
    files["truth/dimension_loadings.csv"] = _csv_bytes(
        ("dimension", "loading", "data_origin"), [(d, _fmt(DIMENSION_LOADINGS[d]), origin) for d in DIMENSIONS]
    )
    files["truth/constant_raters.csv"] = _csv_bytes(
        ("study", "rater_id", "dimension", "value", "data_origin"),
        [(s, r, d, v, origin) for s, r, d, v in CONSTANT_RATERS],
    )
    files["README.md"] = _readme(files, seed, n_clipped / n_values).encode("utf-8")
    return files


def _n_rows(data: bytes) -> int:
    return len(list(csv.reader(io.StringIO(data.decode("utf-8"))))) - 1


def _readme(files: dict[str, bytes], seed: int, clipped_share: float) -> str:
    """The dataset's README (template ``demo_texts/README.md.j2``) with the counts of the built files."""
    n = {name: _n_rows(data) for name, data in files.items()}
    sev_rows = list(csv.reader(io.StringIO(files["truth/rater_severity.csv"].decode("utf-8"))))[1:]
    template = markdown_environment("reappraisal.data", folder=TEXTS_DIR.name).get_template("README.md.j2")
    return template.render(
        data_origin=DATA_ORIGIN, seed=seed, n=n, n_train=len(TRAIN_VIGNETTES), n_ood=len(OOD_VIGNETTES),
        n_ratings=sum(n[s.rating_file] for s in STUDIES), studies=STUDIES,
        n_raters={s.name: sum(1 for row in sev_rows if row[0] == s.label) for s in STUDIES},
        gpt4_model=GPT4_MODEL, opponent_models=OPPONENT_MODELS, weights=QUALITY_WEIGHTS,
        profiles=[(p, PROFILE_SHARES[p], [(k, v) for k, v in PROFILE_WEIGHTS[p].items() if v != QUALITY_WEIGHTS[k]])
                  for p in PROFILES],
        quality_noise_sd=QUALITY_NOISE_SD, loadings=[(d, DIMENSION_LOADINGS[d]) for d in DIMENSIONS],
        scale_center=SCALE_CENTER, rating_noise_sd=RATING_NOISE_SD, clipped_share=clipped_share,
        rater_severity_sd=RATER_SEVERITY_SD, ratings_per_item=RATINGS_PER_ITEM, items_per_rater=ITEMS_PER_RATER,
        constant_raters=CONSTANT_RATERS,
    )


def generate(out_dir: Path, seed: int = DEFAULT_SEED) -> None:
    """Write the demo dataset into ``out_dir`` (files are replaced atomically)."""
    out_dir = Path(out_dir)
    for rel, data in build(seed).items():
        _write(out_dir / rel, data)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Generate the SYNTHETIC demo dataset.")
    parser.add_argument("--out", type=Path, default=Path("data/demo"), help="output folder")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="random seed")
    args = parser.parse_args(argv)
    generate(args.out, args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
