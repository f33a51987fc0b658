"""Seeds, best-of-N systems, the selection and the pre-registered confirmation as tables (pure).

*Seeds*: an arm trained with several seeds has one row per seed and a pooled
row. The pooled row's contests are every seed's, relabelled with the arm's
name (:func:`pooled_contests`); its estimand is the mean over the arm's
seeds of the equally weighted mean of the scenario win rates (each seed
plays the same number of contests per scenario). Scenarios stay the
clusters, so the interval is conditional on these seeds: the seed-to-seed
spread is not in it; the per-seed rows and a seed-effect test (two-way
ANOVA on scenario x seed cell means) show it instead.

*Best-of-N*: each system against the headline opponent on the study
scenarios and against the confirmation opponent on the selection pool,
beside its arm's single pass, paired by scenario, with its compute (N
generations and N scorings per answer; generated tokens per answer from the
candidates files).

*Selection and confirmation*: every candidate's selection-pool estimate,
the one the pre-registration selected, and its confirmation estimate beside
the expected selection inflation.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pandas as pd

from reappraisal import stats
from reappraisal.confirm.attempts import describe

from .evaluation_tables import SCENARIO, Settings, _headline_numbers, _row_sources, _stats_view, _text
from .summary_table import Table, not_computable
from .texts import percent

ARM_PREFIX = "arm:"


def pooled_contests(contests: pd.DataFrame, groups: Mapping[str, Sequence[str]]) -> pd.DataFrame:
    """``contests`` plus, for every pooled group, copies of its members' contests relabelled with the pooled
    name, as the model and as a head-to-head opponent (``arm:<member>``)."""
    member_of = {m: pooled for pooled, members in groups.items() for m in members}
    if not member_of:
        return contests
    opp_arm = contests["opponent"].astype(str).str.removeprefix(ARM_PREFIX)
    is_arm_opp = contests["opponent"].astype(str).str.startswith(ARM_PREFIX)
    touched = contests["model"].isin(list(member_of)) | (is_arm_opp & opp_arm.isin(list(member_of)))
    copy = contests[touched].copy()
    copy["model"] = copy["model"].map(lambda m: member_of.get(m, m))
    copy["opponent"] = [ARM_PREFIX + member_of[o.removeprefix(ARM_PREFIX)]
                        if o.startswith(ARM_PREFIX) and o.removeprefix(ARM_PREFIX) in member_of else o
                        for o in copy["opponent"].astype(str)]
    return pd.concat([contests, copy], ignore_index=True)


def _level(name: str, groups: Mapping[str, Sequence[str]]) -> str:
    """``seed`` for a member of a pooled group, ``arm`` otherwise (a pooled row, or a system with one seed)."""
    return "seed" if any(name in members for members in groups.values()) else "arm"


def _rate(frame: pd.DataFrame, s: Settings, bar: float) -> dict:
    try:
        n = _headline_numbers(frame, s, bar)
        return {"win_rate": n["win_rate"], "ci_low": n["headline_low"], "ci_high": n["headline_high"],
                "contests": n["contests"], "scenarios": n["scenarios"], "note": None}
    except ValueError as exc:
        return {"contests": int((~frame["error"].astype(bool)).sum()), "note": str(exc)}


def _paired(frame: pd.DataFrame, a: str, b: str, opponent: str, s: Settings) -> dict:
    try:
        r = stats.paired_comparison(_stats_view(frame), a, b, opponent=opponent, confidence=s.confidence,
                                    scenario=SCENARIO)
        return {"diff": r["mean_difference"], "diff_ci_low": r["ci"]["low"], "diff_ci_high": r["ci"]["high"],
                "diff_signflip_p": r["sign_flip"]["p_value"]}
    except ValueError as exc:
        return {"diff_note": str(exc)}


SEEDS_COLUMNS = ["arm", "seed", "level", "opponent", "win_rate", "ci_low", "ci_high", "contests", "scenarios",
                 "seeds", "seed_effect_p", "seed_effect_F", "note"]


def seeds_table(contests: pd.DataFrame, s: Settings, sources_by_run, groups: Mapping[str, Sequence[str]],
                seeds: Mapping[str, int]) -> Table:
    """Per-seed rows and the pooled row of every arm trained with several seeds (vs the headline opponent)."""
    title, caption = _text("seeds", s)
    estimand = ("seed rows: equally weighted mean of the scenario win rates; pooled: the mean of that over the "
                "arm's seeds, scenario-clustered and conditional on these seeds")
    arm_groups = {k: v for k, v in groups.items() if all(m in seeds for m in v)}
    if not arm_groups:
        return not_computable("seeds", title, caption, estimand, SEEDS_COLUMNS, "no arm is trained with several seeds")
    part = contests[(contests["pool"] == "train") & (contests["judge"] == s.headline_judge)
                    & (contests["opponent"] == s.headline_opponent)]
    rows, sources = [], []
    for arm, members in arm_groups.items():
        for member in members:
            frame = part[part["model"] == member]
            rows.append({"arm": arm, "seed": str(seeds[member]), "level": "seed", "opponent": s.headline_opponent,
                         "seeds": 1, **_rate(frame, s, s.bar)})
            sources.append(_row_sources(frame, sources_by_run))
        frame = part[part["model"] == arm]
        row = {"arm": arm, "seed": "pooled", "level": "arm", "opponent": s.headline_opponent, "seeds": len(members),
               **_rate(frame, s, s.bar)}
        members_frame = part[part["model"].isin(members)].copy()
        members_frame["run"] = members_frame["model"]  # cells: scenario x seed
        try:
            effect = stats.run_effect_test(stats.scenario_run_table(_stats_view(members_frame), SCENARIO))
            row.update(seed_effect_p=effect.p_value, seed_effect_F=effect.statistic)
        except ValueError as exc:
            row["note"] = f"seed effect not testable: {exc}"
        rows.append(row)
        sources.append(_row_sources(frame, sources_by_run))
    level = percent(s.confidence)
    display = [("arm", ("arm",)), ("seed", ("seed",)), ("win rate", ("win_rate",)),
               (f"headline {level} CI", ("ci_low", "ci_high")), ("contests", ("contests",)),
               ("scenarios", ("scenarios",)), ("seed effect p", ("seed_effect_p",))]
    return Table("seeds", title, caption, estimand, pd.DataFrame(rows, columns=SEEDS_COLUMNS), sources,
                 display=display)


BEST_OF_N_COLUMNS = ["system", "arm", "single_pass", "scorer", "n", "level", "pool", "opponent", "win_rate", "ci_low",
                     "ci_high", "single_pass_win_rate", "diff", "diff_ci_low", "diff_ci_high", "diff_signflip_p",
                     "generations_per_answer", "scorer_calls_per_answer", "generated_tokens_per_answer",
                     "kept_tokens_per_answer", "contests", "scenarios", "note"]


def best_of_n_table(contests: pd.DataFrame, s: Settings, sources_by_run, systems: Mapping[str, Mapping[str, Any]],
                    candidates: pd.DataFrame | None, candidate_sources: Sequence[str], *, opponent_ood: str) -> Table:
    """Each best-of-N system beside its single pass (``systems``: name -> {single_pass, arm, scorer, n, level,
    scorer_calls, members})."""
    title, caption = _text("best_of_n", s)
    estimand = ("win rate: equally weighted mean of the scenario win rates; diff: mean over scenarios of "
                "(best-of-N - single pass), paired by scenario")
    if not systems:
        return not_computable("best_of_n", title, caption, estimand, BEST_OF_N_COLUMNS,
                              "no best-of-N system is declared (evaluation.best_of_n)")
    rows, sources = [], []
    part = contests[(contests["judge"] == s.headline_judge)]
    for name, spec in systems.items():
        members = spec.get("members") or [name]
        tokens = kept = None
        if candidates is not None and not candidates.empty:
            mine = candidates[candidates["system"].isin(members)]
            answers = int(mine["kept"].sum())
            if answers:
                tokens = float(mine["completion_tokens"].sum()) / answers
                kept = float(mine.loc[mine["kept"], "completion_tokens"].sum()) / answers
        for pool, opponent in (("train", s.headline_opponent), ("ood", opponent_ood)):
            here = part[(part["pool"] == pool) & (part["opponent"] == opponent)]
            frame = here[here["model"] == name]
            if frame.empty:
                continue
            single = here[here["model"] == spec["single_pass"]]
            row = {"system": name, "arm": spec["arm"], "single_pass": spec["single_pass"], "scorer": spec["scorer"],
                   "n": spec["n"], "level": spec["level"], "pool": pool, "opponent": opponent,
                   "generations_per_answer": spec["n"], "scorer_calls_per_answer": spec["scorer_calls"],
                   "generated_tokens_per_answer": tokens, "kept_tokens_per_answer": kept, **_rate(frame, s, 0.5)}
            row["single_pass_win_rate"] = _rate(single, s, 0.5).get("win_rate")
            paired = _paired(pd.concat([frame, single]), name, spec["single_pass"], opponent, s)
            if "diff_note" in paired:
                row["note"] = "; ".join(filter(None, [row.get("note"), paired.pop("diff_note")]))
            row.update(paired)
            rows.append(row)
            sources.append(tuple(set(_row_sources(pd.concat([frame, single]), sources_by_run)) | set(candidate_sources)))
    level = percent(s.confidence)
    display = [("system", ("system",)), ("pool", ("pool",)), ("opponent", ("opponent",)), ("N", ("n",)),
               ("win rate", ("win_rate",)), (f"{level} CI", ("ci_low", "ci_high")),
               ("single pass", ("single_pass_win_rate",)), ("minus single pass", ("diff",)),
               (f"{level} CI ", ("diff_ci_low", "diff_ci_high")), ("sign-flip p", ("diff_signflip_p",)),
               ("generations / answer", ("generations_per_answer",)), ("scorer calls / answer", ("scorer_calls_per_answer",)),
               ("tokens / answer", ("generated_tokens_per_answer",))]
    return Table("best_of_n", title, caption, estimand, pd.DataFrame(rows, columns=BEST_OF_N_COLUMNS), sources,
                 display=display)


SELECTION_COLUMNS = ["system", "level", "opponent", "pool", "win_rate", "ci_low", "ci_high", "contests", "scenarios",
                     "selected", "registered_estimate", "note"]


def selection_table(contests: pd.DataFrame, s: Settings, sources_by_run, preregistration: Mapping | None,
                    prereg_source: str | None) -> Table:
    """Every candidate on the selection pool against the registered opponent; the registered selection marked."""
    title, caption = _text("selection", s)
    estimand = "equally weighted mean of the selection pool's scenario win rates (runs pooled)"
    if not preregistration:
        return not_computable("selection", title, caption, estimand, SELECTION_COLUMNS,
                              "no pre-registration (evaluation.confirmation_pool.enabled is false)")
    sel = preregistration["selection"]
    opponent, judge = preregistration["opponent"], preregistration["judge"]
    part = contests[(contests["pool"] == sel["pool"]) & (contests["judge"] == judge)
                    & (contests["opponent"] == opponent)]
    rows, sources = [], []
    for name in sel["candidates"]:
        frame = part[part["model"] == name]
        row = {"system": name, "level": "candidate", "opponent": opponent, "pool": sel["pool"],
               "selected": name == preregistration["selected_system"],
               "registered_estimate": sel["estimates"].get(name), **_rate(frame, s, 0.5)}
        rows.append(row)
        sources.append(tuple(set(_row_sources(frame, sources_by_run)) | {prereg_source}))
    level = percent(s.confidence)
    display = [("system", ("system",)), ("win rate", ("win_rate",)), (f"headline {level} CI", ("ci_low", "ci_high")),
               ("contests", ("contests",)), ("scenarios", ("scenarios",)), ("selected", ("selected",))]
    return Table("selection", title, caption, estimand, pd.DataFrame(rows, columns=SELECTION_COLUMNS), sources,
                 display=display)


CONFIRMATION_COLUMNS = ["system", "opponent", "judge", "candidates", "selection_scenarios", "selection_estimate",
                        "expected_inflation", "shrunk_estimate", "scenarios", "contests", "win_rate", "ci_low",
                        "ci_high", "cluster_t_low", "cluster_t_high", "bar", "signflip_p_bar", "signflip_min_p", "verdict", "drop_from_selection",
                        "interval_method", "preregistered_on", "attempts", "attempts_flag"]


def confirmation_table(s: Settings, result: Mapping | None, preregistration: Mapping | None,
                       sources: Sequence[str]) -> Table:
    """The registered system: selection estimate, expected inflation, confirmation estimate and the test."""
    title, caption = _text("confirmation", s)
    estimand = "equally weighted mean of the confirmation pool's scenario win rates (runs pooled)"
    if not result or not preregistration:
        return not_computable("confirmation", title, caption, estimand, CONFIRMATION_COLUMNS,
                              "no confirmation (evaluation.confirmation_pool.enabled is false)")
    row = {k: result.get(k) for k in CONFIRMATION_COLUMNS if k in result and k != "attempts"}
    attempts = list(result.get("attempts") or [])
    earlier = [a for a in attempts if (a.get("pool"), a.get("preregistration_sha256"))
               != (result.get("pool"), result.get("preregistration_sha256"))]
    row.update(preregistered_on=str(preregistration.get("date")), attempts=max(1, len(attempts)),
               attempts_flag=("earlier attempts, on other pools: " + "; ".join(describe(a) for a in earlier))
               if earlier else None)
    note = ("Attempts in the ledger, oldest first: " + "; ".join(
        f"({i}) {describe(a)}{' (this result)' if a not in earlier else ''}" for i, a in enumerate(attempts, 1))
            + ".") if attempts else None
    display = [("system", ("system",)), ("opponent", ("opponent",)), ("of K candidates", ("candidates",)),
               ("selection estimate", ("selection_estimate",)), ("expected inflation", ("expected_inflation",)),
               ("selection - inflation", ("shrunk_estimate",)), ("confirmation win rate", ("win_rate",)),
               (f"{percent(float(result['confidence']))} CI", ("ci_low", "ci_high")), ("bar", ("bar",)),
               ("sign-flip p vs bar", ("signflip_p_bar",)), ("verdict", ("verdict",)),
               ("attempts (ledger)", ("attempts",))]
    return Table("confirmation", title, caption, estimand, pd.DataFrame([row], columns=CONFIRMATION_COLUMNS),
                 [tuple(sources)], note=note, display=display)
