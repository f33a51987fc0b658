"""Judge contests in both orders, through the reply cache, with any backend.

Every contest is asked twice: order ``AB`` puts the arm's answer in slot A,
order ``BA`` puts it in slot B. A request's cache key covers what the judge
is sent (its rendered messages, model, decoding, ...), the model's
fingerprint, the run and the order (:mod:`.cache`); the verdict pattern is
not in it, so a reply is parsed when it is read and a fixed pattern re-reads
the cached replies. Each judgment records ``served_model``: the model an
endpoint's response named (checked against the judge's own name and its
``request.accepted_models``), or the local judge's model. Only requests missing from the cache reach the backend
(which is not even loaded when nothing is missing), each reply is cached as
it arrives, and a reply with no parseable verdict is recorded as ``error``
and counted, never dropped (a reply the endpoint did not finish included:
:mod:`.finish_reason`). Calls that failed are not cached; when any
failed the stage stops after all others were asked, saying how many, so a
rerun asks only for what is still missing, unless the first
``request.stop_after_failures`` calls all failed the same way: then the
stage stops at once, naming the cause (:mod:`.failure_streak`). :func:`check_parseable` stops a
stage whose judge's replies are mostly unparseable (a wrong pattern or a
judge that ignores the format), naming the judge and quoting one reply.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import pandas as pd

from ..errors import PipelineInputError
from ..data.quoting import quote
from .backends import CallFailure
from .cache import ReplyCache, cache_key
from .failure_streak import FailureStreak
from .finish_reason import unfinished
from .judge_spec import JudgeSpec
from ..stats import pair_orders, score_contests
from ..table_contracts import CONTEST_COLUMNS, CONTEST_KEYS, JUDGMENT_COLUMNS

ORDERS = ("AB", "BA")


@dataclass
class JudgingStats:
    requests: int = 0
    cached: int = 0
    asked: int = 0
    failed: int = 0


def slot_texts(contest, order: str) -> tuple[str, str]:
    """(slot A text, slot B text) of one contest row in ``order``."""
    if order == "AB":
        return contest.model_answer, contest.opponent_answer
    return contest.opponent_answer, contest.model_answer


def judge_contests(contests: pd.DataFrame, scenarios: dict[str, str], spec: JudgeSpec, *, run, cache: ReplyCache,
                   fingerprint: str, backend_factory: Callable[[], object], judge_kind: str = "heldout",
                   progress_desc: str | None = None) -> tuple[pd.DataFrame, JudgingStats]:
    """One judgments row per (contest, order) for judge ``spec`` (see module doc).

    ``contests``: rows as drawn by :func:`reappraisal.evaluation.draw.draw_contests`;
    ``scenarios``: vignette_id -> scenario text. ``backend_factory`` builds
    the backend only when some reply is missing from ``cache``.
    """
    requests: list[tuple[int, str, str, list[dict]]] = []  # (row, order, key, conversation)
    for i, c in enumerate(contests.itertuples(index=False)):
        scenario = scenarios[c.vignette_id]
        for order in ORDERS:
            messages = spec.messages(scenario, *slot_texts(c, order))
            key = cache_key(spec.sent(messages), model_fingerprint=fingerprint, run=run, order=order)
            requests.append((i, order, key, messages))
    stats = JudgingStats(requests=len(requests))
    missing: dict[str, list[dict]] = {}
    for _, _, key, conv in requests:
        if key not in cache and key not in missing:
            missing[key] = conv
    stats.cached = stats.requests - sum(1 for r in requests if r[2] in missing)
    failures: list[str] = []
    if missing:
        from tqdm.auto import tqdm

        keys = list(missing)
        backend = backend_factory()
        limit = spec.request.get("stop_after_failures")
        streak = FailureStreak(int(limit)) if limit else None
        with tqdm(total=len(keys), desc=progress_desc or f"judge {spec.name}", unit="call", mininterval=2.0) as bar:
            replies = backend.replies([missing[k] for k in keys], progress=bar.update)
            try:
                for ended, (idx, reply) in enumerate(replies, start=1):
                    failed = isinstance(reply, CallFailure)
                    if failed:
                        failures.append(reply.reason)
                    else:
                        cache.put(keys[idx], reply, served_model=getattr(reply, "served_model", None),
                                  url=getattr(reply, "url", None))
                    if streak is not None and streak.add(reply.reason if failed else None) and ended < len(keys):
                        raise PipelineInputError(streak.message(spec.name, spec.base_url or spec.model,
                                                                len(keys) - ended), where=spec.path)
            finally:
                close = getattr(replies, "close", None)
                if close is not None:
                    close()  # a stopped stage cuts the calls still in flight
        stats.asked = len(keys)
        stats.failed = len(failures)
    if failures:
        raise PipelineInputError(
            f"{len(failures)} of {len(missing)} call(s) to judge {spec.name!r} failed (first: {failures[0]}); the "
            f"{len(missing) - len(failures)} replies received are cached in {cache.path}; rerun to ask again for the "
            "failed ones only", where=spec.path)
    rows = []
    for i, order, key, _ in requests:
        c = contests.iloc[i]
        reply = cache.get(key)
        rows.append({
            "run": run, "judge": spec.name, "judge_kind": judge_kind, "contest_id": c["contest_id"],
            "vignette_id": c["vignette_id"], "pool": c["pool"], "model": c["model"], "opponent": c["opponent"],
            "order": order, "verdict": spec.parse(reply), "raw": reply,
            "model_answer_id": c["model_answer_id"], "opponent_answer_id": c["opponent_answer_id"],
            "served_model": served_model(spec, cache, key),
        })
    return pd.DataFrame(rows, columns=JUDGMENT_COLUMNS), stats


def served_model(spec: JudgeSpec, cache: ReplyCache, key: str) -> str | None:
    """The model a judgment came from: the one the endpoint's response named, the local judge's own model, or None
    (an endpoint that named none, or a reply cached before models were recorded)."""
    if spec.backend == "openai":
        return cache.served_model(key)
    return spec.model


class UnparseableVerdicts(PipelineInputError):
    """More of a judge's verdicts are unparseable than its ``verdict.max_unparseable_share`` allows."""


def check_parseable(judgments: pd.DataFrame, spec: JudgeSpec) -> None:
    """Stop when more than ``spec.max_unparseable_share`` of ``spec``'s verdicts are ``error`` (one line)."""
    mine = judgments[judgments["judge"] == spec.name]
    bad = mine[mine["verdict"] == "error"]
    if mine.empty or len(bad) <= spec.max_unparseable_share * len(mine):
        return
    reasons = bad["raw"].map(lambda raw: unfinished(raw) if isinstance(raw, str) else None).dropna()
    if len(reasons) * 2 > len(bad):  # mostly replies the endpoint cut off: no pattern can read them
        raise UnparseableVerdicts(
            f"{len(bad)} of {len(mine)} verdicts of judge {spec.name!r} are unparseable, more than "
            f"verdict.max_unparseable_share {spec.max_unparseable_share:g}; {len(reasons)} of those replies were not "
            f"finished (finish_reason {reasons.iloc[0]!r}: cut at decoding.max_new_tokens "
            f"{spec.decoding.get('max_new_tokens')}, e.g. {quote(bad['raw'].iloc[0])}); raise decoding.max_new_tokens "
            "or ask for a shorter reply in the template, then ask those calls again: python -m reappraisal "
            f"forget-unparsed-replies --judge {spec.name}", where=spec.path)
    raise UnparseableVerdicts(
        f"{len(bad)} of {len(mine)} verdicts of judge {spec.name!r} are unparseable, more than "
        f"verdict.max_unparseable_share {spec.max_unparseable_share:g}; verdict.pattern {spec.pattern!r} finds no "
        f"label in replies such as {quote(bad['raw'].iloc[0])}; fix the pattern or labels (the replies are "
        "cached: a rerun re-reads them without asking again) or the template, or, if the endpoint misbehaved, "
        f"ask those calls again: python -m reappraisal forget-unparsed-replies --judge {spec.name}", where=spec.path)


def consensus(judgments: pd.DataFrame, judges: Sequence[str], name: str = "consensus") -> pd.DataFrame:
    """Per (contest, order), the verdict most of ``judges`` gave among those that gave one.

    A strict majority of the parseable verdicts wins; no majority is a
    ``tie``; a contest order where every judge's reply was unparseable is
    ``error``. Raw text lists each judge's verdict.
    """
    part = judgments[judgments["judge"].isin(list(judges))]
    keys = ["run", "contest_id", "vignette_id", "pool", "model", "opponent", "order", "model_answer_id",
            "opponent_answer_id"]
    rows = []
    for key, group in part.groupby(keys, sort=True):
        votes = [v for v in group["verdict"] if v != "error"]
        if not votes:
            verdict = "error"
        else:
            counts = pd.Series(votes).value_counts()
            verdict = counts.index[0] if counts.iloc[0] * 2 > len(votes) else "tie"
        raw = "; ".join(f"{j}={v}" for j, v in zip(group["judge"], group["verdict"]))
        rows.append({**dict(zip(keys, key)), "judge": name, "judge_kind": "consensus", "verdict": verdict, "raw": raw})
    return pd.DataFrame(rows, columns=JUDGMENT_COLUMNS)


def word_count(text: str) -> int:
    """Length of an answer in words (whitespace-separated), as the length-bias tables count it."""
    return len(str(text).split())


def contests_table(judgments: pd.DataFrame, contests: pd.DataFrame | None = None) -> pd.DataFrame:
    """Both orders of every (judge, contest) combined: verdicts side by side, score and error flag.

    With the drawn ``contests`` (their texts), each row also carries both
    answers' lengths in words (``model_words``, ``opponent_words``).
    """
    keys = [*CONTEST_KEYS]
    pairs = pair_orders(judgments)
    scores = score_contests(judgments)
    extra = judgments.drop_duplicates(keys)[[*keys, "judge_kind", "pool"]]
    table = pairs.merge(scores, on=keys).merge(extra, on=keys)
    if contests is not None:
        lengths = pd.DataFrame({"contest_id": contests["contest_id"],
                                "model_words": contests["model_answer"].map(word_count).astype("int64"),
                                "opponent_words": contests["opponent_answer"].map(word_count).astype("int64")})
        table = table.merge(lengths.drop_duplicates("contest_id"), on="contest_id", how="left")
    else:
        table["model_words"] = table["opponent_words"] = pd.NA
    return table[CONTEST_COLUMNS].sort_values(["judge", "model", "opponent", "contest_id"], ignore_index=True)
