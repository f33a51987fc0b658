"""The demo world's definition of a good reappraisal: any text in, its latent quality out. Pure.

A reappraisal is good when it is **fluent**, **addressed** to the person,
offers a plausible **alternative reading of this scenario**, is **not
dismissive or hostile**, and is **short but not empty**. Each of those is read
off the text and they combine non-additively, so no handful of countable
features reaches the ceiling:

* *Fluency* of each clause is its mean per-token log-likelihood under a
  smoothed word bigram model (:class:`FluencyModel`, interpolated with a
  unigram back-off) fitted to the world's own phrase bank, mapped to 0..1 by
  a logistic. Shuffled words, keyword stuffing and lists read as unseen word
  pairs and score near 0.
* Everything that earns quality is counted **only inside fluent clauses**
  (weighted by the clause's fluency): addressing the person (you/your),
  the scenario's words (relevance, with diminishing returns) and an
  *alternative reading*: a hedge (maybe, perhaps, it could be that, ...)
  followed by a reading that names who acted (the scenario's person or a
  pronoun) and says something about them. A hedge alone is worth nothing;
  a second alternative adds a little, a third nothing.
* The earning part is multiplied by a length factor with an interior
  optimum (:data:`LENGTH_OPTIMUM` words) and by the text's fluency.
* Shouting (mostly capital letters) cancels the earning part and costs a
  penalty of its own.
* Penalties, not gated by anything: hostile words (an insult wrapped in
  hedges stays an insult), dismissive phrases ("just ignore it"), repeated
  content words, clauses beyond :data:`CONCISE_SENTENCES` and scenario text
  copied back.
* Clauses are split at ``.!?;:`` and line breaks, and a clause longer than
  :data:`WORDS_PER_SENTENCE` words counts as several sentences, so neither
  semicolons nor a missing full stop hide a long text.

:func:`read_quality` returns every component (:class:`QualityReading`) so a
user can see why a text scores what it scores (``reappraisal gold``).

Raters differ (:data:`PROFILE_WEIGHTS`): three profiles weigh the same
components differently (:func:`profile_raws`), so no single reading is the
truth of what every rater wants; the world's gold is their share-weighted mean.
Nothing here reads a file: the phrase bank and the scenario come in as
arguments.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Iterable, Sequence

from .demo_meaning import HEDGES, dismissals, foreign_names, harms, hedge_at, opens_reading, unnegated_words

_WORD = re.compile(r"[a-z0-9]+")
_CLAUSE = re.compile(r"[.!?;:\n]+")
_LETTER = re.compile(r"[A-Za-z]")
_UPPER = re.compile(r"[A-Z]")

#: Words that carry no content (not counted as repetition or relevance).
FUNCTION_WORDS = frozenset(
    """a about after again all also am an and any are as at be because been before being but by can could did do
    does doing done down during each even every few for from had has have having he her here hers him his how i if
    in into is it its just me more most my never no not now of off on once one only or other our out over own
    same she should so some such than that the their them then there these they this those through to too under
    until up very was we were what when where which while who why will with would you your yours yourself""".split()
)
SECOND_PERSON = frozenset({"you", "your", "yours", "yourself"})
AGENT_PRONOUNS = frozenset({"they", "he", "she", "their", "them", "him", "her", "his", "someone", "person"})
HOSTILE = frozenset(
    """worthless stupid idiot idiots pathetic loser losers hate hates hated ugly useless dumb fool fools selfish liar
    disgusting deserve deserved deserves shut failure""".split()
)

LENGTH_OPTIMUM = (18, 48)  # words: the interior optimum of the length factor
WORDS_PER_SENTENCE = 28  # a clause longer than this counts as several sentences
CONCISE_SENTENCES = 3  # each clause beyond this costs SENTENCE_PENALTY
FLUENCY_MIDPOINT = -4.3  # mean log-likelihood per token (nats) at which a clause is half fluent
FLUENCY_SCALE = 0.3

#: Weights of the earning part (all inside fluent clauses) and of the penalties.
WEIGHTS = {
    "base": 0.35, "address": 0.55, "alternative": 1.35, "relevance": 0.8,
    "hostility": 2.4, "harm": 2.4, "off_scenario": 1.2, "dismissive": 0.9, "repetition": 3.0, "sentences": 0.35, "copy": 2.5, "shouting": 1.5,
    "empty": 1.0,
}

#: Rater profiles (AlpacaFarm's several annotator profiles): each reads the same components but weighs them its
#: own way, as a share of the world's raters. ``balanced`` is :data:`WEIGHTS`; ``warm`` cares most that the text
#: speaks to the person and punishes dismissal harder; ``analytic`` cares most for a specific alternative
#: reading and minds length less. A text's quality for a profile is standardized on the human reappraisals like
#: every profile's, and the world's gold is the share-weighted mean (:mod:`reappraisal.data.demo_gold`).
PROFILE_WEIGHTS = {
    "balanced": dict(WEIGHTS),
    "warm": dict(WEIGHTS, address=1.1, alternative=0.8, relevance=0.5, dismissive=1.8),
    "analytic": dict(WEIGHTS, address=0.2, alternative=1.8, relevance=1.2, sentences=0.15),
}
PROFILE_SHARES = {"balanced": 0.4, "warm": 0.3, "analytic": 0.3}
PROFILES = tuple(PROFILE_WEIGHTS)


def words(text: str) -> list[str]:
    """Lower-case word tokens (runs of letters and digits: "Sam's" is "sam", "s")."""
    return _WORD.findall(text.lower())


def clauses(text: str) -> list[list[str]]:
    """The text's clauses (split at ``.!?;:`` and line breaks) as word lists; empty clauses dropped."""
    return [w for _, w in _raw_clauses(text)]


def _raw_clauses(text: str) -> list[tuple[str, list[str]]]:
    """(the clause as written, its words) of every clause with words."""
    return [(c, w) for c, w in ((c, words(c)) for c in _CLAUSE.split(text or "")) if w]


def sentence_count(text: str) -> int:
    """Clauses, a clause of more than :data:`WORDS_PER_SENTENCE` words counting as several."""
    return sum(max(1, math.ceil(len(c) / WORDS_PER_SENTENCE)) for c in clauses(text))


class FluencyModel:
    """Interpolated word bigram model: p(w | v) = λ·c(v, w)/c(v) + (1 − λ)·p_unigram(w), add-α unigrams."""

    def __init__(self, sentences: Iterable[str], *, interpolation: float = 0.8, alpha: float = 0.5):
        self.interpolation = interpolation
        self.alpha = alpha
        self.unigram: Counter = Counter()
        self.bigram: Counter = Counter()
        self.context: Counter = Counter()
        for sentence in sentences:
            for clause in clauses(sentence):
                seq = ["<s>", *clause, "</s>"]
                self.unigram.update(seq[1:])
                self.context.update(seq[:-1])
                self.bigram.update(zip(seq[:-1], seq[1:]))
        self.total = sum(self.unigram.values())
        self.vocabulary = len(self.unigram) + 1  # +1: every unseen word shares one slot

    def _p_unigram(self, w: str) -> float:
        return (self.unigram.get(w, 0) + self.alpha) / (self.total + self.alpha * self.vocabulary)

    def mean_log_likelihood(self, clause: Sequence[str]) -> float:
        """Mean log p per transition of ``<s> clause </s>`` (nats)."""
        seq = ["<s>", *clause, "</s>"]
        total = 0.0
        for v, w in zip(seq[:-1], seq[1:]):
            c_v = self.context.get(v, 0)
            p_bi = self.bigram.get((v, w), 0) / c_v if c_v else 0.0
            total += math.log(self.interpolation * p_bi + (1.0 - self.interpolation) * self._p_unigram(w))
        return total / (len(seq) - 1)

    def fluency(self, clause: Sequence[str]) -> float:
        """0..1: the logistic of the clause's mean log-likelihood around :data:`FLUENCY_MIDPOINT`."""
        z = (self.mean_log_likelihood(clause) - FLUENCY_MIDPOINT) / FLUENCY_SCALE
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z))))


@dataclass(frozen=True)
class Scenario:
    """What the world knows of a scenario: its text, its words and the people in it (lower case)."""

    text: str
    keywords: tuple[str, ...]
    people: tuple[str, ...]
    other_people: tuple[str, ...] = ()  # names of the people of the world's other scenarios


@dataclass(frozen=True)
class QualityReading:
    """Every component of a text's quality (0..1 unless stated) and the raw quality they make."""

    n_words: int
    n_sentences: int
    fluency: float  # word-weighted mean of the clauses' fluency
    address: float
    alternative: float  # 0..1.3 (a second alternative adds 0.3 of its own)
    relevance: float
    length_factor: float
    hostility: float
    harm: float  # readings that blame the person, deny their worth or confirm their fear
    dismissive: float
    repetition: float
    copy: float
    off_scenario: float  # names of another scenario's people in clauses that name none of this one's
    shouting: float
    raw: float

    def as_dict(self) -> dict:
        return asdict(self)


def _alternative_strength(clause: Sequence[str], scenario: Scenario) -> float:
    """0..1: a hedge followed by a reading of someone in the scenario (named or a pronoun) with content words."""
    at = hedge_at(clause)
    if at is None:
        return 0.0
    rest = clause[at[1]:]
    if len(rest) < 4:
        return 0.0
    agent = any(w in AGENT_PRONOUNS or w in scenario.people for w in rest)
    content = [w for w in rest if w not in FUNCTION_WORDS and w not in HEDGES and w not in scenario.people]
    if not agent or len(set(content)) < 2:
        return 0.0
    specific = len({w for w in rest if w in scenario.keywords and w not in scenario.people})
    return 0.6 + 0.4 * min(1.0, specific / 2.0)


@dataclass(frozen=True)
class _ClauseMeaning:
    """What one clause says (:mod:`.demo_meaning`): harmful readings, other scenarios' names, an open hedge."""

    harms: int
    foreign: int
    opens: bool

    @classmethod
    def read(cls, raw_clause: str, scenario: Scenario) -> "_ClauseMeaning":
        return cls(sum(harms(raw_clause).values()),
                   foreign_names(raw_clause, scenario.people, scenario.other_people), opens_reading(raw_clause))

    @property
    def kind_reading(self) -> bool:
        """Whether its reading may count as an alternative: its hedge is not negated, it runs nobody down and it
        is about this scenario."""
        return self.opens and self.harms == 0 and self.foreign == 0


def _length_factor(n_words: int) -> float:
    lo, hi = LENGTH_OPTIMUM
    if n_words <= 0:
        return 0.0
    if n_words < lo:
        return (n_words / lo) ** 1.5
    if n_words > hi:
        return math.exp(-(n_words - hi) / 30.0)
    return 1.0


def read_quality(text: str, scenario: Scenario, fluency_model: FluencyModel) -> QualityReading:
    """The components of ``text``'s quality as a reappraisal of ``scenario`` and the raw quality they make."""
    text = text or ""
    raw_parts = _raw_clauses(text)
    parts = [c for _, c in raw_parts]
    all_words = [w for c in parts for w in c]
    n_words = len(all_words)
    n_sentences = sentence_count(text)
    if n_words == 0:
        return QualityReading(0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -WEIGHTS["empty"])

    flu = [fluency_model.fluency(c) for c in parts]
    fluency = sum(f * len(c) for f, c in zip(flu, parts)) / n_words
    address = max((f for f, c in zip(flu, parts) if any(x in SECOND_PERSON for x in c)), default=0.0)
    meanings = [_ClauseMeaning.read(raw, scenario) for raw, _ in raw_parts]  # clause marks end segments too
    alternatives = sorted((f * _alternative_strength(c, scenario) if m.kind_reading else 0.0
                           for f, c, m in zip(flu, parts, meanings)), reverse=True)
    alternative = (alternatives[0] + 0.3 * (alternatives[1] if len(alternatives) > 1 else 0.0)) if alternatives else 0.0
    seen_keywords: dict[str, float] = {}
    for f, c in zip(flu, parts):
        for x in c:
            if x in scenario.keywords:
                seen_keywords[x] = max(seen_keywords.get(x, 0.0), f)
    relevance = 1.0 - math.exp(-sum(seen_keywords.values()) / 1.5)
    length_factor = _length_factor(n_words)

    hostility = 1.0 - math.exp(-unnegated_words(text, HOSTILE))
    harm = 1.0 - math.exp(-sum(m.harms for m in meanings))
    dismissive = min(1.0, dismissals(text) / 2.0)
    off_scenario = 1.0 - math.exp(-sum(m.foreign for m in meanings))
    content = [x for x in all_words if x not in FUNCTION_WORDS]
    repetition = (1.0 - len(set(content)) / len(content)) if len(content) >= 4 else 0.0
    scenario_trigrams = set(_trigrams(words(scenario.text)))
    own_trigrams = _trigrams(all_words)
    copy = (sum(1 for t in own_trigrams if t in scenario_trigrams) / len(own_trigrams)) if own_trigrams else 0.0
    letters = _LETTER.findall(text)
    upper_share = len(_UPPER.findall(text)) / len(letters) if letters else 0.0
    shouting = max(0.0, (upper_share - 0.3) / 0.7)

    components = dict(n_words=n_words, n_sentences=n_sentences, fluency=fluency, address=address,
                      alternative=alternative, relevance=relevance, length_factor=length_factor, hostility=hostility,
                      harm=harm, dismissive=dismissive, repetition=repetition, copy=copy, off_scenario=off_scenario,
                      shouting=shouting)
    return QualityReading(**components, raw=combine(QualityReading(**components, raw=0.0), WEIGHTS))


def combine(reading: QualityReading, weights: dict) -> float:
    """The raw quality a reader with ``weights`` makes of a reading's components (:data:`WEIGHTS`: ``reading.raw``)."""
    w = weights
    if reading.n_words == 0:
        return -w["empty"]
    earning = w["base"] + w["address"] * reading.address + w["alternative"] * reading.alternative \
        + w["relevance"] * reading.relevance
    return (reading.fluency * reading.length_factor * earning * (1.0 - reading.shouting)
            - w["hostility"] * reading.hostility - w["harm"] * reading.harm - w["dismissive"] * reading.dismissive
            - w["off_scenario"] * reading.off_scenario
            - w["repetition"] * max(0.0, reading.repetition - 0.25)
            - w["sentences"] * max(0, reading.n_sentences - CONCISE_SENTENCES)
            - w["copy"] * reading.copy - w["shouting"] * reading.shouting)


def profile_raws(reading: QualityReading) -> tuple[float, ...]:
    """The raw quality each rater profile (:data:`PROFILES`, in order) makes of the reading."""
    return tuple(combine(reading, PROFILE_WEIGHTS[p]) for p in PROFILES)


def _trigrams(seq: Sequence[str]) -> list[tuple[str, str, str]]:
    return list(zip(seq[:-2], seq[1:-1], seq[2:]))
