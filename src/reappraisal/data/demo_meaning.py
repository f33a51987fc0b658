"""What a reappraisal says, read by rule: negation and its scope, whom a clause runs down, which scenario it reads. Pure.

The demo world's gold (:mod:`reappraisal.data.demo_quality`) counts words; this
module lets it read a little meaning, by rules a reader can probe with
``reappraisal gold``:

* **Negation and its scope.** Contractions are expanded ("doesn't" → "does
  not"). A negator (:data:`NEGATORS`: not, never, no, nothing, nobody,
  without, ...) reaches the next :data:`SCOPE_WORDS` words of its segment
  (segments end at a comma or a clause mark) and stops at a word that opens a
  new clause (:data:`SCOPE_BREAKERS`: because, which, so, but, and, ...). A
  hostile word, a dismissive phrase or a harmful reading under negation is not
  counted: "would not mean your friendship is worthless" is not an insult, "you
  do not deserve this" is not blame.
* **Scope of a dismissal.** "who cares" dismisses only when it opens its
  segment ("Who cares?"), not inside "anyone who cares about them";
  "whatever" only as a segment of its own.
* **Whom a clause runs down** (:data:`HARMS`): a reading that blames the
  person ("it is your own fault", "you overreacted"), denies their worth or
  belittles their work ("you are not important to them", "your plan was not
  good enough"), or confirms their fear ("they meant to hurt you", "they do
  not care about you", "did it on purpose"). Each unnegated match counts once.
* **Hedges and their negation.** A hedge (:data:`HEDGES`, :data:`HEDGE_PHRASES`)
  opens an alternative reading; a negated hedge ("it is not possible that",
  "there is no way that maybe", "maybe not") opens none, and ruling out a
  kinder reading that way counts as a harm of its own (``denial``), while
  ruling out a harmful one ("it is not possible that they meant to hurt you")
  does not.
* **Which scenario a clause reads.** A clause that names a person of another
  of the world's scenarios and none of this one's is about another scenario
  (:func:`foreign_names`).
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

_APOSTROPHE = re.compile(r"[\u2019\u2018`]")
_CONTRACTIONS = (
    (re.compile(r"\bcan'?t\b"), "can not"), (re.compile(r"\bwon'?t\b"), "will not"),
    (re.compile(r"\bcannot\b"), "can not"), (re.compile(r"n't\b"), " not"), (re.compile(r"'re\b"), " are"),
    (re.compile(r"'m\b"), " am"), (re.compile(r"'ve\b"), " have"), (re.compile(r"'ll\b"), " will"),
    (re.compile(r"'d\b"), " would"),
)
_SEGMENT = re.compile(r"[.!?;:,\n]+")
_WORD = re.compile(r"[a-z0-9]+")

NEGATORS = frozenset("not no never nothing nobody none without neither nor".split())
SCOPE_WORDS = 6  # a negator reaches this many words of its segment
MIN_READING_WORDS = 3  # a negated hedge rules out a reading of at least this many words
SCOPE_BREAKERS = frozenset("because which so but although though while and or since until unless".split())

#: Words that open an alternative reading; two-word hedges are matched as phrases.
HEDGES = frozenset({"maybe", "perhaps", "possibly", "might", "probably"})
HEDGE_PHRASES = ("could be that", "possible that", "may have", "might have", "there may be", "may be")

#: Dismissive phrases counted anywhere in a segment (unless negated), and those counted only where they open it.
DISMISSIVE_PHRASES = ("just ignore", "ignore it", "forget about it", "not a big deal", "get over it", "move on",
                      "stop being", "does not matter")
DISMISSIVE_OPENINGS = ("who cares",)
DISMISSIVE_ALONE = ("whatever",)

_ADV = r"(?:really |just |simply |probably |clearly |obviously |even )?"
#: Readings that run the person down, by kind: blame, a denial of their worth (or their work's), a confirmation of
#: their fear. Matched on a segment's expanded, lower-case words; a match under negation is not counted.
HARMS = {
    "blame": (
        r"\byour (?:own )?fault\b",
        rf"\byou (?:are|were) {_ADV}(?:the problem|to blame|at fault|wrong|overreacting|overly sensitive"
        r"|too (?:sensitive|dramatic|needy|emotional|touchy|much)"
        r"|being (?:dramatic|childish|silly|ridiculous|oversensitive|unreasonable|petty|selfish))\b",
        rf"\byou {_ADV}(?:overreacted|overreact|brought (?:this|it) on yourself|asked for (?:it|this)"
        r"|should have known better|made (?:this|it) up|caused (?:this|it)|ruined (?:it|this|everything)"
        r"|deserved (?:it|this))\b",
    ),
    "worth": (
        rf"\byou (?:are|were) {_ADV}not (?:good enough|worth (?:it|much|anything|the \w+)|important|wanted|welcome"
        r"|liked|loved|valued|needed|enough|interesting|special|a priority)\b",
        rf"\byou (?:are|were) {_ADV}(?:worthless|useless|a failure|a burden|boring|unlikable|annoying|forgettable"
        r"|replaceable|unimportant|invisible|nothing)\b",
        rf"\byou (?:do|did) not {_ADV}matter\b",
        rf"\b(?:nobody|no one) {_ADV}(?:likes|wants|cares about|values|respects|needs|loves|notices|remembers) you\b",
        rf"\byour (?:\w+ ){{0,2}}(?:is|was|are|were) {_ADV}(?:not good enough|worthless|mediocre|bad|terrible|useless"
        r"|weak|poor|sloppy|boring|a mess|a failure|not worth \w+|not important|forgettable|nothing special)\b",
    ),
    "fear": (
        r"\b(?:mean|means|meant|meaning|wanted|intended|tried|chose|decided|planned) to (?:hurt|humiliate|embarrass"
        r"|exclude|snub|insult|upset|punish|replace|abandon|undermine|sabotage|belittle|leave|shut out"
        r"|get rid of) you\b",
        r"\b(?:on purpose|deliberately|intentionally|to spite you|to get back at you)\b",
        rf"\b(?:does|do|did) not {_ADV}(?:care about|like|love|respect|value|want|need|trust|miss) you\b",
        r"\b(?:is|are|was|were) (?:laughing at|mocking|tired of|sick of|done with|bored of|bored with|leaving"
        r"|replacing|using|judging) you\b",
        rf"\b(?:never|no longer) {_ADV}(?:cared about|liked|loved|respected|valued|wanted|needed) you\b",
        r"\b(?:hates|hated|resents|resented|despises|despised|dislikes|disliked) you\b",
        r"\byour (?:fear|fears|worry|worries|suspicion|suspicions) (?:is|are|was|were) (?:right|true|correct"
        r"|justified|confirmed)\b",
        r"\byou (?:are|were) right to (?:worry|fear|suspect|think)\b",
    ),
}
_HARM_PATTERNS = tuple((kind, re.compile(p)) for kind, patterns in HARMS.items() for p in patterns)


def expand(text: str) -> str:
    """Lower case with contractions expanded ("doesn't" → "does not", "you're" → "you are")."""
    out = _APOSTROPHE.sub("'", (text or "").lower())
    for pattern, repl in _CONTRACTIONS:
        out = pattern.sub(repl, out)
    return out


def segments(text: str) -> list[list[str]]:
    """The text's segments (split at a comma or a clause mark) as word lists, contractions expanded."""
    return [w for w in (_WORD.findall(s) for s in _SEGMENT.split(expand(text))) if w]


def negated(segment: Sequence[str], i: int) -> bool:
    """Whether word ``i`` of ``segment`` lies in a negator's scope (within :data:`SCOPE_WORDS`, no breaker between)."""
    for j in range(i - 1, max(-1, i - 1 - SCOPE_WORDS), -1):
        if segment[j] in SCOPE_BREAKERS:
            return False
        if segment[j] in NEGATORS:
            return True
    return False


def _matches(segment: Sequence[str], pattern: re.Pattern) -> Iterable[int]:
    """Word index at which each match of ``pattern`` in the joined segment starts."""
    joined = " ".join(segment)
    for m in pattern.finditer(joined):
        yield joined.count(" ", 0, m.start())


def unnegated_words(text: str, vocabulary: frozenset) -> int:
    """Words of ``vocabulary`` in ``text`` that no negator reaches."""
    return sum(1 for seg in segments(text) for i, w in enumerate(seg) if w in vocabulary and not negated(seg, i))


def dismissals(text: str) -> int:
    """Dismissive phrases in ``text`` that no negator reaches ("who cares" only opening its segment)."""
    n = 0
    for seg in segments(text):
        for phrase in DISMISSIVE_PHRASES:
            n += sum(1 for i in _matches(seg, re.compile(rf"\b{phrase}\b")) if not negated(seg, i))
        joined = " ".join(seg)
        n += sum(1 for phrase in DISMISSIVE_OPENINGS if joined.startswith(phrase + " ") or joined == phrase)
        n += sum(1 for phrase in DISMISSIVE_ALONE if joined == phrase)
    return n


def harms(text: str) -> dict[str, int]:
    """Unnegated readings that run the person down, counted by kind (:data:`HARMS`), and ``denial``: kinder
    readings ruled out (a negated hedge before a reading that is not itself one of :data:`HARMS`: "it is not
    possible that they forgot"; "it is not possible that they meant to hurt you" rules out a harmful one)."""
    counts = dict.fromkeys((*HARMS, "denial"), 0)
    for seg in segments(text):
        for kind, pattern in _HARM_PATTERNS:
            counts[kind] += sum(1 for i in _matches(seg, pattern) if not negated(seg, i))
        at = hedge_at(seg)
        if at is not None and _hedge_negated(seg, *at):
            reading = " ".join(seg[at[1]:])
            if len(seg) - at[1] >= MIN_READING_WORDS and not any(p.search(reading) for _, p in _HARM_PATTERNS):
                counts["denial"] += 1
    return counts


def hedge_at(words: Sequence[str]) -> tuple[int, int] | None:
    """(first word, word after) of the first hedge in ``words`` (None without one)."""
    for i, w in enumerate(words):
        if w in HEDGES:
            return i, i + 1
    joined = " ".join(words)
    for phrase in HEDGE_PHRASES:
        k = joined.find(phrase)
        if k >= 0 and (k == 0 or joined[k - 1] == " "):
            start = joined.count(" ", 0, k)
            return start, start + len(phrase.split())
    return None


def opens_reading(clause: str) -> bool:
    """Whether the clause has a hedge no negator reaches ("maybe not" and "it is not possible that" open none)."""
    for seg in segments(clause):
        at = hedge_at(seg)
        if at is None:
            continue
        return not _hedge_negated(seg, *at)
    return False


def _hedge_negated(seg: Sequence[str], start: int, end: int) -> bool:
    return negated(seg, start) or (end < len(seg) and seg[end] in NEGATORS)


def foreign_names(clause: str, people: Sequence[str], world_names: Iterable[str]) -> int:
    """Names in ``clause`` of people of the world's other scenarios, when it names none of ``people`` (else 0)."""
    words = [w for seg in segments(clause) for w in seg]
    if any(w in people for w in words):
        return 0
    own = set(people)
    others = {n for n in world_names if n not in own}
    return sum(1 for w in words if w in others)
