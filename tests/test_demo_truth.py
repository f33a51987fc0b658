"""On the demo the world is known: the truth beside every estimate, the world table, the claims' truth verdicts."""

from __future__ import annotations

import json

import pandas as pd


def test_every_checked_interval_has_its_truth_and_most_cover_it(demo_run):
    truths = pd.read_parquet(demo_run / "results/evaluation/truth/truths.parquet")
    # a truth an interval is checked against has a Monte Carlo error far below any interval's width; the world's
    # anchors (the base policy, the gold oracle: best-of-64 of 1,024 draws, its error dominated by the top
    # draws) are checked against their bars with a margin of several errors instead (next test)
    checked = truths[~truths["kind"].isin(["base", "oracle"])]
    assert (checked["truth_se"] <= 0.01).all(), checked.sort_values("truth_se").tail(3).to_dict("records")
    assert (truths["truth_se"] <= 0.02).all(), truths.sort_values("truth_se").tail(3).to_dict("records")
    table = pd.read_csv(demo_run / "results/summary/tables/truth.csv")
    # every interval the report checks, differences included, is checked against a truth known to 0.01
    assert (table["truth_se"] <= 0.01).all(), table.sort_values("truth_se").tail(3).to_dict("records")
    assert {"headline", "ood", "head_to_head", "ablation", "best_of_n", "selection"} <= set(table["table"])
    assert table["truth"].between(-1, 1).all() and table["covered"].isin([True, False]).all()
    covered = (table["low"] <= table["truth"]) & (table["truth"] <= table["high"])
    assert (covered == table["covered"]).all()
    assert table["covered"].mean() >= 0.8  # a check of the pipeline on this world, not a coverage guarantee
    html = (demo_run / "results/report.html").read_text()
    assert "Does the pipeline tell the truth?" in html and 'id="truth-verdicts"' in html


def test_the_world_is_calibrated_by_its_truths(demo_run):
    truths = pd.read_parquet(demo_run / "results/evaluation/truth/truths.parquet").set_index(["system", "opponent"])
    base, oracle = truths.loc[("base-policy", "gpt-4-0314")], truths.loc[("oracle:base-policy:gold", "gpt-4-0314")]
    assert base["truth"] + 4 * base["truth_se"] <= 0.25  # it loses clearly, beyond its Monte Carlo error
    # the best of the base policy's answers can win: at the world's bar, and above even beyond its Monte Carlo
    # error (the bar itself moves with the numerics: 0.701 on an AMD CPU, 0.673 on an Intel one, each ± 0.012)
    assert oracle["truth"] >= 0.65 and oracle["truth"] - 4 * oracle["truth_se"] > 0.5
    world = pd.read_csv(demo_run / "results/summary/tables/world.csv")
    by_group = world.groupby("group")["q50"].mean()
    assert {"human", "gpt4", "base-policy", "oracle:base-policy:gold", "grm_only", "beta0"} <= set(by_group.index)
    assert by_group["human"] < by_group["gpt4"] < world[world["group"] == "human"]["q90"].mean()
    # no trained arm's headline row against GPT-4-0314 sits at 0 or 1 unless its truth is there too
    head = pd.read_csv(demo_run / "results/summary/tables/headline.csv")
    rows = head[head["opponent"] == "gpt-4-0314"]
    assert rows["truth"].notna().all()  # the summary sets each row's truth beside it
    extreme = rows[rows["win_rate"].isin([0.0, 1.0])]
    assert ((extreme["win_rate"] - extreme["truth"]).abs() <= 0.02).all(), extreme.to_dict("records")


def test_the_ablation_arms_are_trained_and_every_win_rate_claim_has_a_truth_verdict(demo_run):
    ledger = json.loads((demo_run / "results/summary/claims.json").read_text())
    claims = {c["id"]: c for c in ledger["claims"]}
    for cid in ("grm_only_collapses", "beta0_collapses_and_reward_hacks"):
        assert claims[cid]["rule_verdict"] in ("holds", "fails"), claims[cid]["note"]
    for arm in ("grm_only", "beta0"):
        assert json.loads((demo_run / f"results/policy/{arm}/health.json").read_text())["n_steps"] > 0
    assert claims["committee_beats_gpt4"]["truth_verdict"] in ("holds", "fails")
    assert claims["judge_calibrated"]["truth_verdict"] is None  # reads no win rate
    truth = ledger["truth"]
    assert truth["claims_with_truth"] >= 8
    assert truth["agree"] + len(truth["disagree"]) == truth["claims_with_truth"]
    over = pd.read_csv(demo_run / "results/summary/tables/overoptimization.csv").set_index("arm")
    assert over["gold_peak"].notna().all() and over.loc["beta0", "sqrt_kl_last"] != over.loc["beta0", "sqrt_kl_last"]


def test_every_grm_instrument_the_demo_reports_can_see(demo_run):
    # an instrument that names one slot whatever the pair (accuracy 0.5, every order flipped) measures nothing;
    # the demo leaves out the logprob mode its GRM was never trained for (docs/demo-world.md)
    grm = pd.read_csv(demo_run / "results/summary/tables/grm.csv")
    assert set(grm["mode"]) == {"generate"}
    assert (grm["accuracy"] > 0.55).all() and (grm["flip_rate"] < 0.9).all(), grm.to_dict("records")
    # the judge the committee scores with is above chance by its scenario-clustered interval (the SFT model
    # on the way there need not be: at 6 scenarios its interval is wide)
    assert (grm.loc[grm["model"] == "final", "ci_low"] > 0.5).all(), grm.to_dict("records")
