"""draw_truth and compute_truth stages (demo only): the true value of every win-rate estimand.

``draw-truth`` (:mod:`.truth_draw_io`; one job per generated system: every evaluated arm instance
and every ``model`` opponent, e.g. the base policy): ``evaluation.truth.
answers_per_scenario`` fresh answers per scenario of every pool (train, the
OOD selection pool and the confirmation pool), sampled with the evaluation's
decoding, prompt and answer extraction (:func:`.answers.generate_answers`)
under a seed of their own, each with its gold quality (the demo world's
reading, :mod:`reappraisal.data.demo_gold`). The base policy also draws
``evaluation.truth.oracle.draws_per_scenario`` on the training scenarios for
the gold oracle.

``compute-truth``: from those draws, every (system, opponent, pool) the
evaluation judges gets its truth and Monte Carlo error
(:mod:`.truth`): arm instances against every opponent they meet, best-of-N
systems (their instance's draws ranked by their scorer: the best-of-N pick's
distribution is exact given the draws), each pooled arm (the mean of its
seeds), and the oracle (best-of-n of the base policy by gold) against every
answers opponent on the training scenarios, beside the base policy's own
truth there (the world's calibration anchors). Also the world table: gold
quantiles of the human reappraisals per scenario, of each opponent's answers,
of the base policy's and of the oracle's.

Both stages refuse data that are not the demo generator's (one line): the
truth exists only where the world is known.
"""

from __future__ import annotations

import argparse
import itertools
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..atomic import write_parquet
from ..errors import ConfigError, PipelineInputError
from ..input_tables import read_table
from ..params import parse_params
from ..settings import Settings
from .confirmation_pool import split_pools
from .opponents import answer_pools
from .systems import best_of_n_systems, evaluated_instances, opponents, pooled_systems
from .truth import (
    ContestMeans,
    PanelModel,
    Truth,
    best_of_truth,
    combined_truth,
    contest_means,
    max_of_k_weights,
    pair_truth,
    profile_array,
    truth_of,
)
from .truth_draws import PROFILE_COLUMNS, check_truth_allowed, oracle_source, panel_model

TRUTH_COLUMNS = ["system", "versus", "opponent", "pool", "kind", "truth", "truth_se", "n_scenarios",
                 "draws_per_scenario"]
WORLD_COLUMNS = ["group", "vignette_id", "n", "q10", "q25", "q50", "q75", "q90", "mean"]
ORACLE = "oracle:base-policy:gold"


def _by_scenario(frame: pd.DataFrame, pool: str, limit: int | None = None) -> dict:
    """Scenario -> (answers, profiles): each draw's quality per rater profile, in sample order."""
    sub = frame[frame["pool"] == pool].sort_values(["vignette_id", "sample"])
    out = {}
    for v, g in sub.groupby("vignette_id", sort=True):
        values = g[PROFILE_COLUMNS].to_numpy(dtype=float)
        out[str(v)] = values if limit is None else values[:limit]
    return out


def _row(system: str, opponent: str, pool: str, kind: str, truth: Truth, draws: int, versus: str = "") -> dict:
    return {"system": system, "versus": versus, "opponent": opponent, "pool": pool, "kind": kind, "truth": truth.value,
            "truth_se": truth.se, "n_scenarios": len(truth.per_scenario), "draws_per_scenario": draws}


def _ranked_by(frame: pd.DataFrame, pool: str, keys: np.ndarray) -> dict:
    """Per scenario, the golds sorted by ``keys`` (gate failures last-ranked), for the best-of-N pick's distribution."""
    sub = frame.assign(_key=keys)
    sub = sub[sub["pool"] == pool]
    out = {}
    for v, g in sub.groupby("vignette_id", sort=True):
        key = np.where(g["passed"].to_numpy(), g["_key"].to_numpy(dtype=float), -np.inf)
        key = np.where(np.isfinite(key), key, -np.inf)
        out[str(v)] = g[PROFILE_COLUMNS].to_numpy(dtype=float)[np.argsort(key, kind="stable")]
    return out


def _best_of_ranked(ranked: Mapping[str, np.ndarray], opponent: Mapping[str, np.ndarray], panel: PanelModel,
                    k: int, n_bootstrap: int = 200, seed: int = 0) -> Truth:
    """Truth of a best-of-``k`` pick by the ranking ``ranked`` already encodes (ascending), bootstrap error."""
    from .truth import contest_score

    scenarios = sorted(set(ranked) & set(opponent))
    rng = np.random.default_rng(seed)
    # each answer's mean score against the opponent, once: a resample only picks answers
    against = {s: contest_score(ranked[s][:, None, :], profile_array(opponent[s])[None, :, :], panel).mean(axis=1)
               for s in scenarios}

    def value(idx_by_s):
        vals = {}
        for s in scenarios:
            picked = against[s][np.sort(idx_by_s[s])]  # a resample keeps the ranking order
            vals[s] = float(max_of_k_weights(len(picked), k) @ picked)
        return vals

    point = value({s: np.arange(len(ranked[s])) for s in scenarios})
    boots = [np.mean(list(value({s: rng.integers(0, len(ranked[s]), len(ranked[s])) for s in scenarios}).values()))
             for _ in range(n_bootstrap)]
    return Truth(float(np.mean(list(point.values()))), float(np.std(boots, ddof=1)), point)


def compute_truths(draws: Mapping[str, pd.DataFrame], targets: pd.DataFrame, vignettes: pd.DataFrame, settings: Settings,
                   *, scores: Mapping[str, np.ndarray] | None = None) -> pd.DataFrame:
    """Every (system, opponent, pool) row's truth (see module doc); ``scores``: best-of-N system -> its scorer's
    score of each of its instance's draws (in the draws' row order)."""
    panel = panel_model(settings.evaluation)
    ev = settings.evaluation
    vignettes = split_pools(vignettes, ev, int(settings.seed))
    opps = opponents(settings)
    per = int(ev.truth.answers_per_scenario)
    fixed = {name: {str(v): _answer_golds(frame, vignettes, v) for v, frame in
                    answer_pools(o, targets, vignettes.assign(pool=vignettes["pool"].replace("confirm", "ood"))).items()}
             for name, o in opps.items() if o.kind == "answers"}
    rows = []

    def opponent_side(opp, pool):
        if opp.kind == "answers":
            pools = vignettes.set_index(vignettes["vignette_id"].astype(str))["pool"]
            return {v: q for v, q in fixed[opp.name].items() if pools.get(v) == pool}, False
        name = opp.name if opp.kind == "model" else opp.arm
        return _by_scenario(draws[name], pool, limit=per), True

    def opponent_pools(opp):
        return tuple(dict.fromkeys(p for p in (*opp.pools, *(("confirm",) if "ood" in opp.pools else ())))) \
            if opp.kind == "answers" else opp.pools

    instances = evaluated_instances(settings)
    against: dict[tuple[str, str, bool], dict[str, list[tuple[float, ContestMeans]]]] = {}
    for name in instances:
        for opp in opps.values():
            if not opp.plays(name):
                continue
            for pool in opponent_pools(opp):
                theirs, is_draw = opponent_side(opp, pool)
                mine = _by_scenario(draws[name], pool, limit=per)
                if set(mine) & set(theirs):
                    means = contest_means(mine, theirs, panel)
                    rows.append(_row(name, opp.name, pool, "arm", truth_of(means, opponent_is_draw=is_draw), per))
                    against.setdefault((opp.name, pool, is_draw), {})[name] = [(1.0, means)]
    for bon_name, bon in best_of_n_systems(settings).items():
        frame = draws[bon.instance]
        frame = frame[frame.groupby(["vignette_id", "pool"]).cumcount() < per]
        key = np.asarray((scores or {})[bon_name], dtype=float)
        for opp in opps.values():
            if not opp.plays(bon_name) or opp.kind == "arm":
                continue
            for pool in opponent_pools(opp):
                theirs, _ = opponent_side(opp, pool)
                ranked = _ranked_by(frame, pool, key)
                if set(ranked) & set(theirs):
                    rows.append(_row(bon_name, opp.name, pool, "best_of_n",
                                     _best_of_ranked(ranked, theirs, panel, bon.n), per))
    table = pd.DataFrame(rows, columns=TRUTH_COLUMNS)
    pooled = []
    for (opp_name, pool, is_draw), by_system in against.items():
        for pooled_name, members in pooled_systems(settings).items():
            if set(members) <= set(by_system):
                by_system[pooled_name] = [(1.0 / len(members), by_system[m][0][1]) for m in members]
                pooled.append(_row(pooled_name, opp_name, pool, "pooled",
                                   combined_truth(by_system[pooled_name], opponent_is_draw=is_draw), per))
        # two systems against one generated opponent read the same opponent draws: their difference's error
        # counts those draws once (against answers in the data the two truths are independent and the
        # summary adds their errors)
        if is_draw:
            for a, b in itertools.combinations(sorted(by_system), 2):
                terms = by_system[a] + [(-w, m) for w, m in by_system[b]]
                pooled.append(_row(a, opp_name, pool, "difference", combined_truth(terms, opponent_is_draw=True),
                                   per, versus=b))
    base = oracle_source(opps)
    if base is not None:
        k = int(ev.truth.oracle.candidates)
        golds = _by_scenario(draws[base], "train")
        for opp in opps.values():
            if opp.kind == "answers" and "train" in opp.pools:
                theirs, _ = opponent_side(opp, "train")
                # the base policy itself (the world's calibration: it must lose clearly to GPT-4-0314) ...
                pooled.append(_row(base, opp.name, "train", "base",
                                   pair_truth(_by_scenario(draws[base], "train", limit=per), theirs, panel,
                                              opponent_is_draw=False), per))
                # ... and the gold oracle, best-of-k of its draws by gold (it must be able to win)
                pooled.append(_row(ORACLE, opp.name, "train", "oracle",
                                   best_of_truth(golds, theirs, panel, k=k), len(next(iter(golds.values())))))
    return pd.concat([table, pd.DataFrame(pooled, columns=TRUTH_COLUMNS)], ignore_index=True)


def _answer_golds(frame: pd.DataFrame, vignettes: pd.DataFrame, vignette_id) -> np.ndarray:
    """(answers, profiles): each answer's quality per rater profile."""
    from ..data.demo_gold import profile_qualities_of

    scenario = vignettes.set_index(vignettes["vignette_id"].astype(str)).loc[str(vignette_id), "text"]
    return profile_qualities_of(frame["text"].tolist(), [scenario] * len(frame))


def world_table(draws: Mapping[str, pd.DataFrame], targets: pd.DataFrame, vignettes: pd.DataFrame,
                settings: Settings) -> pd.DataFrame:
    """Gold quantiles per scenario and group: humans, each answers opponent, every drawn system, the oracle."""
    from ..data.demo_gold import gold_qualities

    scenario = vignettes.set_index(vignettes["vignette_id"].astype(str))["text"]
    rows = []

    def add(group: str, frame: pd.DataFrame):
        for v, g in frame.groupby("vignette_id", sort=True):
            q = g["gold"].to_numpy(dtype=float)
            rows.append({"group": group, "vignette_id": str(v), "n": len(q),
                         **{f"q{p}": float(np.quantile(q, p / 100)) for p in (10, 25, 50, 75, 90)},
                         "mean": float(q.mean())})

    for author, g in targets.groupby("author_type", sort=True):
        g = g.drop_duplicates("reappraisal_id")
        texts, vids = g["text"].astype(str).tolist(), g["vignette_id"].astype(str).tolist()
        add(str(author), pd.DataFrame({"vignette_id": vids,
                                       "gold": gold_qualities(texts, [scenario[v] for v in vids])}))
    for name, frame in draws.items():
        add(name, frame[frame["pool"] == "train"])
    base = oracle_source(opponents(settings))
    if base is not None:
        k = int(settings.evaluation.truth.oracle.candidates)
        rng = np.random.default_rng(0)
        picks = []
        for v, g in draws[base][draws[base]["pool"] == "train"].groupby("vignette_id", sort=True):
            q = g["gold"].to_numpy(dtype=float)
            best = rng.choice(q, size=(512, k)).max(axis=1)  # draws of the oracle's answer gold
            picks.append(pd.DataFrame({"vignette_id": str(v), "gold": best}))
        add(ORACLE, pd.concat(picks, ignore_index=True))
    return pd.DataFrame(rows, columns=WORLD_COLUMNS)


def cli_main(argv: Sequence[str] | None = None) -> int:
    """``compute-truth``: every judged row's truth and the world table from the draws."""
    ap = argparse.ArgumentParser(prog="reappraisal compute-truth", description=__doc__.splitlines()[0])
    for name in ("vignettes", "targets", "params", "out", "world"):
        ap.add_argument(f"--{name}", required=True)
    ap.add_argument("--draws", nargs="+", required=True, help="draw-truth outputs, one per system")
    ap.add_argument("--rm-dirs", nargs="*", default=[], help="the ensemble, for best-of-N systems it ranks by")
    ap.add_argument("--bradley-terry", default=None)
    args = ap.parse_args(argv)
    settings = Settings.from_params(parse_params(args.params))
    check_truth_allowed(settings)
    draws = {}
    for path in args.draws:
        frame = read_table(path)
        draws[str(frame["system"].iloc[0])] = frame
    vignettes, targets = read_table(args.vignettes), read_table(args.targets)
    missing = [s for s in [*evaluated_instances(settings), *(o.name for o in opponents(settings).values()
                                                            if o.kind == "model")] if s not in draws]
    if missing:
        raise PipelineInputError(f"no truth draws for {', '.join(missing)}", where="--draws")
    scores = best_of_n_scores(draws, vignettes, settings, rm_dirs=args.rm_dirs, bradley_terry_dir=args.bradley_terry)
    truths = compute_truths(draws, targets, vignettes, settings, scores=scores)
    write_parquet(world_table(draws, targets, vignettes, settings), args.world)
    write_parquet(truths, args.out)
    print(f"compute_truth: {len(truths)} rows, largest Monte Carlo error {truths['truth_se'].max():.4f} -> {args.out}")
    return 0


def best_of_n_scores(draws: Mapping[str, pd.DataFrame], vignettes: pd.DataFrame, settings: Settings, *,
                     rm_dirs: Sequence[str], bradley_terry_dir: str | None) -> dict[str, np.ndarray]:
    """Each best-of-N system's scorer applied to its instance's truth draws (ensemble or Bradley-Terry)."""
    out = {}
    scenario = vignettes.set_index(vignettes["vignette_id"].astype(str))["text"]
    per = int(settings.evaluation.truth.answers_per_scenario)
    for name, bon in best_of_n_systems(settings).items():
        if bon.scorer not in ("ensemble", "bradley_terry"):
            raise ConfigError(f"the truth of {name} needs its scorer per answer; {bon.scorer!r} scores groups "
                              "(committee) or generates (grm): not supported", where="config evaluation.best_of_n")
        from ..reward.ensemble import EnsembleScorer

        dirs = list(rm_dirs) if bon.scorer == "ensemble" else [bradley_terry_dir]
        if not all(dirs):
            raise PipelineInputError(f"{name} ranks by {bon.scorer}: give its model folders", where="--rm-dirs")
        rm = settings.reward
        scorer = EnsembleScorer.from_dirs(dirs, penalty=rm.ensemble.penalty, lam=rm.ensemble.lam,
                                          batch_size=rm.ensemble.batch_size, max_length=rm.max_length)
        frame = draws[bon.instance]
        frame = frame[frame.groupby(["vignette_id", "pool"]).cumcount() < per]
        values = np.full(len(frame), np.nan)
        ok = frame["passed"].to_numpy()
        values[ok] = scorer.score([scenario[v] for v in frame["vignette_id"][ok]], frame["answer"][ok].tolist())
        out[name] = values
    return out
