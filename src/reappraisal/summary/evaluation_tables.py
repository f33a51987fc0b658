"""Evaluation tables from the pooled contests table (pure).

Input: the contests of every run in one DataFrame (columns of the
evaluation contract: run, judge, judge_kind, contest_id, vignette_id, pool,
model, opponent, verdict_ab, verdict_ba, score, error) and, per run, the
artifacts its rows came from (``sources_by_run``). Each row of each table is
computed with :mod:`reappraisal.stats` and records the runs it pooled, so its
lineage is exactly those runs' files.

Units: a contest is one (arm answer, opponent answer) pair on one scenario,
both orders combined into 1 / 0.5 / 0; error contests are counted, never
rated. Clusters are scenarios; runs are pooled inside each scenario.
Estimand of every win rate here: the equally weighted mean of the scenario
win rates (:data:`reappraisal.stats.ESTIMAND`). Titles and captions are in
``table_texts.yaml`` (:mod:`.texts`).

A headline-style row (headline and ood tables) carries ``run_effect_p`` (the
run-effect test of :mod:`reappraisal.stats.runs` on its scenario x run cell
means) and, only when that p is below alpha = 1 - ``summary.confidence``,
``run_effect_flag``: one sentence saying that the runs disagree and the
pooled rate hides it (the table's caption repeats it). The flag never
changes the row's verdict (``clears_bar``): STATISTICS.md asks for the
run-effect test beside the headline, not for a different headline rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from reappraisal import stats

from .summary_table import Table, not_computable
from .texts import TABLE_TEXTS, fill, load_texts, percent, table_text
from ..table_contracts import CONTEST_LENGTH_COLUMNS

SCENARIO = "vignette_id"


@dataclass(frozen=True)
class Settings:
    """What the summary needs from the config (sections summary, evaluation, policy), all required:
    ``summary_io.summary_settings`` builds it from the typed settings (the schema's defaults filled)."""

    bar: float
    confidence: float
    n_boot: int
    seed: int
    headline_judge: str
    headline_opponent: str
    headline_arm: str
    #: the arms (an arm trained with several seeds: its pooled row); arm-vs-arm comparisons and the ablation use these
    arms: tuple[str, ...]
    arm_specs: Mapping[str, Mapping]


def _text(name: str, s: Settings) -> tuple[str, str]:
    """(title, caption) of table ``name`` (``table_texts.yaml``) with the settings filled in."""
    return table_text(name, judge=s.headline_judge, opponent=s.headline_opponent, arm=s.headline_arm, bar=s.bar,
                      level=percent(s.confidence))


def _order(values, first: Sequence[str] = ()) -> list[str]:
    values = [str(v) for v in pd.unique(pd.Series(list(values)))]
    head = [v for v in first if v in values]
    return head + sorted(v for v in values if v not in head)


def _row_sources(frame: pd.DataFrame, sources_by_run: Mapping) -> tuple[str, ...]:
    paths: set[str] = set()
    for run in pd.unique(frame["run"]):
        paths.update(sources_by_run.get(run, sources_by_run.get(str(run), ())))
    return tuple(sorted(paths))


def _stats_view(frame: pd.DataFrame) -> pd.DataFrame:
    """The columns :mod:`reappraisal.stats` reads, with contract types."""
    return frame[["run", "judge", "contest_id", SCENARIO, "model", "opponent", "score", "error"]]


def run_effect_flag(row: Mapping, confidence: float) -> str | None:
    """The flag of a :func:`reappraisal.stats.headline_row` result whose run-effect test is significant at
    alpha = 1 - ``confidence`` (p < alpha), else None (an untestable effect is not flagged)."""
    effect = row["run_effect"]
    p = effect.get("p_value")
    alpha = round(1.0 - float(confidence), 12)
    if p is None or not p < alpha:
        return None
    rates = ", ".join(f"run {r['run']} " + ("—" if r["mean_of_scenarios"] is None else f"{r['mean_of_scenarios']:.3f}")
                      for r in row["per_run"])
    return fill(load_texts(TABLE_TEXTS)["flags"]["run_effect"], p=f"{p:.2g}", alpha=f"{alpha:g}",
                n_runs=effect["n_runs"], rates=rates)


def _flagged_caption(caption: str, rows: Sequence[Mapping]) -> str:
    """``caption`` and, for each row with a run-effect flag, one sentence repeating it."""
    template = load_texts(TABLE_TEXTS)["flags"]["caption"]
    flags = [fill(template, arm=r["arm"], opponent=r["opponent"], flag=r["run_effect_flag"])
             for r in rows if r.get("run_effect_flag")]
    return " ".join([caption, *flags])


def _headline_numbers(frame: pd.DataFrame, s: Settings, bar: float) -> dict:
    row = stats.headline_row(
        _stats_view(frame), bar=bar, confidence=s.confidence, n_boot=s.n_boot, seed=s.seed, scenario=SCENARIO
    )
    ci = lambda key, side: row[key][side]
    return {
        "win_rate": row["win_rate"],
        "pooled_rate": row["pooled_rate"],
        "contests": row["n_contests"],
        "scenarios": row["n_scenarios"],
        "runs": row["n_runs"],
        "errors": row["n_errors"],
        "wilson_low": ci("ci_iid_wilson", "low"),
        "wilson_high": ci("ci_iid_wilson", "high"),
        "headline_low": ci(stats.HEADLINE_INTERVAL, "low"),
        "headline_high": ci(stats.HEADLINE_INTERVAL, "high"),
        "headline_method": row[stats.HEADLINE_INTERVAL]["method"],
        "logit_jackknife_low": ci("ci_logit_jackknife", "low"),
        "logit_jackknife_high": ci("ci_logit_jackknife", "high"),
        "cluster_t_low": ci("ci_cluster_t", "low"),
        "cluster_t_high": ci("ci_cluster_t", "high"),
        "boot_low": ci("ci_percentile_bootstrap", "low"),
        "boot_high": ci("ci_percentile_bootstrap", "high"),
        "wild_low": ci("ci_wild_cluster_bootstrap", "low"),
        "wild_high": ci("ci_wild_cluster_bootstrap", "high"),
        "signflip_p_bar": row["sign_flip_vs_bar"]["p_value"],
        "signflip_p_half": row["sign_flip_vs_half"]["p_value"],
        "signflip_min_p": row["sign_flip_vs_bar"]["min_p_value"],
        "bar": bar,
        "clears_bar": bool(ci(stats.HEADLINE_INTERVAL, "low") > bar),
        "scenarios_clearing_bar": row["n_scenarios_clearing_bar"],
        "design_effect": row["design_effect"],
        "effective_n": row["effective_n"],
        "run_effect_p": row["run_effect"].get("p_value"),
        "run_effect_flag": run_effect_flag(row, s.confidence),
        "_row": row,
    }


def _headline_display(s: Settings) -> list:
    """The headline-style tables' displayed columns (intervals as one cell)."""
    return [
        ("arm", ("arm",)), ("opponent", ("opponent",)), ("win rate", ("win_rate",)), ("contests", ("contests",)),
        ("scenarios", ("scenarios",)), (f"headline {percent(s.confidence)} CI", ("headline_low", "headline_high")),
        ("logit jackknife (overclaims when skewed)", ("logit_jackknife_low", "logit_jackknife_high")),
        ("iid Wilson (ignores clustering)", ("wilson_low", "wilson_high")),
        ("cluster bootstrap (under-covers)", ("boot_low", "boot_high")),
        ("sign-flip p vs bar", ("signflip_p_bar",)), ("sign-flip p vs 0.5", ("signflip_p_half",)),
        ("min attainable p", ("signflip_min_p",)), ("scenarios >= bar", ("scenarios_clearing_bar",)),
        ("errors", ("errors",)),
    ]

HEADLINE_COLUMNS = [
    "arm", "opponent", "judge", "pool", "win_rate", "contests", "scenarios", "wilson_low", "wilson_high",
    "headline_low", "headline_high", "headline_method", "logit_jackknife_low", "logit_jackknife_high", "boot_low", "boot_high", "signflip_p_bar",
    "signflip_p_half", "signflip_min_p", "errors", "pooled_rate", "runs", "cluster_t_low", "cluster_t_high",
    "wild_low", "wild_high", "bar", "clears_bar", "scenarios_clearing_bar", "design_effect", "effective_n",
    "run_effect_p", "run_effect_flag", "note",
]


def _rate_rows(contests: pd.DataFrame, pool: str, s: Settings, sources_by_run, *, opponents_first=()) -> tuple[list, list]:
    """One headline-style row per (arm, opponent) of ``pool`` judged by the headline judge."""
    rows, sources = [], []
    part = contests[(contests["pool"] == pool) & (contests["judge"] == s.headline_judge)]
    for arm in _order(part["model"], s.arms):
        for opponent in _order(part.loc[part["model"] == arm, "opponent"], opponents_first):
            frame = part[(part["model"] == arm) & (part["opponent"] == opponent)]
            base = {"arm": arm, "opponent": opponent, "judge": s.headline_judge, "pool": pool}
            try:
                numbers = _headline_numbers(frame, s, s.bar)
                numbers.pop("_row")
                rows.append({**base, **numbers, "note": None})
            except ValueError as exc:
                rows.append({**base, "contests": int((~frame["error"].astype(bool)).sum()),
                             "errors": int(frame["error"].astype(bool).sum()), "note": str(exc)})
            sources.append(_row_sources(frame, sources_by_run))
    return rows, sources


def headline_table(contests: pd.DataFrame, s: Settings, sources_by_run) -> Table:
    rows, sources = _rate_rows(contests, "train", s, sources_by_run, opponents_first=[s.headline_opponent])
    title, caption = _text("headline", s)
    return Table("headline", title, _flagged_caption(caption, rows), stats.ESTIMAND,
                 pd.DataFrame(rows, columns=HEADLINE_COLUMNS), sources, display=_headline_display(s))


def ood_table(contests: pd.DataFrame, s: Settings, sources_by_run) -> Table:
    title, caption = _text("ood", s)
    if not (contests["pool"] == "ood").any():
        return not_computable("ood", title, caption, stats.ESTIMAND, HEADLINE_COLUMNS, "no contests on the ood pool")
    rows, sources = _rate_rows(contests, "ood", s, sources_by_run)
    return Table("ood", title, _flagged_caption(caption, rows), stats.ESTIMAND, pd.DataFrame(rows, columns=HEADLINE_COLUMNS), sources,
                 display=_headline_display(s))


def per_scenario_table(contests: pd.DataFrame, s: Settings, sources_by_run) -> Table:
    rows, sources = [], []
    part = contests[contests["judge"] == s.headline_judge]
    for (arm, opponent, pool), frame in part.groupby(["model", "opponent", "pool"], sort=True):
        summary = stats.scenario_summary(_stats_view(frame), SCENARIO)
        for scenario, r in summary.iterrows():
            n, k = int(r["n"]), float(r["sum"])
            low, high = stats.wilson_interval(k, n, s.confidence) if n else (np.nan, np.nan)
            rows.append({
                "arm": arm, "opponent": opponent, "judge": s.headline_judge, "vignette_id": str(scenario),
                "pool": pool, "n_contests": n, "win_rate": r["win_rate"], "ci_low": low, "ci_high": high,
                "errors": int(r["n_errors"]), "clears_bar": bool(n and r["win_rate"] >= s.bar),
            })
            sources.append(_row_sources(frame[frame[SCENARIO] == scenario], sources_by_run))
    title, caption = _text("per_scenario", s)
    columns = ["arm", "opponent", "judge", "vignette_id", "pool", "n_contests", "win_rate", "ci_low", "ci_high",
               "errors", "clears_bar"]
    display = [("arm", ("arm",)), ("opponent", ("opponent",)), ("pool", ("pool",)), ("scenario", ("vignette_id",)),
               ("contests", ("n_contests",)), ("win rate", ("win_rate",)), (f"Wilson {percent(s.confidence)} CI", ("ci_low", "ci_high")),
               ("errors", ("errors",)), (">= bar", ("clears_bar",))]
    return Table("per_scenario", title, caption, "win rate of one scenario (all runs pooled)",
                 pd.DataFrame(rows, columns=columns), sources, display=display)


def per_run_table(contests: pd.DataFrame, s: Settings, sources_by_run) -> Table:
    rows, sources = [], []
    part = contests[(contests["judge"] == s.headline_judge) & (contests["pool"] == "train")]
    for arm in _order(part["model"], s.arms):
        for opponent in _order(part.loc[part["model"] == arm, "opponent"], [s.headline_opponent]):
            pair = part[(part["model"] == arm) & (part["opponent"] == opponent)]
            view = _stats_view(pair)
            try:
                effect = stats.run_effect_test(stats.scenario_run_table(view, SCENARIO))
                effect_p, effect_f, effect_note = effect.p_value, effect.statistic, None
            except ValueError as exc:
                effect_p = effect_f = np.nan
                effect_note = f"run effect not testable: {exc}"
            for run, frame in pair.groupby("run", sort=True):
                summary = stats.scenario_summary(_stats_view(frame), SCENARIO)
                scored = summary[summary["n"] > 0]
                means = scored["win_rate"].to_numpy(dtype=float)
                n = int(scored["n"].sum())
                low = high = np.nan
                note = effect_note
                if len(means) >= 2:
                    low, high = stats.cluster_korn_graubard_interval(means, n, s.confidence)
                else:
                    note = f"fewer than 2 scored scenarios in run {run}"
                rows.append({
                    "arm": arm, "opponent": opponent, "judge": s.headline_judge, "run": run, "n_contests": n,
                    "win_rate": float(means.mean()) if len(means) else np.nan,
                    "ci_low": low, "ci_high": high,
                    "pooled_rate": float(scored["sum"].sum() / n) if n else np.nan,
                    "scenarios": int(len(means)), "errors": int(summary["n_errors"].sum()),
                    "run_effect_p": effect_p, "run_effect_F": effect_f,
                    "run_effect_method": "two-way ANOVA on scenario x run cell means (F test for run)",
                    "note": note,
                })
                sources.append(_row_sources(frame, sources_by_run))
    title, caption = _text("per_run", s)
    columns = ["arm", "opponent", "judge", "run", "n_contests", "win_rate", "ci_low", "ci_high", "pooled_rate",
               "scenarios", "errors", "run_effect_p", "run_effect_F", "run_effect_method", "note"]
    display = [("arm", ("arm",)), ("opponent", ("opponent",)), ("run", ("run",)), ("contests", ("n_contests",)),
               ("win rate", ("win_rate",)), (f"headline {percent(s.confidence)} CI", ("ci_low", "ci_high")),
               ("errors", ("errors",)), ("run effect p", ("run_effect_p",))]
    return Table("per_run", title, caption,
                 "equally weighted mean of one run's scenario win rates", pd.DataFrame(rows, columns=columns), sources,
                 display=display)


H2H_COLUMNS = [
    "kind", "arm", "versus", "opponent", "pool", "judge", "estimate", "ci_low", "ci_high", "ci_method",
    "null", "signflip_p", "signflip_min_p", "scenarios", "contests", "errors", "cluster_t_low", "cluster_t_high",
    "note",
]


def _paired_rows(contests: pd.DataFrame, pool: str, s: Settings, sources_by_run) -> tuple[list, list]:
    rows, sources = [], []
    part = contests[(contests["pool"] == pool) & (contests["judge"] == s.headline_judge)]
    arms = [a for a in _order(part["model"], s.arms) if a in s.arms]  # seeds and best-of-N: tables of their own
    for i, arm in enumerate(arms):
        for other in arms[i + 1:]:
            shared = set(part.loc[part["model"] == arm, "opponent"]) & set(part.loc[part["model"] == other, "opponent"])
            for opponent in _order(shared, [s.headline_opponent]):
                if opponent in (f"arm:{arm}", f"arm:{other}"):
                    continue
                frame = part[part["model"].isin([arm, other]) & (part["opponent"] == opponent)]
                base = {"kind": "paired", "arm": arm, "versus": other, "opponent": opponent, "pool": pool,
                        "judge": s.headline_judge, "null": 0.0,
                        "contests": int((~frame["error"].astype(bool)).sum()),
                        "errors": int(frame["error"].astype(bool).sum())}
                try:
                    result = stats.paired_comparison(_stats_view(frame), arm, other, opponent=opponent,
                                                     confidence=s.confidence, scenario=SCENARIO)
                    rows.append({**base, "estimate": result["mean_difference"], "ci_low": result["ci"]["low"],
                                 "ci_high": result["ci"]["high"], "ci_method": result["ci"]["method"],
                                 "signflip_p": result["sign_flip"]["p_value"],
                                 "signflip_min_p": result["sign_flip"]["min_p_value"],
                                 "scenarios": result["n_scenarios"],
                                 "note": ("scenarios dropped: " + ", ".join(result["scenarios_dropped"]))
                                 if result["scenarios_dropped"] else None})
                except ValueError as exc:
                    rows.append({**base, "note": str(exc)})
                sources.append(_row_sources(frame, sources_by_run))
    return rows, sources


def head_to_head_table(contests: pd.DataFrame, s: Settings, sources_by_run) -> Table:
    rows, sources = [], []
    part = contests[(contests["pool"] == "train") & (contests["judge"] == s.headline_judge)]
    for arm in [a for a in _order(part["model"], s.arms) if a in s.arms]:  # seeds, best-of-N: tables of their own
        for opponent in _order(part.loc[part["model"] == arm, "opponent"]):
            if opponent == s.headline_opponent:
                continue
            frame = part[(part["model"] == arm) & (part["opponent"] == opponent)]
            versus = opponent.removeprefix("arm:")
            base = {"kind": "direct", "arm": arm, "versus": versus, "opponent": opponent, "pool": "train",
                    "judge": s.headline_judge, "null": 0.5}
            try:
                n = _headline_numbers(frame, s, 0.5)
                rows.append({**base, "estimate": n["win_rate"], "ci_low": n["headline_low"],
                             "ci_high": n["headline_high"], "ci_method": n["headline_method"],
                             "signflip_p": n["signflip_p_half"], "signflip_min_p": n["signflip_min_p"],
                             "scenarios": n["scenarios"], "contests": n["contests"], "errors": n["errors"],
                             "cluster_t_low": n["cluster_t_low"], "cluster_t_high": n["cluster_t_high"],
                             "note": None})
            except ValueError as exc:
                rows.append({**base, "note": str(exc)})
            sources.append(_row_sources(frame, sources_by_run))
    for pool in ("train", "ood"):
        more_rows, more_sources = _paired_rows(contests, pool, s, sources_by_run)
        rows += more_rows
        sources += more_sources
    title, caption = _text("head_to_head", s)
    estimand = ("direct: equally weighted mean of scenario win rates against that model; paired: mean over "
                "scenarios of the difference of the two arms' scenario win rates")
    display = [("kind", ("kind",)), ("arm", ("arm",)), ("versus", ("versus",)), ("opponent", ("opponent",)),
               ("pool", ("pool",)), ("estimate", ("estimate",)), (f"{percent(s.confidence)} CI", ("ci_low", "ci_high")),
               ("sign-flip p", ("signflip_p",)), ("scenarios", ("scenarios",)), ("contests", ("contests",))]
    # (signflip_min_p, the smallest p attainable at this many scenarios, is in the CSV; the caption says it)
    return Table("head_to_head", title, caption, estimand,
                 pd.DataFrame(rows, columns=H2H_COLUMNS), sources, display=display)


def reward_path_gap_table(contests: pd.DataFrame, s: Settings, sources_by_run) -> Table:
    title, caption = _text("reward_path_gap", s)
    estimand = "mean over scenarios of (reward-path win rate - held-out win rate) on the same contests"
    columns = ["arm", "opponent", "pool", "reward_path_judge", "heldout_judge", "reward_path_win_rate",
               "heldout_win_rate", "gap", "gap_ci_low", "gap_ci_high", "gap_signflip_p", "reading", "scenarios",
               "contests", "note"]
    kinds = contests["judge_kind"].astype(str)
    if not (kinds == "reward_path").any():
        return not_computable("reward_path_gap", title, caption, estimand, columns,
                              "no reward-path judgments in the contests tables")
    heldout_judges = _order(contests.loc[kinds.isin(["heldout", "consensus"]), "judge"], [s.headline_judge])
    rows, sources = [], []
    keys = ["run", "contest_id", SCENARIO, "model", "opponent", "pool"]
    for rp_judge in _order(contests.loc[kinds == "reward_path", "judge"]):
        rp = contests[(contests["judge"] == rp_judge) & ~contests["error"].astype(bool)]
        for ho_judge in heldout_judges:
            ho = contests[(contests["judge"] == ho_judge) & ~contests["error"].astype(bool)]
            both = rp[keys + ["score"]].merge(ho[keys + ["score"]], on=keys, suffixes=("_rp", "_ho"))
            for (arm, opponent, pool), frame in both.groupby(["model", "opponent", "pool"], sort=True):
                by = frame.groupby(SCENARIO)[["score_rp", "score_ho"]].mean()
                diff = (by["score_rp"] - by["score_ho"]).to_numpy(dtype=float)
                row = {"arm": arm, "opponent": opponent, "pool": pool, "reward_path_judge": rp_judge,
                       "heldout_judge": ho_judge, "reward_path_win_rate": float(by["score_rp"].mean()),
                       "heldout_win_rate": float(by["score_ho"].mean()), "gap": float(diff.mean()),
                       "scenarios": int(len(by)), "contests": int(len(frame)), "note": None}
                if len(diff) >= 2:
                    row["gap_ci_low"], row["gap_ci_high"] = stats.cluster_t_interval(diff, s.confidence,
                                                                                     bounds=(-1.0, 1.0))
                    row["gap_signflip_p"] = stats.sign_flip_test(diff, null=0.0).p_value
                    row["reading"] = _gap_reading(rp_judge, ho_judge, row["gap_ci_low"], row["gap_ci_high"])
                else:
                    row["note"] = "fewer than 2 scenarios scored by both"
                rows.append(row)
                sources.append(_row_sources(frame, sources_by_run))
    display = [("arm", ("arm",)), ("opponent", ("opponent",)), ("reward path", ("reward_path_judge",)),
               ("held-out judge", ("heldout_judge",)), ("reward-path win rate", ("reward_path_win_rate",)),
               ("held-out win rate", ("heldout_win_rate",)), ("gap", ("gap",)),
               (f"gap {percent(s.confidence)} CI", ("gap_ci_low", "gap_ci_high")), ("sign-flip p", ("gap_signflip_p",)),
               ("reading", ("reading",)), ("contests", ("contests",))]
    return Table("reward_path_gap", title, caption, estimand, pd.DataFrame(rows, columns=columns), sources,
                 display=display)


def _gap_reading(rp_judge: str, ho_judge: str, low: float, high: float) -> str:
    """Which way a reward-path member disagrees with the held-out judge (by the gap interval)."""
    if low > 0:
        return f"{rp_judge} rates the arm higher than {ho_judge}"
    if high < 0:
        return f"{rp_judge} rates the arm lower than {ho_judge}"
    return "no disagreement detectable at this number of scenarios"


def ablation_table(contests: pd.DataFrame, s: Settings, sources_by_run, health: Mapping[str, Mapping] | None = None,
                   health_sources: Mapping[str, Sequence[str]] | None = None) -> Table:
    health = health or {}
    health_sources = health_sources or {}
    part = contests[(contests["pool"] == "train") & (contests["judge"] == s.headline_judge)
                    & (contests["opponent"] == s.headline_opponent)]
    rows, sources = [], []
    base_frame = part[part["model"] == s.headline_arm]
    for arm in [a for a in _order(part["model"], s.arms) if a in s.arms]:
        frame = part[part["model"] == arm]
        spec = dict(s.arm_specs.get(arm, {}))
        row = {"arm": arm, "reward": None if spec.get("external") else spec.get("reward"),
               "seeds": len(spec["seeds"]) if not spec.get("external") else None,
               "w_rm": spec.get("w_rm"), "w_grm": spec.get("w_grm"), "lam": spec.get("lam"),
               "external": spec.get("external"), "health": (health.get(arm) or {}).get("verdict"), "note": None}
        try:
            n = _headline_numbers(frame, s, s.bar)
            row.update(win_rate=n["win_rate"], headline_low=n["headline_low"], headline_high=n["headline_high"],
                       contests=n["contests"], scenarios=n["scenarios"])
        except ValueError as exc:
            row["note"] = str(exc)
        row_sources = set(_row_sources(frame, sources_by_run)) | set(health_sources.get(arm, ()))
        if arm != s.headline_arm and not base_frame.empty:
            try:
                both = pd.concat([base_frame, frame])
                result = stats.paired_comparison(_stats_view(both), arm, s.headline_arm, opponent=s.headline_opponent,
                                                 confidence=s.confidence, scenario=SCENARIO)
                row.update(diff_vs_headline_arm=result["mean_difference"], diff_ci_low=result["ci"]["low"],
                           diff_ci_high=result["ci"]["high"], diff_signflip_p=result["sign_flip"]["p_value"])
                row_sources |= set(_row_sources(base_frame, sources_by_run))
            except ValueError as exc:
                row["note"] = str(exc)
        rows.append(row)
        sources.append(tuple(row_sources))
    title, caption = _text("ablation", s)
    level = percent(s.confidence)
    columns = ["arm", "reward", "seeds", "w_rm", "w_grm", "lam", "external", "health", "win_rate", "headline_low",
               "headline_high",
               "contests", "scenarios", "diff_vs_headline_arm", "diff_ci_low", "diff_ci_high", "diff_signflip_p",
               "note"]
    display = [("arm", ("arm",)), ("reward", ("reward",)), ("seeds", ("seeds",)), ("w_rm", ("w_rm",)),
               ("w_grm", ("w_grm",)), ("health", ("health",)),
               ("win rate", ("win_rate",)), (f"headline {level} CI", ("headline_low", "headline_high")),
               (f"minus {s.headline_arm}", ("diff_vs_headline_arm",)), (f"{level} CI", ("diff_ci_low", "diff_ci_high")),
               ("sign-flip p", ("diff_signflip_p",))]
    return Table("ablation", title, caption,
                 f"{stats.ESTIMAND}; diff: mean over scenarios of (arm - {s.headline_arm})",
                 pd.DataFrame(rows, columns=columns), sources, display=display)


LENGTH_COLUMNS = tuple(CONTEST_LENGTH_COLUMNS)


def _length_frames(contests: pd.DataFrame, arms: Sequence[str]):
    """(judge, arm, opponent, pool, frame) of the ``arms``' scored contests that carry both answers' lengths."""
    if not set(LENGTH_COLUMNS) <= set(contests.columns):
        return
    part = contests[~contests["error"].astype(bool) & contests["model"].isin(list(arms))]
    part = part.dropna(subset=list(LENGTH_COLUMNS))
    part = part[part["judge_kind"].astype(str) != "consensus"]
    for key, frame in part.groupby(["judge", "model", "opponent", "pool"], sort=True):
        yield (*key, frame)


def length_bias_table(contests: pd.DataFrame, s: Settings, sources_by_run) -> Table:
    title, caption = _text("length_bias", s)
    estimand = f"{stats.ESTIMAND}; longer-wins share: pooled over decided contests"
    columns = ["judge", "arm", "opponent", "pool", "contests", "decided_unequal", "longer_wins_share",
               "mean_length_diff", "win_rate", "lc_win_rate", "length_coef", "scenarios", "note"]
    rows, sources = [], []
    for judge, arm, opponent, pool, frame in _length_frames(contests, s.arms):
        diff = frame["model_words"].astype(float) - frame["opponent_words"].astype(float)
        share, decided = stats.longer_wins_share(frame["score"], diff)
        row = {"judge": judge, "arm": arm, "opponent": opponent, "pool": pool, "contests": int(len(frame)),
               "decided_unequal": decided, "longer_wins_share": share if decided else None,
               "mean_length_diff": float(diff.mean()), "note": None}
        fit = stats.length_controlled_win_rate(frame["score"], diff, frame[SCENARIO])
        row.update(win_rate=fit["raw_win_rate"], lc_win_rate=fit["lc_win_rate"], length_coef=fit["length_coef"],
                   scenarios=fit["scenarios"])
        if not fit["converged"]:
            row["note"] = "the logistic fit did not converge"
        rows.append(row)
        sources.append(_row_sources(frame, sources_by_run))
    if not rows:
        return not_computable("length_bias", title, caption, estimand, columns,
                              "the contests tables carry no answer lengths (model_words, opponent_words)")
    display = [("judge", ("judge",)), ("arm", ("arm",)), ("opponent", ("opponent",)), ("pool", ("pool",)),
               ("longer wins", ("longer_wins_share",)), ("decided", ("decided_unequal",)),
               ("mean length diff", ("mean_length_diff",)), ("win rate", ("win_rate",)),
               ("length-controlled", ("lc_win_rate",)), ("length coef", ("length_coef",))]
    return Table("length_bias", title, caption, estimand, pd.DataFrame(rows, columns=columns), sources,
                 display=display)


def length_bins_table(contests: pd.DataFrame, s: Settings, sources_by_run) -> Table:
    title, caption = _text("length_bins", s)
    estimand = "pooled win rate of the contests in the bin (no clustering; descriptive)"
    columns = ["judge", "arm", "opponent", "pool", "bin", "low", "high", "contests", "win_rate"]
    rows, sources = [], []
    for judge, arm, opponent, pool, frame in _length_frames(contests, s.arms):
        diff = frame["model_words"].astype(float) - frame["opponent_words"].astype(float)
        bins = stats.win_rate_by_length_bin(frame["score"], diff)
        for b in bins.to_dict("records"):
            rows.append({"judge": judge, "arm": arm, "opponent": opponent, "pool": pool, **b,
                         "win_rate": None if np.isnan(b["win_rate"]) else b["win_rate"]})
            sources.append(_row_sources(frame, sources_by_run))
    if not rows:
        return not_computable("length_bins", title, caption, estimand, columns,
                              "the contests tables carry no answer lengths (model_words, opponent_words)")
    display = [("judge", ("judge",)), ("arm", ("arm",)), ("opponent", ("opponent",)), ("pool", ("pool",)),
               ("length diff (words)", ("bin",)), ("contests", ("contests",)), ("win rate", ("win_rate",))]
    return Table("length_bins", title, caption, estimand, pd.DataFrame(rows, columns=columns), sources,
                 display=display)
