"""The reward-path scorers as judges of the evaluation contests.

A policy optimised against a scorer must be checked by judges it never saw;
to show how much of a gain survives, the same contests are also judged by
the scorers the policy was trained against:

- ``reward_path:ensemble``: the regression ensemble's score (mean − λ·std
  over seeds, as in training) of each answer; slot A wins when its score is
  higher, equal scores are a tie. The ensemble sees one answer at a time, so
  its two orders always agree; they are recorded anyway so that every judge
  has the same table.
- ``reward_path:grm``: the generative reward model asked pairwise, both
  orders, with its own prompt, exactly as the committee asks it.

Output rows have the judgments table's columns (:data:`reappraisal.table_contracts.JUDGMENT_COLUMNS`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .judging import ORDERS, slot_texts
from ..table_contracts import JUDGMENT_COLUMNS

ENSEMBLE, GRM = "reward_path:ensemble", "reward_path:grm"


def _rows(contests: pd.DataFrame, run, judge: str, verdicts: dict[str, list[str]], raws: dict[str, list[str]]):
    rows = []
    for order in ORDERS:
        for c, verdict, raw in zip(contests.itertuples(index=False), verdicts[order], raws[order]):
            rows.append({
                "run": run, "judge": judge, "judge_kind": "reward_path", "contest_id": c.contest_id,
                "vignette_id": c.vignette_id, "pool": c.pool, "model": c.model, "opponent": c.opponent,
                "order": order, "verdict": verdict, "raw": raw, "model_answer_id": c.model_answer_id,
                "opponent_answer_id": c.opponent_answer_id,
            })
    return pd.DataFrame(rows, columns=JUDGMENT_COLUMNS)


def ensemble_verdicts(score_model: np.ndarray, score_opponent: np.ndarray) -> dict[str, list[str]]:
    """Slot verdicts in both orders from the two answers' ensemble scores. Pure."""
    model_wins = score_model > score_opponent
    tie = score_model == score_opponent
    ab = np.where(tie, "tie", np.where(model_wins, "A", "B"))
    ba = np.where(tie, "tie", np.where(model_wins, "B", "A"))
    return {"AB": ab.tolist(), "BA": ba.tolist()}


def ensemble_judgments(contests: pd.DataFrame, scenarios: dict[str, str], scorer, *, run) -> pd.DataFrame:
    """Judgments of ``reward_path:ensemble`` (``scorer``: a :class:`reappraisal.reward.ensemble.EnsembleScorer`)."""
    if contests.empty:
        return pd.DataFrame(columns=JUDGMENT_COLUMNS)
    by_text = {}
    for v, group in contests.groupby("vignette_id"):
        answers = pd.unique(np.concatenate([group["model_answer"].to_numpy(), group["opponent_answer"].to_numpy()]))
        scores = scorer.score([scenarios[v]] * len(answers), list(answers))
        by_text.update({(v, t): float(s) for t, s in zip(answers, scores)})
    sm = np.array([by_text[(v, t)] for v, t in zip(contests["vignette_id"], contests["model_answer"])])
    so = np.array([by_text[(v, t)] for v, t in zip(contests["vignette_id"], contests["opponent_answer"])])
    verdicts = ensemble_verdicts(sm, so)
    raw_ab = [f"score A {a:.6f}, score B {b:.6f}" for a, b in zip(sm, so)]
    raw_ba = [f"score A {b:.6f}, score B {a:.6f}" for a, b in zip(sm, so)]
    return _rows(contests, run, ENSEMBLE, verdicts, {"AB": raw_ab, "BA": raw_ba})


def grm_judgments(contests: pd.DataFrame, scenarios: dict[str, str], judge, *, run) -> pd.DataFrame:
    """Judgments of ``reward_path:grm`` (``judge``: a :class:`reappraisal.grm.pairwise.PairwiseModel` over the trained GRM)."""
    if contests.empty:
        return pd.DataFrame(columns=JUDGMENT_COLUMNS)
    verdicts, raws = {}, {}
    for order in ORDERS:
        slots = [slot_texts(c, order) for c in contests.itertuples(index=False)]
        out = judge.judge([scenarios[v] for v in contests["vignette_id"]], [a for a, _ in slots], [b for _, b in slots])
        verdicts[order] = list(out.verdicts)
        raws[order] = [t if t else f"P(A) {p:.4f}" for t, p in zip(out.texts, out.p_first)]
    return _rows(contests, run, GRM, verdicts, raws)
