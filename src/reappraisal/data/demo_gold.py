"""The demo's gold standard: the generator's rating model applied to any text. Pure.

The demo dataset (:mod:`reappraisal.data.demo_generator`) defines a
reappraisal's latent quality from its text (:mod:`reappraisal.data.demo_quality`'s
reading, standardized by the human reappraisals' mean and SD in the reference
draw, :data:`~.demo_generator.SCALE_SEED`: one fixed scale for every world the
generator draws) and
every human rating as a noisy reading of it. That is the "gold reward model"
of Gao, Schulman & Hilton (2022): this module reads any text with it.

* :func:`gold_quality`: a text's **expected** latent quality for a scenario,
  on the scale of ``data/demo/truth/reappraisal_quality.csv`` (the item
  noise the generator adds to its own reappraisals is unknowable from the
  text, so it is left out). Scenario keywords and people are the generator's
  for its own scenarios and, for any other scenario text, read off it
  (:func:`world_scenario`).
* :func:`profile_qualities`: the same per rater profile (raters weigh the
  reading's components their own way, :data:`~.demo_quality.PROFILE_WEIGHTS`);
  :func:`gold_quality` is their share-weighted mean.
* :func:`panel_votes`: ``n`` simulated raters, each of a profile drawn by its
  share, read both answers of a contest
  on the primary dimension (effectiveness) as the generator's raters do:
  ``m·(a·q + sqrt(1 − a²)·e) + severity + noise`` with the dimension loading
  ``a``, study scale ``m`` (study 1: 1.0), a per-rater severity (shared by
  both answers, so it cancels) and ``e``, noise ~ Normal(0, 1) and
  Normal(0, σ) drawn per rater and answer. A rater prefers the answer read
  higher (side by side, readings are continuous: no rater is indifferent).
* :func:`rater_preference_probability` and
  :func:`panel_majority_probability`: the rates this model implies, in
  closed form, for tests and the README.

Nothing here reads a file written by the pipeline: only the two texts and the
scenario text.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np

from ..errors import ConfigError
from .demo_generator import (
    DEFAULT_SEED,
    SCALE_SEED,
    PROFILES,
    SHARES,
    DIMENSION_LOADINGS,
    OOD_VIGNETTES,
    RATER_SEVERITY_SD,
    RATING_NOISE_SD,
    STUDIES,
    TRAIN_VIGNETTES,
    _human_reappraisals,
    fluency_model,
    quality_standardization,
    scenario_of,
    tokens,
    world_names,
)
from .demo_quality import QualityReading, Scenario, profile_raws, read_quality

#: Words never taken as a scenario keyword (function words, pronouns, common verbs).
_STOPWORDS = frozenset(
    """a about after again all also an and any are as at be because been before being but by can could did do
    does doing done down during each even every few for from had has have having he her here hers him his how i if
    in into is it its just me more most my never next no not now of off on once one only or other our out over own
    said same she should so some such than that the their them then there these they this those through to too
    under until up very was we were what when where which while who why will with would you your yours yourself
    asked told came went got get gets made make says say week month day night time third first last""".split()
)
_MIN_KEYWORD_LENGTH = 4
_WS = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _WS.sub(" ", text).strip()


@lru_cache(maxsize=None)
def _known_scenarios() -> dict[str, Scenario]:
    return {_norm(v.text): scenario_of(v) for v in TRAIN_VIGNETTES + OOD_VIGNETTES}


_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][a-z]+)\b")


@lru_cache(maxsize=64)
def world_scenario(scenario: str) -> Scenario:
    """The world's view of a scenario text: the generator's own, or one read off any other text.

    For a text of your own the keywords are its content words (≥ 4 letters, no
    function words), its people are its capitalized words that do not open
    a sentence (other than "I"), and the names of the people of the world's
    scenarios it does not name are other scenarios' people.
    """
    known = _known_scenarios().get(_norm(scenario))
    if known is not None:
        return known
    seen: dict[str, None] = {}
    for w in tokens(scenario):
        if len(w) >= _MIN_KEYWORD_LENGTH and w not in _STOPWORDS and not w.isdigit():
            seen.setdefault(w, None)
    people = tuple(dict.fromkeys(m.lower() for m in _NAME.findall(scenario) if m != "I"))
    return Scenario(text=scenario, keywords=tuple(seen), people=people,
                    other_people=tuple(n for n in world_names() if n not in people))


@lru_cache(maxsize=1)
def _scale() -> tuple[float, float]:
    """The world's fixed quality scale: each profile's human (mean, SD) in the reference draw (every world's)."""
    return quality_standardization(SCALE_SEED)


def gold_reading(text: str, scenario: str) -> QualityReading:
    """Every component of the world's reading of ``text`` for ``scenario`` (see :mod:`.demo_quality`)."""
    return read_quality(text or "", world_scenario(scenario), fluency_model())


def profile_qualities(text: str, scenario: str) -> np.ndarray:
    """Expected latent quality of ``text`` for ``scenario`` as each rater profile reads it (:data:`PROFILES`
    order; each profile's human mean 0, SD 1)."""
    mu, sd = _scale()
    return (np.array(profile_raws(gold_reading(text, scenario))) - mu) / sd


def gold_quality(text: str, scenario: str) -> float:
    """Expected latent quality of ``text`` as a reappraisal of ``scenario``: the profiles' share-weighted mean
    (human mean 0, SD about 1)."""
    return float(profile_qualities(text, scenario) @ SHARES)


def gold_qualities(texts: Sequence[str], scenarios: Sequence[str]) -> np.ndarray:
    return np.array([gold_quality(t, s) for t, s in zip(texts, scenarios)], dtype=np.float64)


def profile_qualities_of(texts: Sequence[str], scenarios: Sequence[str]) -> np.ndarray:
    """(texts, profiles): :func:`profile_qualities` of each text."""
    rows = [profile_qualities(t, s) for t, s in zip(texts, scenarios)]
    return np.array(rows, dtype=np.float64).reshape(len(rows), len(PROFILES))


@dataclass(frozen=True)
class RatingModel:
    """How one simulated rater reads an answer (the generator's constants by default)."""

    loading: float = DIMENSION_LOADINGS["effectiveness"]
    multiplier: float = STUDIES[0].multiplier
    noise_sd: float = RATING_NOISE_SD
    severity_sd: float = RATER_SEVERITY_SD

    @classmethod
    def for_dimension(cls, dimension: str = "effectiveness", study: str = STUDIES[0].label) -> "RatingModel":
        spec = {s.label: s for s in STUDIES}.get(str(study))
        if dimension not in DIMENSION_LOADINGS:
            raise ValueError(f"unknown dimension {dimension!r} (the generator's: {', '.join(DIMENSION_LOADINGS)})")
        if spec is None:
            raise ValueError(f"unknown study {study!r} (the generator's: {', '.join(s.label for s in STUDIES)})")
        return cls(loading=DIMENSION_LOADINGS[dimension], multiplier=spec.multiplier)

    @property
    def reading_sd(self) -> float:
        """SD of one reading around ``multiplier · loading · q`` (severity excluded: it cancels in a comparison)."""
        return math.sqrt(self.multiplier**2 * (1.0 - self.loading**2) + self.noise_sd**2)


def _profiles(q) -> np.ndarray:
    """Profile qualities (:data:`PROFILES` order): a number is read alike by every profile."""
    q = np.asarray(q, dtype=float)
    return np.full(len(PROFILES), float(q)) if q.ndim == 0 else q


def rater_preference_probability(q_a, q_b, model: RatingModel = RatingModel()) -> float:
    """P(one rater, of a profile drawn by its share, reads A higher than B) =
    Σ share · Φ(m·a·(q_A − q_B) / (√2 · reading SD)) over the profiles' qualities (numbers: every profile's)."""
    d = _profiles(q_a) - _profiles(q_b)
    z = model.multiplier * model.loading * d / (math.sqrt(2.0) * model.reading_sd)
    return float(SHARES @ (0.5 * (1.0 + np.array([math.erf(x / math.sqrt(2.0)) for x in z]))))


def panel_majority_probability(q_a, q_b, n_raters: int, model: RatingModel = RatingModel()) -> float:
    """P(strictly more of ``n_raters`` raters prefer A than B)."""
    p = rater_preference_probability(q_a, q_b, model)
    return float(sum(math.comb(n_raters, k) * p**k * (1 - p) ** (n_raters - k)
                     for k in range(n_raters // 2 + 1, n_raters + 1)))


def panel_votes(q_a, q_b, *, n_raters: int, seed: int, model: RatingModel = RatingModel()) -> tuple[int, int]:
    """(raters preferring A, raters preferring B) for one contest order; ``q_a``, ``q_b``: the answers' profile
    qualities (a number: every profile's). Each rater's profile is drawn by its share."""
    rng = np.random.default_rng(seed)
    severity = rng.normal(0.0, model.severity_sd, size=(n_raters, 1))
    e = rng.normal(0.0, 1.0, size=(n_raters, 2))
    noise = rng.normal(0.0, model.noise_sd, size=(n_raters, 2))
    profile = rng.choice(len(PROFILES), size=n_raters, p=SHARES)
    q = np.stack([_profiles(q_a), _profiles(q_b)], axis=1)[profile]  # (raters, 2): each rater's own reading
    readings = model.multiplier * (model.loading * q + math.sqrt(1.0 - model.loading**2) * e) + severity + noise
    prefer_a = int(np.sum(readings[:, 0] > readings[:, 1]))
    prefer_b = int(np.sum(readings[:, 1] > readings[:, 0]))
    return prefer_a, prefer_b


#: Data sources the demo's rating model may stand in for: the bundled data it generated, never OSF's real ratings.
DEMO_DATA_SOURCES = ("bundled",)


def require_demo_data(what: str, *, preset: str, data_source: str | None, fix: str, where: str) -> None:
    """One line refusing ``what`` (a panel judge, the gold scorer) unless the preset's data are bundled."""
    if data_source not in DEMO_DATA_SOURCES:
        raise ConfigError(f"{what} reads the demo generator's rating model and exists for the demo preset only "
                          f"(bundled data); preset {preset!r} (data.source {data_source!r}) {fix}", where=where)


@lru_cache(maxsize=4)
def human_reappraisals(seed: int = DEFAULT_SEED) -> tuple[tuple[str, str], ...]:
    """(scenario id, text) of every human reappraisal the generator writes with ``seed`` (its draws replayed)."""
    humans = _human_reappraisals(np.random.default_rng(seed))
    return tuple((r["vignette_id"], r["text"]) for rows in humans.values() for r in rows)


def human_gold_quantiles(vignette_id: str, quantiles: Sequence[float] = (0.1, 0.5, 0.9), *,
                         seed: int = DEFAULT_SEED) -> dict[float, float]:
    """Quantiles of the expected quality of the scenario's human reappraisals (the generator's, train scenarios)."""
    texts = {v.vignette_id: v.text for v in TRAIN_VIGNETTES}
    if vignette_id not in texts:
        raise ValueError(f"scenario {vignette_id!r} has no human reappraisals (the generator's: {', '.join(texts)})")
    golds = [gold_quality(t, texts[vignette_id]) for vid, t in human_reappraisals(seed) if vid == vignette_id]
    return {q: float(np.quantile(golds, q)) for q in quantiles}
