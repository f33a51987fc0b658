"""The demo's truth along the KL: every configured arm's checkpoints drawn, errors small enough to read, the
verdicts the claims quote, the figure in the report."""

import json

import pandas as pd
import pytest

from reappraisal.config import load_config

pytestmark = pytest.mark.demo


def test_each_arm_has_its_start_kept_steps_and_end_with_small_errors(demo_run):
    cfg = load_config(demo_run / "config.yaml")
    arms = cfg["evaluation"]["truth"]["trajectory"]["arms"]
    kept = cfg["policy"]["snapshot_steps"]
    frame = pd.read_csv(demo_run / "results/summary/tables/trajectory.csv")
    assert sorted(frame["arm"].unique()) == sorted(arms)
    for arm, rows in frame.groupby("arm"):
        assert rows["step"].tolist() == [0, *kept, cfg["policy"]["max_steps"]]
        steps = json.loads((demo_run / f"results/policy/{arm}/steps/STEPS.json").read_text())
        assert steps == {"steps": kept}
        start = rows.iloc[0]
        assert start["sqrt_kl"] == 0 and start["gold_gain"] == 0 and start["proxy"] == 0
        assert (rows["sqrt_kl"].iloc[1:] > 0).all()  # every later checkpoint moved away from the start
    assert (frame["truth_se"] <= 0.02).all()  # the bar for a truth along the trajectory


def test_the_claims_read_the_verdicts_the_fit_table_shows(demo_run):
    fit = pd.read_csv(demo_run / "results/summary/tables/trajectory_fit.csv").set_index("arm")
    claims = {c["id"]: c for c in json.loads((demo_run / "results/summary/claims.json").read_text())["claims"]}
    first = claims["committee_first_raises_gold"]
    assert (first["verdict"] == "holds") == bool(fit.loc["committee", "best_truth_low"] > 0.5)
    assert first["truth_verdict"] == first["rule_verdict"]  # its number is a truth already
    beta0 = claims["beta0_collapses_and_reward_hacks"]
    if not bool(fit.loc["beta0", "overoptimized"]):
        assert beta0["verdict"] == "fails"
    html = (demo_run / "results/report.html").read_text()
    assert 'id="fig-truth-kl"' in html and "Overoptimization from truths" in html
