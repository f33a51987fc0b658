"""The summarize stage end to end: a 720-contest evaluation built here flows through
the real command, and every headline number equals an independent computation."""

from __future__ import annotations

import dataclasses
import itertools
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from reappraisal.cli import main
from reappraisal.summary.lineage import NOT_DVC

from . import fixtures as fx

REPO = Path(__file__).resolve().parents[2]


def run_summarize(root: Path, params: dict | None = None) -> int:
    confirm = root / "results/confirm"
    confirm_args = [arg for flag, name in (("--preregistration", "preregistration.yaml"),
                                           ("--confirmation", "confirmation.json"),
                                           ("--confirmation-contests", "contests.parquet"))
                    if (confirm / name).is_file() for arg in (flag, str(confirm / name))]
    return main([
        "summarize", "--evaluation-dir", str(root / "results/evaluation"), "--policy-dir", str(root / "results/policy"),
        "--judge-calibration", str(root / "results/evaluation/judge_calibration.json"),
        "--reward-metrics", str(root / "results/reward/metrics.json"),
        "--grm-metrics", str(root / "results/grm/metrics.json"), "--claims", str(root / "claims.yaml"),
        "--out-tables", str(root / "results/summary/tables"), "--out-claims", str(root / "results/summary/claims.json"),
        "--root", str(root), "--params", json.dumps(params or fx.params()), *confirm_args,
    ])


def make_workspace(root: Path, **kwargs) -> dict:
    evals = fx.write_evals(root, **kwargs)
    if "matchups" not in kwargs:  # the default matchups play the selection pool
        fx.write_confirmation(root, evals)
    fx.write_metrics(root)
    fx.write_policies(root)
    shutil.copy(REPO / "claims.yaml", root / "claims.yaml")
    return evals


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("summary")
    evals = make_workspace(root)
    assert run_summarize(root) == 0
    return root, evals


def scores_by_hand(evals, arm, opponent, pool="train", judge=fx.HEADLINE_JUDGE) -> pd.DataFrame:
    """Contest scores from the raw judgments with the two-order rule, never via the package."""
    judgments = pd.concat([j for j, _ in evals.values()])
    j = judgments[(judgments["model"] == arm) & (judgments["opponent"] == opponent) & (judgments["pool"] == pool)
                  & (judgments["judge"] == judge)]
    wide = j.pivot_table(index=["run", "contest_id", "vignette_id"], columns="order", values="verdict",
                         aggfunc="first").reset_index()
    wide["score"] = [np.nan if "error" in (a, b) else fx.TWO_ORDER_SCORE[(a, b)]
                     for a, b in zip(wide["AB"], wide["BA"])]
    return wide


def jackknife_by_hand(means, n, stretch=None):
    """Delete-one-scenario jackknife on logit(mean), or on sinh(stretch * logit) / stretch when stretched."""
    g, eps = len(means), 0.5 / n
    logit = lambda p: np.log(np.clip(p, eps, 1 - eps) / (1 - np.clip(p, eps, 1 - eps)))
    h = logit if stretch is None else (lambda p: np.sinh(stretch * logit(p)) / stretch)
    back = (lambda v: v) if stretch is None else (lambda v: np.arcsinh(stretch * v) / stretch)
    pseudo = [g * h(np.mean(means)) - (g - 1) * h(np.mean(np.delete(means, i))) for i in range(g)]
    half = stats.t.ppf(0.975, g - 1) * np.std(pseudo, ddof=1) / np.sqrt(g)
    return tuple(1 / (1 + np.exp(-back(np.mean(pseudo) + s * half))) for s in (-1, 1))


def korn_graubard_by_hand(means, n):
    """Korn & Graubard (1998) from its definition, with the cap near a bound (4 contests a scenario within 0.1 of
    it, times (distance / 0.1)² beyond): statsmodels' Clopper-Pearson (``method="beta"``) at
    n* = min(n, θ(1−θ)/v, 4G·max(1, d/0.1)²)·(z/t_{G-1})²."""
    g, theta = len(means), float(np.mean(means))
    v = np.var(means, ddof=1) / g
    n_eff = min(n, theta * (1 - theta) / v) if v > 0 else n
    n_eff = min(n_eff, 4 * g * max(1.0, min(theta, 1 - theta) / 0.1) ** 2)
    n_star = n_eff * (stats.norm.ppf(0.975) / stats.t.ppf(0.975, g - 1)) ** 2
    return proportion_confint(theta * n_star, n_star, alpha=0.05, method="beta")


def sign_flip_by_hand(means, null):
    d = np.asarray(means) - null
    observed = abs(d.sum())
    hits = sum(abs(sum(s * x for s, x in zip(signs, d))) >= observed - 1e-12
               for signs in itertools.product([-1, 1], repeat=len(d)))
    return hits / 2 ** len(d)


def wild_by_hand(means):
    """Wild cluster bootstrap-t on the scenario means: every Webb weight vector, refit each time."""
    g = len(means)
    theta = means.mean()
    resid = means - theta
    se = np.sqrt(g / (g - 1) * (resid**2).sum()) / g
    weights = [-np.sqrt(1.5), -1, -np.sqrt(0.5), np.sqrt(0.5), 1, np.sqrt(1.5)]
    t = []
    for w in itertools.product(weights, repeat=g):
        star = theta + np.array(w) * resid
        t_star = star.mean()
        t.append((t_star - theta) / (np.sqrt(g / (g - 1) * ((star - t_star) ** 2).sum()) / g))
    lo, hi = np.quantile(t, [0.025, 0.975], method="inverted_cdf")
    return theta - hi * se, theta - lo * se


def test_720_contests_flow_through_summarize_and_every_headline_number_is_reproduced(workspace):
    root, evals = workspace
    scores = scores_by_hand(evals, "committee", "gpt-4-0314")
    assert len(scores) == 720 and scores["vignette_id"].nunique() == 6 and scores["run"].nunique() == 3
    head = pd.read_csv(root / "results/summary/tables/headline.csv")
    row = head[(head["arm"] == "committee") & (head["opponent"] == "gpt-4-0314")].iloc[0]

    scored = scores.dropna(subset=["score"])
    means = scored.groupby("vignette_id")["score"].mean().to_numpy()
    n, g = len(scored), len(means)
    theta = means.mean()
    assert (row["contests"], row["scenarios"], row["errors"], row["runs"]) == (n, 6, 720 - n, 3)
    assert row["win_rate"] == pytest.approx(theta, abs=1e-12)
    assert row["pooled_rate"] == pytest.approx(scored["score"].mean(), abs=1e-12)
    assert (row["wilson_low"], row["wilson_high"]) == pytest.approx(
        proportion_confint(theta * n, n, alpha=0.05, method="wilson"), abs=1e-12)
    assert row["headline_method"] == "cluster_korn_graubard"
    assert (row["headline_low"], row["headline_high"]) == pytest.approx(korn_graubard_by_hand(means, n), abs=1e-12)
    assert (row["logit_jackknife_low"], row["logit_jackknife_high"]) == pytest.approx(
        jackknife_by_hand(means, n), abs=1e-12)
    t_ci = stats.ttest_1samp(means, 0).confidence_interval(0.95)
    assert (row["cluster_t_low"], row["cluster_t_high"]) == pytest.approx((t_ci.low, t_ci.high), abs=1e-12)
    resamples = [means[list(draw)].mean() for draw in itertools.product(range(g), repeat=g)]
    boot = np.quantile(resamples, [0.025, 0.975], method="inverted_cdf")
    assert (row["boot_low"], row["boot_high"]) == pytest.approx(tuple(boot), abs=1e-12)
    assert (row["wild_low"], row["wild_high"]) == pytest.approx(wild_by_hand(means), abs=1e-9)
    assert row["signflip_p_bar"] == pytest.approx(sign_flip_by_hand(means, 0.608))
    assert row["signflip_p_half"] == pytest.approx(sign_flip_by_hand(means, 0.5))
    assert row["signflip_min_p"] == pytest.approx(2 / 64)
    assert row["bar"] == 0.608 and bool(row["clears_bar"]) == (row["headline_low"] > 0.608)
    assert row["scenarios_clearing_bar"] == int((means >= 0.608).sum())
    sizes = scored.groupby("vignette_id").size().to_numpy()
    var_iid = scored["score"].var(ddof=1) * (1 / sizes).sum() / g**2
    assert row["design_effect"] == pytest.approx(means.var(ddof=1) / g / var_iid, rel=1e-10)
    assert row["effective_n"] == pytest.approx(scored["score"].var(ddof=1) / (means.var(ddof=1) / g), rel=1e-10)
    cells = scored.groupby(["vignette_id", "run"])["score"].mean().rename("y").reset_index()
    anova = sm.stats.anova_lm(smf.ols("y ~ C(vignette_id) + C(run)", data=cells).fit(), typ=2)
    assert row["run_effect_p"] == pytest.approx(anova.loc["C(run)", "PR(>F)"], rel=1e-9)


def test_per_scenario_and_per_run_tables_match_independent_computation(workspace):
    root, evals = workspace
    scored = scores_by_hand(evals, "committee", "gpt-4-0314").dropna(subset=["score"])
    per_scenario = pd.read_csv(root / "results/summary/tables/per_scenario.csv")
    mine = per_scenario[(per_scenario["arm"] == "committee") & (per_scenario["opponent"] == "gpt-4-0314")]
    for _, r in mine.iterrows():
        s = scored.loc[scored["vignette_id"] == r["vignette_id"], "score"]
        assert (r["n_contests"], r["win_rate"]) == (len(s), pytest.approx(s.mean()))
        assert (r["ci_low"], r["ci_high"]) == pytest.approx(proportion_confint(s.sum(), len(s), method="wilson"))
    per_run = pd.read_csv(root / "results/summary/tables/per_run.csv")
    mine = per_run[(per_run["arm"] == "committee") & (per_run["opponent"] == "gpt-4-0314")]
    assert sorted(mine["run"]) == [1, 2, 3]
    for _, r in mine.iterrows():
        frame = scored[scored["run"] == r["run"]]
        means = frame.groupby("vignette_id")["score"].mean().to_numpy()
        assert r["win_rate"] == pytest.approx(means.mean()) and r["n_contests"] == len(frame)
        assert (r["ci_low"], r["ci_high"]) == pytest.approx(korn_graubard_by_hand(means, len(frame)))
    assert mine["run_effect_p"].nunique() == 1  # one test per (arm, opponent), shown on each run's row


def test_head_to_head_is_paired_by_scenario(workspace):
    root, evals = workspace
    h2h = pd.read_csv(root / "results/summary/tables/head_to_head.csv")
    row = h2h[(h2h["kind"] == "paired") & (h2h["arm"] == "committee") & (h2h["versus"] == "rm_only")
              & (h2h["opponent"] == "qwen2.5-72b") & (h2h["pool"] == "ood")].iloc[0]
    a = scores_by_hand(evals, "committee", "qwen2.5-72b", "ood").groupby("vignette_id")["score"].mean()
    b = scores_by_hand(evals, "rm_only", "qwen2.5-72b", "ood").groupby("vignette_id")["score"].mean()
    d = (a - b).to_numpy()
    ci = stats.ttest_1samp(d, 0).confidence_interval(0.95)
    assert row["estimate"] == pytest.approx(d.mean())
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((ci.low, ci.high))
    assert row["signflip_p"] == pytest.approx(sign_flip_by_hand(d, 0.0))
    direct = h2h[(h2h["kind"] == "direct") & (h2h["arm"] == "committee") & (h2h["opponent"] == "deepseek-r1")]
    assert len(direct) == 1 and direct.iloc[0]["null"] == 0.5


def test_index_names_every_table_and_says_what_each_interval_estimates(workspace):
    root, _ = workspace
    index = json.loads((root / "results/summary/tables/index.json").read_text())
    names = [entry["name"] for entry in index]
    assert names == ["headline", "per_scenario", "per_run", "head_to_head", "ood", "judge_calibration",
                     "reward_models", "grm", "training_health", "overoptimization", "reward_path_gap", "length_bias", "length_bins",
                     "ablation", "seeds", "best_of_n", "selection", "confirmation", "card_policy", "card_head_to_head", "card_ood", "card_ablation", "card_reward_models",
                     "trajectory", "trajectory_fit"]
    drawn = {"trajectory", "trajectory_fit"}  # the truth along the KL: drawn on the demo only, none here
    for entry in index:
        assert entry["title"] and entry["caption"] and entry["estimand"]
        assert entry["status"] == ("not_computable" if entry["name"] in drawn else "ok"), entry["name"]
        for ext in ("csv", "md", "tex"):
            assert (root / entry["files"][ext]).is_file(), entry["files"][ext]
        tex = (root / entry["files"]["tex"]).read_text()
        assert "\\toprule" in tex and "\\midrule" in tex and "\\bottomrule" in tex and f"tab:{entry['name']}" in tex
    caption = index[0]["caption"]
    assert "ignores clustering" in caption and "under-covers" in caption and "same estimand" in caption
    head = pd.read_csv(root / "results/summary/tables/headline.csv")
    for column in ("arm", "opponent", "judge", "win_rate", "contests", "scenarios", "wilson_low", "wilson_high",
                   "headline_low", "headline_high", "headline_method", "boot_low", "boot_high", "signflip_p_bar",
                   "signflip_p_half", "signflip_min_p", "errors"):
        assert column in head.columns, column


def test_reward_path_gap_is_on_the_same_contests(workspace):
    root, evals = workspace
    gap = pd.read_csv(root / "results/summary/tables/reward_path_gap.csv")
    row = gap[(gap["arm"] == "committee") & (gap["heldout_judge"] == fx.HEADLINE_JUDGE)].iloc[0]
    ho = scores_by_hand(evals, "committee", "gpt-4-0314").set_index(["run", "contest_id", "vignette_id"])["score"]
    rp = scores_by_hand(evals, "committee", "gpt-4-0314", judge=fx.REWARD_PATH).set_index(
        ["run", "contest_id", "vignette_id"])["score"]
    both = pd.concat([rp.rename("rp"), ho.rename("ho")], axis=1).dropna()
    by = both.groupby(level="vignette_id").mean()
    assert row["gap"] == pytest.approx((by["rp"] - by["ho"]).mean())
    assert row["contests"] == len(both)


def test_claims_ledger_reproduces_the_retractions_and_flags_the_wald_bound(workspace):
    root, _ = workspace
    claims = {c["id"]: c for c in json.loads((root / "results/summary/claims.json").read_text())["claims"]}
    retracted = {i: c for i, c in claims.items() if c["verdict"] == "retracted"}
    assert set(retracted) == {"committee_beats_gpt4_iid", "committee_beats_r1_reference",
                              "committee_ood_gain_over_rm_only"}
    for claim in retracted.values():
        assert claim["retraction"]["reason"] and claim["retraction"]["date"]
        assert claim["retraction"]["replacement"] in claims
        assert claims[claim["retraction"]["replacement"]]["verdict"] in ("holds", "fails", "not_computable")
    assert "iid" in retracted["committee_beats_gpt4_iid"]["retraction"]["reason"]
    assert "head-to-head" in retracted["committee_beats_r1_reference"]["retraction"]["reason"]
    assert "within noise" in retracted["committee_ood_gain_over_rm_only"]["retraction"]["reason"]
    r1 = claims["r1_reference_interval"]
    wald = 185 / 240 - stats.norm.ppf(0.975) * np.sqrt(185 / 240 * 55 / 240 / 240)
    wilson = proportion_confint(185, 240, method="wilson")[0]
    assert r1["verdict"] == "fails" and r1["value"] == pytest.approx(wilson)
    assert "Wald" in r1["flag"] and f"{wald:.4f}" in r1["flag"] and f"{wilson:.4f}" in r1["flag"] and "0.714" in r1["flag"]
    assert claims["committee_card_interval"]["verdict"] == "holds" and claims["committee_card_interval"]["flag"] is None
    # a claim's value is the number in the table its rule names
    head = pd.read_csv(root / "results/summary/tables/headline.csv").set_index(["arm", "opponent"])
    assert claims["committee_beats_gpt4"]["value"] == pytest.approx(head.loc[("committee", "gpt-4-0314"), "headline_low"])
    holds = claims["committee_beats_gpt4"]["verdict"] == "holds"
    assert holds == (head.loc[("committee", "gpt-4-0314"), "headline_low"] > 0.608)
    assert all(c["verdict"] in ("holds", "fails", "retracted", "not_computable") for c in claims.values())


def test_reward_models_table_puts_the_bradley_terry_model_beside_the_ensemble(workspace):
    root, _ = workspace
    rm = pd.read_csv(root / "results/summary/tables/reward_models.csv").set_index("model")
    assert ["seed0", "seed1", "seed2", "mean_of_seeds", "ensemble", "bradley_terry"] == list(rm.index)
    bt, ens = rm.loc["bradley_terry"], rm.loc["ensemble"]
    assert (bt["accuracy"], bt["ci_low"], bt["ci_high"], bt["n_pairs"]) == pytest.approx((0.78, 0.73, 0.83, 300))
    assert (bt["best_of_n_win_vs_random"], bt["ensemble_best_of_n_win_vs_random"]) == pytest.approx((0.61, 0.56))
    assert ens["best_of_n_win_vs_random"] == pytest.approx(bt["ensemble_best_of_n_win_vs_random"])
    assert "500 train pairs" in bt["note"] and "+0.050" in bt["note"] and "[-0.020, 0.120]" in bt["note"]
    assert "bradley_terry" in (root / "results/summary/tables/card_reward_models.md").read_text()
    claims = {c["id"]: c for c in json.loads((root / "results/summary/claims.json").read_text())["claims"]}
    reranking = claims["rm_bradley_terry_reranks_better"]
    assert reranking["verdict"] == "holds" and reranking["value"] == pytest.approx(0.61)


def _flip_one_byte(path: Path, needle: bytes, offset: int = 0) -> None:
    data = bytearray(path.read_bytes())
    at = data.find(needle)
    assert at >= 0 and data.find(needle, at + 1) < 0, "the flipped text must occur exactly once"
    data[at + offset] ^= 0x01
    path.write_bytes(bytes(data))


def test_flipping_one_byte_of_one_runs_judgments_changes_exactly_the_claims_computed_from_it(tmp_path):
    matchups = [m for m in fx.MATCHUPS
                if (m[0] in ("committee", "rm_only") and m[3] <= 12) or m[:2] == ("committee", "gpt-4-0314")]
    evals = make_workspace(tmp_path, matchups=matchups, reward_path=False)
    target = tmp_path / "results/evaluation/run2/judgments.parquet"
    judgments, _ = evals[2]
    judgments.to_parquet(target, index=False, compression=None, use_dictionary=False)  # raw text stored as is
    rel = "results/evaluation/run2/judgments.parquet"
    import hashlib

    assert run_summarize(tmp_path) == 0
    before = {c["id"]: c for c in json.loads((tmp_path / "results/summary/claims.json").read_text())["claims"]}
    entry = next(e for c in before.values() for e in c["lineage"] if e["path"] == rel)
    # not a DVC repository: no DVC hash, said so (the DVC hashes: tests/test_demo_versions.py)
    assert (entry["dvc_stage"], entry["dvc_hash"], entry["dvc_note"]) == (None, None, NOT_DVC)
    assert entry["sha256"] == hashlib.sha256(target.read_bytes()).hexdigest()

    raw = judgments["raw"].iloc[5]
    _flip_one_byte(target, raw.encode(), raw.index("reasoning"))  # not the verdict's bytes: it still parses
    assert run_summarize(tmp_path) == 0  # the verdicts are untouched: still consistent with the contests
    after = {c["id"]: c for c in json.loads((tmp_path / "results/summary/claims.json").read_text())["claims"]}
    uses = {i for i, c in before.items() if any(e["path"] == rel for e in c["lineage"])}
    changed = {i for i in before if before[i]["lineage"] != after[i]["lineage"]}
    assert changed == uses
    assert uses and "committee_beats_gpt4" in uses and "rm_ensemble_accuracy" not in uses
    assert len(uses) < len(before)
    for i in uses:  # only that file's entry changed, and the lock is now stale for it
        diff = [(b, a) for b, a in zip(before[i]["lineage"], after[i]["lineage"]) if b != a]
        assert [b["path"] for b, _ in diff] == [rel]
        assert diff[0][0]["sha256"] != diff[0][1]["sha256"]
        assert before[i]["value"] == after[i]["value"]


def test_absent_metrics_make_their_tables_and_claims_not_computable(tmp_path):
    matchups = [m for m in fx.MATCHUPS if m[:2] == ("committee", "gpt-4-0314")]
    make_workspace(tmp_path, matchups=matchups, reward_path=False)
    for metrics in ("evaluation/judge_calibration.json", "reward/metrics.json", "grm/metrics.json"):
        (tmp_path / "results" / metrics).unlink()
    assert run_summarize(tmp_path) == 0
    index = {e["name"]: e for e in json.loads((tmp_path / "results/summary/tables/index.json").read_text())}
    for name in ("judge_calibration", "reward_models", "grm", "ood", "reward_path_gap"):
        assert index[name]["status"] == "not_computable" and index[name]["note"], name
    claims = {c["id"]: c for c in json.loads((tmp_path / "results/summary/claims.json").read_text())["claims"]}
    for i in ("rm_ensemble_accuracy", "grm_above_chance", "judge_calibrated", "committee_ood_vs_rm_only_within_noise"):
        assert claims[i]["verdict"] == "not_computable" and claims[i]["note"] and claims[i]["lineage"] == [], i
    assert claims["committee_beats_gpt4"]["verdict"] in ("holds", "fails")


@pytest.fixture
def small_workspace(tmp_path):
    make_workspace(tmp_path, matchups=[m for m in fx.MATCHUPS if m[:2] == ("committee", "gpt-4-0314")],
                   reward_path=False)
    return tmp_path


def _fails_cleanly(root, capsys, *fragments, params=None):
    capsys.readouterr()
    assert run_summarize(root, params) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    for fragment in fragments:
        assert fragment in err, (fragment, err)
    assert not (root / "results/summary/tables").exists() and not (root / "results/summary/claims.json").exists()
    assert not [p for p in (root / "results").rglob(".*")]  # no temp leftovers


def test_missing_run_file_is_one_clear_error_and_no_output(small_workspace, capsys):
    (small_workspace / "results/evaluation/run3/contests.parquet").unlink()
    _fails_cleanly(small_workspace, capsys, "run3/contests.parquet", "run 3", "evaluation.runs")


def test_contests_table_missing_a_column_is_one_clear_error_and_no_output(small_workspace, capsys):
    path = small_workspace / "results/evaluation/run1/contests.parquet"
    pd.read_parquet(path).drop(columns="pool").to_parquet(path, index=False)
    _fails_cleanly(small_workspace, capsys, "run1/contests.parquet", "'pool'")


def test_contests_that_disagree_with_their_judgments_are_refused(small_workspace, capsys):
    path = small_workspace / "results/evaluation/run2/contests.parquet"
    table = pd.read_parquet(path)
    flip = table.index[(table["score"] == 0.0)][0]
    table.loc[flip, "score"] = 1.0
    table.to_parquet(path, index=False)
    _fails_cleanly(small_workspace, capsys, "run2/contests.parquet", "disagree with the judgments")


def test_a_claim_naming_an_unknown_table_is_refused(small_workspace, capsys):
    ledger = small_workspace / "claims.yaml"
    ledger.write_text(ledger.read_text().replace("table: ablation", "table: ablations"))
    _fails_cleanly(small_workspace, capsys, "claims.yaml", "rm_heavy_scores_lower", "unknown table 'ablations'")


def test_an_absent_headline_judge_names_the_config_key(small_workspace, capsys):
    params = fx.params()
    params["evaluation"] = {**params["evaluation"], "headline_judge": "nobody"}
    _fails_cleanly(small_workspace, capsys, "evaluation.headline_judge", "'nobody'", params=params)


def test_a_calibration_file_without_a_key_its_readers_use_is_refused(small_workspace, capsys):
    path = small_workspace / "results/evaluation/judge_calibration.json"
    doc = json.loads(path.read_text())
    del doc["judges"][fx.HEADLINE_JUDGE]["position"]["tie_rate"]
    path.write_text(json.dumps(doc))
    _fails_cleanly(small_workspace, capsys, "judge_calibration.json", f"judges.{fx.HEADLINE_JUDGE}.position",
                   "'tie_rate'")


def test_settings_take_every_default_from_the_schema():
    from reappraisal.config import with_defaults
    from reappraisal.summary.evaluation_tables import Settings
    from reappraisal.settings import Settings as ConfigSettings
    from reappraisal.summary.summary_io import summary_settings

    assert all(f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
               for f in dataclasses.fields(Settings))
    s, runs = summary_settings(ConfigSettings.from_params({"seed": 3}))
    summary, evaluation = with_defaults("summary", {}), with_defaults("evaluation", {})
    assert (s.bar, s.confidence, s.n_boot, s.headline_arm) == tuple(
        summary[k] for k in ("bar", "confidence", "n_boot", "headline_arm"))
    assert (s.headline_judge, s.headline_opponent, runs) == tuple(
        evaluation[k] for k in ("headline_judge", "headline_opponent", "runs"))
    assert s.arms == tuple(with_defaults("policy", {})["arms"]) and s.seed == 3


def test_interval_headings_follow_the_configured_confidence(small_workspace):
    params = fx.params()
    params["summary"] = {**params["summary"], "confidence": 0.9}
    assert run_summarize(small_workspace, params) == 0
    tables = small_workspace / "results/summary/tables"
    assert "headline 90% CI" in (tables / "headline.md").read_text()
    assert "two-sided 90% for the same estimand" in (tables / "headline.md").read_text()
    assert "Wilson 90\\% CI" in (tables / "per_scenario.tex").read_text()
    # the reward models' intervals keep the level their own stage computed them at (recorded in the file)
    assert "| 95% CI" in (tables / "reward_models.md").read_text()
