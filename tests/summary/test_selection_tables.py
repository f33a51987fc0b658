"""Seeds, best-of-N, selection and confirmation tables, checked against arithmetic done here."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import yaml

from . import fixtures as fx
from .test_summarize import make_workspace, run_summarize, scores_by_hand


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("selection")
    evals = make_workspace(root)
    assert run_summarize(root) == 0
    tables = {name: pd.read_csv(root / f"results/summary/tables/{name}.csv")
              for name in ("seeds", "best_of_n", "selection", "confirmation", "headline", "ablation")}
    return root, evals, tables


def _mean_of_scenarios(scores: pd.DataFrame) -> float:
    return float(scores.groupby("vignette_id")["score"].mean().mean())


def test_seed_rows_and_the_pooled_row_of_an_arm_with_two_seeds(built):
    _, evals, tables = built
    seeds = tables["seeds"].set_index("seed")
    per_seed = {s: scores_by_hand(evals, f"bradley_terry-seed{s}", "gpt-4-0314") for s in (0, 1)}
    for s, scores in per_seed.items():
        assert seeds.loc[str(s), "win_rate"] == pytest.approx(_mean_of_scenarios(scores))
        assert seeds.loc[str(s), "level"] == "seed"
    pooled = pd.concat(per_seed.values())
    assert seeds.loc["pooled", "win_rate"] == pytest.approx(_mean_of_scenarios(pooled))
    # each seed plays the same contests per scenario (but for the few unparseable ones, 1%): the pooled
    # estimate is the mean of the seeds' estimates up to that
    assert seeds.loc["pooled", "win_rate"] == pytest.approx(seeds.loc[["0", "1"], "win_rate"].mean(), abs=2e-3)
    assert seeds.loc["pooled", "contests"] == seeds.loc[["0", "1"], "contests"].sum()
    assert seeds.loc["pooled", "ci_low"] < seeds.loc["pooled", "win_rate"] < seeds.loc["pooled", "ci_high"]
    assert 0 <= seeds.loc["pooled", "seed_effect_p"] <= 1
    # the pooled row is the arm's row wherever arms are compared
    headline = tables["headline"].set_index(["arm", "opponent"])
    assert headline.loc[("bradley_terry", "gpt-4-0314"), "win_rate"] == pytest.approx(seeds.loc["pooled", "win_rate"])
    ablation = tables["ablation"].set_index("arm")
    assert ablation.loc["bradley_terry", "reward"] == "bradley_terry" and ablation.loc["bradley_terry", "seeds"] == 2
    assert "bradley_terry-seed0" not in ablation.index and fx.BEST_OF_N not in ablation.index


def test_best_of_n_beside_its_single_pass_paired_by_scenario(built):
    _, evals, tables = built
    row = tables["best_of_n"].set_index("pool").loc["train"]
    bon = scores_by_hand(evals, fx.BEST_OF_N, "gpt-4-0314").groupby("vignette_id")["score"].mean()
    single = scores_by_hand(evals, "committee", "gpt-4-0314").groupby("vignette_id")["score"].mean()
    assert row["win_rate"] == pytest.approx(bon.mean()) and row["single_pass_win_rate"] == pytest.approx(single.mean())
    assert row["diff"] == pytest.approx((bon - single).mean())
    assert row["diff_ci_low"] < row["diff"] < row["diff_ci_high"]
    assert row["generations_per_answer"] == 4 and row["scorer_calls_per_answer"] == 4 * 3  # 3 ensemble seeds
    assert set(tables["best_of_n"]["pool"]) == {"train", "ood"}


def test_selection_marks_the_registered_winner_and_it_is_the_best_estimate(built):
    root, evals, tables = built
    sel = tables["selection"].set_index("system")
    by_hand = {s: _mean_of_scenarios(scores_by_hand(evals, s, "qwen2.5-72b", pool="ood"))
               for s in [*fx.INSTANCES, fx.BEST_OF_N]}
    assert set(sel.index) == set(by_hand)
    for system, value in by_hand.items():
        assert sel.loc[system, "win_rate"] == pytest.approx(value)
    assert sel.index[sel["selected"]].tolist() == [max(by_hand, key=by_hand.get)]


def test_confirmation_row_sets_selection_inflation_and_the_fresh_estimate_side_by_side(built):
    root, _, tables = built
    result = json.loads((root / "results/confirm/confirmation.json").read_text())
    row = tables["confirmation"].iloc[0]
    for key in ("system", "win_rate", "ci_low", "ci_high", "selection_estimate", "expected_inflation", "bar",
                "verdict"):
        assert row[key] == (pytest.approx(result[key]) if isinstance(result[key], float) else result[key])
    assert row["shrunk_estimate"] == pytest.approx(row["selection_estimate"] - row["expected_inflation"])
    claims = {c["id"]: c for c in json.loads((root / "results/summary/claims.json").read_text())["claims"]}
    assert claims["selected_system_confirmed"]["verdict"] == ("holds" if row["ci_low"] > row["bar"] else "fails")
    lineage = {e["path"] for e in claims["selected_system_confirmed"]["lineage"]}
    assert {"results/confirm/confirmation.json", "results/confirm/preregistration.yaml"} <= lineage


def test_earlier_confirmation_attempts_are_listed_in_the_table_and_flag_every_claim_on_it(tmp_path):
    """A registration tested on a first pool, then (that pool spent) on a new one: the result the summary shows is
    the second attempt's, and the table's note, its ``attempts`` count and each confirmation claim's flags name the
    first, so an edited-then-confirmed result never reads like a first try."""
    root = tmp_path
    make_workspace(root)
    path = root / "results/confirm/confirmation.json"
    result = json.loads(path.read_text())
    first = {"preregistration_sha256": "e" * 64, "pool": "f" * 64, "date": "2026-11-30T09:00:00+00:00",
             "system": result["system"], "opponent": result["opponent"], "win_rate": 0.312, "ci_low": 0.201,
             "ci_high": 0.447, "bar": 0.5, "verdict": "not_confirmed"}
    this = {"preregistration_sha256": "a" * 64, "pool": "b" * 64, "date": "2026-12-01T09:00:00+00:00",
            **{k: result[k] for k in ("system", "opponent", "win_rate", "ci_low", "ci_high", "bar", "verdict")}}
    path.write_text(json.dumps({**result, "preregistration_sha256": "a" * 64, "pool": "b" * 64,
                                "attempts": [first, this]}))
    assert run_summarize(root) == 0
    row = pd.read_csv(root / "results/summary/tables/confirmation.csv").iloc[0]
    assert row["attempts"] == 2
    assert row["attempts_flag"].startswith("earlier attempts, on other pools: 2026-11-30T09:00:00+00:00, registration "
                                           "eeeeeeeeeeee") and "0.312 [0.201, 0.447] vs bar 0.5 not confirmed" in row[
        "attempts_flag"]
    index = {e["name"]: e for e in json.loads((root / "results/summary/tables/index.json").read_text())}
    note = index["confirmation"]["note"]
    assert note.index("(1) 2026-11-30") < note.index("(2) 2026-12-01") and note.count("(this result)") == 1
    assert "(2) 2026-12-01T09:00:00+00:00, registration aaaaaaaaaaaa" in note.split("(this result)")[0]
    from reappraisal.summary.claims import rule_conditions

    on_it = {c["id"] for c in yaml.safe_load((root / "claims.yaml").read_text())["claims"]
             if any(cond.get("table") == "confirmation" for cond in rule_conditions(c["rule"]))}
    claims = [c for c in json.loads((root / "results/summary/claims.json").read_text())["claims"] if c["id"] in on_it]
    assert claims and all(any("earlier attempts, on other pools: 2026-11-30" in f for f in c["flags"]) for c in claims)
