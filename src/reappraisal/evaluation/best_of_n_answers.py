"""A best-of-N system's answers.

N sampled completions per answer, each checked by the format gate and scored
by the system's scorer (:mod:`.best_of_n`), the preferred one kept, with
every candidate and the compute it took.
"""

from __future__ import annotations

import time
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import PipelineInputError
from ..policy.answer import extract_answer
from ..policy.committee import CommitteeWeights, committee_rewards
from ..settings import Settings, as_config
from ..table_contracts import BEST_OF_N_CANDIDATE_COLUMNS
from .answers import answers_table, format_gate, requests_for, sample_completions
from .best_of_n import BestOfN, choose
from .confirmation_pool import split_pools
from .seeds import derived_seed

#: The committee scorer's weights: the headline committee's (w 0.5 / 0.5; the guard is policy.lam).
COMMITTEE_WEIGHTS = {"w_rm": 0.5, "w_grm": 0.5}


class Scorers:
    """The reward models a best-of-N system may need, built from their folders on first use (and kept)."""

    def __init__(self, settings: Settings, *, rm_dirs: Sequence[str] = (), bradley_terry_dir: str | None = None,
                 grm_dir: str | None = None, targets: pd.DataFrame | None = None,
                 vignettes: pd.DataFrame | None = None):
        self.settings, self.rm_dirs, self.bt_dir, self.grm_dir = settings, list(rm_dirs), bradley_terry_dir, grm_dir
        self.targets, self.vignettes = targets, vignettes
        self._built: dict = {}

    def ensemble(self, dirs: Sequence[str] | None = None):
        from ..reward.ensemble import EnsembleScorer

        dirs = list(dirs if dirs is not None else self.rm_dirs)
        if not dirs:
            raise PipelineInputError("the scorer needs the reward-model ensemble: give --rm-dirs", where="best-of-N")
        if tuple(dirs) not in self._built:
            rm = self.settings.reward
            self._built[tuple(dirs)] = EnsembleScorer.from_dirs(
                dirs, penalty=rm.ensemble.penalty, lam=rm.ensemble.lam,
                batch_size=rm.ensemble.batch_size, max_length=rm.max_length)
        return self._built[tuple(dirs)]

    def bradley_terry(self):
        if not self.bt_dir:
            raise PipelineInputError("the scorer is the Bradley-Terry model: give --bradley-terry", where="best-of-N")
        return self.ensemble([self.bt_dir])

    def grm(self):
        from ..grm.scorer import GRMScorer, median_references

        if not self.grm_dir or self.targets is None or self.vignettes is None:
            raise PipelineInputError("the scorer needs the GRM: give --grm-dir and --targets", where="best-of-N")
        if "grm" not in self._built:
            g, data = self.settings.grm, self.settings.data
            if data is None:
                raise PipelineInputError("the GRM's references need data.primary_dimension", where="--params")
            refs = median_references(self.targets, self.vignettes, data.primary_dimension)
            self._built["grm"] = GRMScorer.from_dir(self.grm_dir, references=refs, max_new_tokens=g.max_new_tokens,
                                                    batch_size=g.batch_size, mode=g.scorer_mode, engine=g.engine)
        return self._built["grm"]


def score_candidates(system: BestOfN, vignette_ids: Sequence[str], scenarios: Sequence[str], answers: Sequence[str],
                     passed: Sequence[bool], scorers: Scorers, lam: float) -> np.ndarray:
    """Each candidate's score by ``system.scorer`` (NaN where the gate refused it: never kept)."""
    n = len(answers)
    idx = [i for i in range(n) if passed[i]]
    scores = np.full(n, np.nan)
    if not idx:
        return scores
    sc, ans, vids = [scenarios[i] for i in idx], [answers[i] for i in idx], [vignette_ids[i] for i in idx]
    if system.scorer == "ensemble":
        scores[idx] = scorers.ensemble().score(sc, ans)
    elif system.scorer == "bradley_terry":
        scores[idx] = scorers.bradley_terry().score(sc, ans)
    elif system.scorer == "grm":
        scores[idx] = scorers.grm().score(vids, sc, ans)
    else:  # committee: the reward GRPO trains with, over each group of N candidates
        rm, grm = np.full(n, np.nan), np.full(n, np.nan)
        rm[idx] = scorers.ensemble().score(sc, ans)
        grm[idx] = scorers.grm().score(vids, sc, ans)
        groups = [i // system.n for i in range(n)]
        result = committee_rewards(groups, passed, rm, grm, group_size=system.n,
                                   weights=CommitteeWeights(lam=lam, **COMMITTEE_WEIGHTS), penalty=0.0)
        scores[idx] = result.rewards[idx]
    return scores


def generate_best_of_n(system: BestOfN, run: int, model_dir: str, vignettes: pd.DataFrame, settings: Settings,
                       scorers: Scorers, pools: Sequence[str] | None = None) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """(generations, candidates, compute) of ``system`` for ``run`` (see module doc)."""
    ev = settings.evaluation
    vignettes = split_pools(vignettes, ev, int(settings.seed))
    requests = requests_for(vignettes, pools or system.pools, as_config(ev.answers_per_scenario))
    seed = derived_seed(settings.seed, "generate", system.name, run)
    expanded = requests.loc[requests.index.repeat(system.n)].reset_index(drop=True)
    started = time.perf_counter()
    completions = sample_completions(model_dir, expanded["scenario"], ev.generation, seed=seed,
                                     desc=f"generate {system.name} run {run} ({system.n} per answer)")
    generation_seconds = time.perf_counter() - started
    gate = format_gate(settings.policy)
    answers = [extract_answer(c.text) for c in completions]
    passed = [gate.check(a).passed for a in answers]
    started = time.perf_counter()
    scores = score_candidates(system, expanded["vignette_id"].tolist(), expanded["scenario"].tolist(), answers,
                              passed, scorers, float(settings.policy.lam))
    scoring_seconds = time.perf_counter() - started
    picks = choose(scores, passed, system.n)
    kept = np.zeros(len(expanded), dtype=bool)
    kept[np.arange(len(picks)) * system.n + picks] = True
    candidates = pd.DataFrame({
        "run": run, "system": system.name, "vignette_id": expanded["vignette_id"], "pool": expanded["pool"],
        "sample": expanded["sample"], "candidate": np.tile(np.arange(system.n), len(requests)), "answer": answers,
        "passed": passed, "score": scores, "kept": kept,
        "completion_tokens": [c.completion_tokens for c in completions], "scorer": system.scorer,
    }, columns=BEST_OF_N_CANDIDATE_COLUMNS)
    chosen = [completions[i] for i in np.flatnonzero(kept)]
    table = answers_table(requests, chosen, system=system.name, run=run, seed=seed, gate=gate)
    compute = {"system": system.name, "run": run, "n": system.n, "scorer": system.scorer, "answers": len(requests),
               "candidates": len(expanded), "generated_tokens": int(candidates["completion_tokens"].sum()),
               "kept_tokens": int(table["completion_tokens"].sum()), "generation_seconds": generation_seconds,
               "scoring_seconds": scoring_seconds}
    return table, candidates, compute
