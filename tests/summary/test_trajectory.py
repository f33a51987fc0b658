"""The overoptimization verdict from truths along the KL: Gao's fit, the fixed-scale proxy and the verdicts
on planted trajectories."""

import math

import numpy as np
import pandas as pd
import pytest

from reappraisal.summary.trajectory import DROP_SES, arm_fit, arm_rows, gao_fit, gao_peak, trajectory_tables


def planted(gold, ensemble, truth, *, sqrt_kl=(0.0, 0.5, 1.0, 1.5, 2.0), se=0.01, w_rm=1.0, arm="rm_only"):
    n = len(gold)
    return pd.DataFrame({
        "arm": arm, "step": [0, 10, 20, 40, 80][:n], "answers": 600, "passed": 580, "gold_mean": gold,
        "gold_se": se, "truth_vs_start": truth, "truth_se": 0.01, "kl": np.square(sqrt_kl[:n]), "kl_se": 0.05,
        "sqrt_kl": sqrt_kl[:n], "ensemble_mean": ensemble, "ensemble_sd": 0.5, "ensemble_n": 580,
        "grm_mean": np.nan, "grm_sd": np.nan, "grm_n": 0, "w_rm": w_rm, "w_grm": 0.0})


def test_gao_fit_recovers_a_planted_curve_and_its_peak():
    d = np.array([0.3, 0.7, 1.2, 2.0, 3.1])
    alpha, beta = 0.8, 0.5
    got = gao_fit(d, d * (alpha - beta * np.log(d)))
    assert got == pytest.approx((alpha, beta), abs=1e-9)
    d_star, r_star = gao_peak(*got)
    assert d_star == pytest.approx(math.exp(alpha / beta - 1))
    grid = np.linspace(0.01, 10, 20001)
    assert r_star == pytest.approx((grid * (alpha - beta * np.log(grid))).max(), abs=1e-6)
    assert math.isnan(gao_peak(0.5, -0.1)[0])  # rising throughout: no interior peak


def test_gold_that_peaks_and_falls_while_the_raw_proxy_rises_is_overoptimized():
    rows = arm_rows(planted(gold=[-0.50, -0.40, -0.35, -0.45, -0.60], ensemble=[0.0, 0.1, 0.2, 0.3, 0.4],
                            truth=[0.5, 0.55, 0.58, 0.53, 0.45]))
    assert rows["proxy"].tolist() == pytest.approx([0.0, 0.2, 0.4, 0.6, 0.8])  # fixed scale: the start's sd
    fit = arm_fit(rows)
    assert fit["best_step"] == 20 and fit["gold_drop"] == pytest.approx(0.25)
    assert fit["overoptimized"] and fit["first_raises_gold"]
    assert fit["beta"] > 0 and 0 < fit["sqrt_kl_peak_fit"] < 2.0


def test_no_verdict_without_a_drop_beyond_noise_or_without_the_proxy_rising():
    rising = arm_fit(arm_rows(planted(gold=[-0.5, -0.45, -0.4, -0.35, -0.3], ensemble=[0, 0.1, 0.2, 0.3, 0.4],
                                      truth=[0.5, 0.52, 0.54, 0.56, 0.58])))
    assert not rising["overoptimized"] and rising["best_step"] == 80 and rising["first_raises_gold"]
    noisy = arm_fit(arm_rows(planted(gold=[-0.5, -0.45, -0.4, -0.42, -0.44], ensemble=[0, 0.1, 0.2, 0.3, 0.4],
                                     truth=[0.5, 0.52, 0.54, 0.53, 0.52], se=0.02)))
    assert noisy["gold_drop"] < DROP_SES * noisy["gold_drop_se"] and not noisy["overoptimized"]
    proxy_fell = arm_fit(arm_rows(planted(gold=[-0.5, -0.4, -0.35, -0.45, -0.6], ensemble=[0, 0.2, 0.4, 0.3, 0.1],
                                          truth=[0.5, 0.55, 0.58, 0.53, 0.45])))
    assert not proxy_fell["overoptimized"]  # gold fell, but so did what it climbs: not Gao's signature
    worse = arm_fit(arm_rows(planted(gold=[-0.5, -0.55, -0.6, -0.65, -0.7], ensemble=[0, 0.1, 0.2, 0.3, 0.4],
                                     truth=[0.5, 0.47, 0.45, 0.43, 0.41])))
    assert not worse["first_raises_gold"] and worse["best_truth_low"] < 0.5


def test_tables_name_every_arm_and_are_not_computable_without_draws():
    tables = trajectory_tables({"rm_only": planted([-0.5, -0.4, -0.35, -0.45, -0.6], [0, .1, .2, .3, .4],
                                                   [.5, .55, .58, .53, .45])}, {"rm_only": "t/rm_only.parquet"})
    assert tables["trajectory"].frame["step"].tolist() == [0, 10, 20, 40, 80]
    assert tables["trajectory_fit"].frame["arm"].tolist() == ["rm_only"]
    assert tables["trajectory_fit"].sources == [("t/rm_only.parquet",)]
    empty = trajectory_tables({}, {})
    assert empty["trajectory_fit"].status == "not_computable" and empty["trajectory"].frame.empty


def test_the_ledgers_overoptimization_claims_read_the_verdict_from_truths():
    """``beta0_collapses_and_reward_hacks`` reads ``trajectory_fit``: it holds on a planted β = 0 trajectory whose
    raw proxy climbs while the gold of fresh answers falls from its best checkpoint, and fails when the proxy
    fell too; no claim reads the log-based overoptimization table any more."""
    from pathlib import Path

    import yaml

    from reappraisal.summary.claims import evaluate_claims, rule_conditions
    from reappraisal.summary.summary_table import Table

    ledger = yaml.safe_load((Path(__file__).resolve().parents[2] / "claims.yaml").read_text())["claims"]
    tables_read = {cond.get("table") for c in ledger for cond in rule_conditions(c["rule"])}
    assert "overoptimization" not in tables_read
    on_it = [c for c in ledger if any(cond.get("table") == "trajectory_fit" and cond["column"] == "overoptimized"
                                      for cond in rule_conditions(c["rule"]))]
    assert [c["id"] for c in on_it] == ["beta0_collapses_and_reward_hacks"]
    other = lambda name, **cols: Table(name, name, "", "", pd.DataFrame({"arm": ["beta0"], **cols}), [()])
    tables = {"training_health": other("training_health", entropy_ratio=[0.1]),
              "ablation": other("ablation", diff_ci_high=[-0.1])}
    gold = [-0.50, -0.40, -0.35, -0.45, -0.60]
    truth = [0.5, 0.55, 0.58, 0.53, 0.45]
    for ensemble, verdict in (([0.0, 0.1, 0.2, 0.3, 0.4], "holds"), ([0.0, 0.2, 0.4, 0.3, 0.1], "fails")):
        frames = {"beta0": planted(gold, ensemble, truth, arm="beta0", w_rm=0.5)}
        tables.update(trajectory_tables(frames, {"beta0": "t/beta0.parquet"}))
        assert {r["verdict"] for r in evaluate_claims(on_it, tables, {})} == {verdict}
