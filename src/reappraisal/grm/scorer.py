"""The GRM as a per-candidate scorer (what the committee reward calls).

A candidate's score is its win rate over its scenario's *reference*: the
median-effectiveness human reappraisal of the train split
(:func:`median_references`), judged in both orders (candidate in slot A,
then in slot B) and averaged: 1 = wins both, 0 = loses both, 0.5 = split.
An unparseable verdict counts 0.5 for that order and is counted in
``last_error_count``. In ``logprob`` mode each order contributes the
probability that the candidate's letter wins instead of a 0/1 verdict.

All candidates × both orders go to the judge in one batched call
(:class:`reappraisal.grm.pairwise.PairwiseModel`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from reappraisal.errors import DataValidationError, PipelineInputError

from .pairwise import PairwiseModel, Verdicts
from .verdict import ERROR


def median_references(targets_df: pd.DataFrame, vignettes_df: pd.DataFrame, dimension: str) -> dict[str, str]:
    """vignette_id -> text of the median human reappraisal of the train split on ``dimension``.

    Candidates: rows of ``targets_df`` with ``author_type == "human"``,
    ``split == "train"`` and a rated ``z_<dimension>``, for the scenarios of
    ``vignettes_df``. The reference is the middle one when sorted by (z,
    reappraisal_id); for an even count the lower of the two middle ones.
    Scenarios without any such reappraisal get no entry (the scorer then
    refuses to score them); no reference at all is an error.
    """
    zcol = f"z_{dimension}"
    need = ["reappraisal_id", "vignette_id", "author_type", "split", "text", zcol]
    missing = [c for c in need if c not in targets_df.columns]
    if missing:
        raise DataValidationError(f"missing column(s) {missing}", where="targets")
    if "vignette_id" not in vignettes_df.columns:
        raise DataValidationError("missing column 'vignette_id'", where="vignettes")
    pool = targets_df[
        (targets_df["author_type"] == "human")
        & (targets_df["split"] == "train")
        & targets_df[zcol].notna()
        & targets_df["vignette_id"].isin(set(vignettes_df["vignette_id"]))
    ]
    if pool.empty:
        raise PipelineInputError(
            f"no rated human train-split reappraisal for any scenario (column {zcol!r})", where="targets"
        )
    refs = {}
    for vid, group in pool.sort_values([zcol, "reappraisal_id"], kind="mergesort").groupby("vignette_id", sort=True):
        refs[str(vid)] = str(group["text"].iloc[(len(group) - 1) // 2])
    return refs


class GRMScorer:
    """Win rate of candidates over their scenario's reference, both orders (see module doc)."""

    def __init__(self, judge: PairwiseModel, references: Mapping[str, str]):
        if not references:
            raise PipelineInputError("no reference reappraisals given", where="GRMScorer references")
        self.judge = judge
        self.references = dict(references)
        self.last_error_count = 0
        self.last_verdicts: np.ndarray = np.zeros((0, 2), dtype=object)
        self.last_texts: list[tuple[str, str]] = []

    @classmethod
    def from_dir(
        cls,
        model_dir: str | Path,
        *,
        references: Mapping[str, str],
        max_new_tokens: int,
        batch_size: int = 32,
        mode: str = "generate",
        device=None,
        engine: str = "hf",
    ) -> "GRMScorer":
        judge = PairwiseModel.from_dir(
            model_dir, max_new_tokens=max_new_tokens, batch_size=batch_size, mode=mode, device=device, engine=engine
        )
        return cls(judge, references)

    def score(self, vignette_ids: Sequence[str], scenarios: Sequence[str], candidates: Sequence[str]) -> np.ndarray:
        """Scores in [0, 1], one per candidate; all candidates × both orders in one batched call."""
        return self._score(vignette_ids, scenarios, candidates, batched=True)

    def score_one_at_a_time(self, vignette_ids, scenarios, candidates) -> np.ndarray:
        """The same scores from one judge call per prompt (reference for tests and the benchmark)."""
        return self._score(vignette_ids, scenarios, candidates, batched=False)

    def _score(self, vignette_ids, scenarios, candidates, *, batched: bool) -> np.ndarray:
        n = len(candidates)
        if not len(vignette_ids) == len(scenarios) == n:
            raise ValueError("vignette_ids, scenarios and candidates must have equal lengths")
        refs = []
        for vid in vignette_ids:
            if vid not in self.references:
                raise PipelineInputError(
                    f"scenario {vid!r} has no human reference reappraisal in the train split "
                    f"(references exist for {len(self.references)} scenario(s))",
                    where=f"vignette {vid}",
                )
            refs.append(self.references[vid])
        # Interleaved: item 2i = candidate in slot A, item 2i+1 = candidate in slot B.
        scen = [s for s in scenarios for _ in (0, 1)]
        firsts = [x for c, r in zip(candidates, refs) for x in (c, r)]
        seconds = [x for c, r in zip(candidates, refs) for x in (r, c)]
        call = self.judge.judge if batched else self.judge.judge_one_at_a_time
        out: Verdicts = call(scen, firsts, seconds)
        p_first = np.asarray(out.p_first, dtype=float).reshape(n, 2)
        wins = np.column_stack([p_first[:, 0], 1.0 - p_first[:, 1]])
        self.last_verdicts = np.asarray(out.verdicts, dtype=object).reshape(n, 2)
        self.last_texts = list(zip(out.texts[0::2], out.texts[1::2]))
        self.last_error_count = int(sum(v == ERROR for v in out.verdicts))
        return wins.mean(axis=1)
