"""What a headline must not hide: a run effect is flagged beside its verdict (headline row, claims ledger, report),
and a judgments file whose verdicts do not follow from the judge's raw replies stops summarize."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf

from reappraisal.cli import main as cli
from reappraisal.summary import evaluation_tables as et
from reappraisal.summary.claims import evaluate_claims
from reappraisal.settings import Settings
from reappraisal.summary.summary_io import summary_settings
from tests.report.test_report import Page

from . import fixtures as fx
from .test_summarize import _fails_cleanly, make_workspace, run_summarize

HEADLINE = [m for m in fx.MATCHUPS if m[:2] == ("committee", "gpt-4-0314")]
SHIFT = 0.3  # run 2's committee plays 30 points worse than runs 1 and 3
CLAIM = {"id": "committee_beats_gpt4", "text": "beats GPT-4",
         "rule": {"table": "headline", "where": {"arm": "committee", "opponent": "gpt-4-0314"},
                  "column": "headline_low", "op": ">", "than": {"setting": "bar"}}}


def _run(run: int, shift: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run ``run`` of the fixture's committee vs GPT-4 contests (seed 0), run 2 ``shift`` worse."""
    matchups = [(a, o, p, n, rate - (shift if run == 2 else 0.0)) for a, o, p, n, rate in HEADLINE]
    return fx.build_run(run, 0, matchups=matchups, reward_path=False)


def _contests(shift: float) -> pd.DataFrame:
    return pd.concat([_run(run, shift)[1] for run in fx.RUNS], ignore_index=True)


def _anova_p(contests: pd.DataFrame) -> float:
    """p of the run effect, independently: OLS on the scenario x run cell means, type-II ANOVA."""
    scored = contests[~contests["error"]]
    cells = scored.groupby(["vignette_id", "run"])["score"].mean().rename("y").reset_index()
    table = sm.stats.anova_lm(smf.ols("y ~ C(vignette_id) + C(run)", data=cells).fit(), typ=2)
    return float(table.loc["C(run)", "PR(>F)"])


def _headline(contests: pd.DataFrame, confidence: float = 0.95):
    params = fx.params()
    params["summary"] = {**params["summary"], "confidence": confidence, "n_boot": 2000}
    s, _ = summary_settings(Settings.from_params(params))
    return et.headline_table(contests, s, {}), s


def test_a_run_that_differs_is_flagged_beside_the_verdict_with_its_p():
    contests = _contests(SHIFT)
    table, s = _headline(contests)
    row = table.frame.iloc[0]
    p = _anova_p(contests)
    assert p < 0.001 and row["run_effect_p"] == pytest.approx(p, rel=1e-9)
    flag = row["run_effect_flag"]
    assert flag.startswith(f"run effect p = {p:.2g} < 0.05") and "the 3 runs disagree" in flag
    assert "the pooled rate hides it" in flag
    per_run = contests[~contests["error"]].groupby(["run", "vignette_id"])["score"].mean().groupby("run").mean()
    for run, rate in per_run.items():
        assert f"run {run} {rate:.3f}" in flag
    assert flag in table.caption  # the Markdown and LaTeX tables say it too
    # the flag is a caveat, not a new rule: the verdict is still the headline interval against the bar
    assert bool(row["clears_bar"]) == (row["headline_low"] > s.bar)
    record = evaluate_claims([CLAIM], {"headline": table}, {"bar": s.bar, "confidence": s.confidence})[0]
    assert record["flags"] == [f"headline[arm=committee, opponent=gpt-4-0314]: {flag}"]
    assert record["verdict"] == ("holds" if row["headline_low"] > s.bar else "fails")


def test_runs_that_agree_carry_no_flag():
    contests = _contests(0.0)
    table, s = _headline(contests)
    row = table.frame.iloc[0]
    assert row["run_effect_p"] == pytest.approx(_anova_p(contests), rel=1e-9) and row["run_effect_p"] > 0.05
    assert row["run_effect_flag"] is None or pd.isna(row["run_effect_flag"])
    assert "Flagged" not in table.caption and "run effect p =" not in table.caption
    record = evaluate_claims([CLAIM], {"headline": table}, {"bar": s.bar, "confidence": s.confidence})[0]
    assert record["flags"] == []


def test_the_flag_follows_the_configured_level():
    contests = _contests(SHIFT)
    p = _anova_p(contests)
    table, _ = _headline(contests, confidence=1 - p / 2)  # alpha = p / 2: not significant at that level
    assert pd.isna(table.frame.iloc[0]["run_effect_flag"])


def _workspace(root: Path, shift: float) -> None:
    make_workspace(root, matchups=HEADLINE, reward_path=False)
    judgments, contests = _run(2, shift)
    judgments.to_parquet(root / "results/evaluation/run2/judgments.parquet", index=False)
    contests.to_parquet(root / "results/evaluation/run2/contests.parquet", index=False)


def _report(root: Path, monkeypatch) -> Page:
    monkeypatch.chdir(root)
    inputs = {"summary_tables": {"path": "results/summary/tables/index.json", "kind": "tables_index"},
              "claims": {"path": "results/summary/claims.json", "kind": "claims"}}
    assert cli(["report", "--out", "report.html", "--inputs", json.dumps(inputs),
                "--params", json.dumps({"preset": "paper"})]) == 0
    return Page((root / "report.html").read_text())


@pytest.mark.parametrize("shift", [SHIFT, 0.0])
def test_summarize_and_the_report_show_the_flag_next_to_the_verdict_only_when_flagged(tmp_path, monkeypatch, shift):
    _workspace(tmp_path, shift)
    assert run_summarize(tmp_path) == 0
    head = pd.read_csv(tmp_path / "results/summary/tables/headline.csv").iloc[0]
    claims = {c["id"]: c for c in json.loads((tmp_path / "results/summary/claims.json").read_text())["claims"]}
    claim = claims["committee_beats_gpt4"]
    page = _report(tmp_path, monkeypatch)
    cells = page.cells["headline-table"]
    verdict_cell = cells[cells.index("committee") + 12]  # the last column: headline CI above the bar
    ledger = page.cells["claims-table"]
    claim_verdict = ledger[ledger.index("committee_beats_gpt4") + 4]
    assert verdict_cell == ("yes" if head["clears_bar"] else "no")
    assert claim_verdict.startswith(claim["verdict"].replace("_", " "))
    if shift:
        flag = head["run_effect_flag"]
        assert isinstance(flag, str) and f"run effect p = {head['run_effect_p']:.2g} < 0.05" in flag
        assert claim["flags"] == [f"headline[arm=committee, opponent=gpt-4-0314]: {flag}"]
        assert claim["verdict"] == ("holds" if head["headline_low"] > 0.608 else "fails")
        # the flag has a row of its own right under the row it flags (its sentence wraps in the page)
        flag_cell = cells[cells.index("committee") + 13]
        assert flag_cell == f"⚑ committee vs gpt-4-0314: {flag}" and claim_verdict.endswith(f"⚑ {claim['flags'][0]}")
    else:
        assert pd.isna(head["run_effect_flag"]) and claim["flags"] == []
        assert not any("⚑" in c for c in cells) and "⚑" not in claim_verdict


@pytest.fixture
def coherent_edit(tmp_path):
    """A workspace whose run-2 judgments have one verdict edited and the contests rescored to match it, so only
    the raw reply still says what the judge said."""
    make_workspace(tmp_path, matchups=HEADLINE, reward_path=False)
    judgments, _ = _run(2, 0.0)
    row = judgments.index[(judgments["verdict"] == "B") & (judgments["order"] == "AB")][3]
    judgments.loc[row, "verdict"] = "A"
    judgments.to_parquet(tmp_path / "results/evaluation/run2/judgments.parquet", index=False)
    fx.contests_from(judgments).to_parquet(tmp_path / "results/evaluation/run2/contests.parquet", index=False)
    n = int((judgments["judge"] == fx.HEADLINE_JUDGE).sum())
    return tmp_path, row, judgments.loc[row, "contest_id"], n


def test_a_verdict_that_its_raw_reply_does_not_give_stops_summarize(coherent_edit, capsys):
    root, row, contest, n = coherent_edit
    _fails_cleanly(root, capsys, "run2/judgments.parquet", f"row {row} ", repr(contest), "order AB",
                   "recorded 'A'", "parses to 'B'", "judge-a.yaml", f"1 of {n} verdict(s) of judge 'judge-a'")


def test_a_judge_without_its_yaml_is_named(tmp_path, capsys):
    make_workspace(tmp_path, matchups=HEADLINE, reward_path=False)
    params = fx.params()
    params["evaluation"] = {**params["evaluation"], "judges_dir": str(tmp_path / "no-judges")}
    _fails_cleanly(tmp_path, capsys, "run1/judgments.parquet", "judge 'judge-a'", "no judge named 'judge-a'",
                   params=params)
