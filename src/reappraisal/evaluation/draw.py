"""Drawing contests: which arm answer meets which opponent answer. Pure.

A contest is one (arm answer, opponent answer) pair on one scenario. For an
arm and an opponent, in each scenario the opponent plays on, the arm's
answers are taken in sample order and answer ``k`` meets the opponent's
answer ``perm[k mod n]``, where ``perm`` is a permutation of the opponent's
``n`` answers for that scenario drawn from a seed derived from (config seed,
run, arm, opponent, scenario): every answer of the arm plays exactly once,
the opponent's answers are used evenly, and each run draws afresh. A
head-to-head opponent (another arm) pairs sample ``k`` with sample ``k``.
So the number of contests per scenario and run is the number of answers per
scenario the arm generates (config ``evaluation.answers_per_scenario``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .seeds import derived_seed
from ..table_contracts import DRAWN_CONTEST_COLUMNS


def draw_contests(model_answers: pd.DataFrame, opponent_answers: dict[str, pd.DataFrame], *, arm: str,
                  opponent: str, run: int, seed: int, pools: tuple[str, ...], paired: bool = False) -> pd.DataFrame:
    """Contests of ``arm`` vs ``opponent`` in one run (see module doc).

    ``model_answers``: the arm's generations (vignette_id, pool, sample,
    answer_id, answer). ``opponent_answers``: vignette_id -> frame with
    answer_id and text. ``paired``: head-to-head (sample k meets the
    opponent's answer k).
    """
    rows = []
    mine = model_answers[model_answers["pool"].isin(pools)]
    for vignette, group in mine.groupby("vignette_id", sort=True):
        theirs = opponent_answers.get(str(vignette))
        if theirs is None or theirs.empty:
            continue
        group = group.sort_values("sample", kind="stable")
        n = len(theirs)
        if paired:
            perm = np.arange(n)
        else:
            perm = np.random.default_rng(derived_seed(seed, "contests", run, arm, opponent, vignette)).permutation(n)
        for k, row in enumerate(group.itertuples(index=False)):
            if paired and k >= n:
                break
            other = theirs.iloc[int(perm[k % n])]
            rows.append({
                "contest_id": f"{arm}|{opponent}|{vignette}|{k}",
                "vignette_id": str(vignette),
                "pool": str(row.pool),
                "model": arm,
                "opponent": opponent,
                "model_answer_id": str(row.answer_id),
                "model_answer": str(row.answer),
                "opponent_answer_id": str(other["answer_id"]),
                "opponent_answer": str(other["text"]),
            })
    return pd.DataFrame(rows, columns=DRAWN_CONTEST_COLUMNS)
