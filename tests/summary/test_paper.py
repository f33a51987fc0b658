"""Tables and numbers a paper can ``\\input``: the cards' tables in their own shape, every quoted number as
a macro, and all of it compiled under pdflatex in a one-column article."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from reappraisal.summary.paper_numbers import PREFIXES, STANDINGS, claim_numbers, numbers_tex, standing
from reappraisal.summary.render import format_cell
from reappraisal.summary.summary_table import Table

from . import fixtures as fx
from .latex_check import compile_inputs, first_page_png, text_mode_comparisons
from .test_summarize import make_workspace, run_summarize

#: The policy card's figure: 0.872 of 720 contests (6 scenarios x 3 runs x 40), wins in each scenario.
CARD_WINS = {"v1": 100, "v2": 102, "v3": 104, "v4": 106, "v5": 107, "v6": 109}  # 628 of 720 = 0.872


def _card_judgments(judgments: pd.DataFrame, run: int) -> pd.DataFrame:
    """``judgments`` with committee vs GPT-4-0314 (judge a) set to the card's figure: no errors, no ties."""
    mine = (judgments["model"] == "committee") & (judgments["opponent"] == "gpt-4-0314") & (judgments["judge"] == fx.HEADLINE_JUDGE)
    out = judgments.copy()
    for v, wins in CARD_WINS.items():
        per_run = [wins // 3 + (1 if i < wins % 3 else 0) for i in range(3)][run - 1]  # the wins spread over 3 runs
        contests = sorted(out.loc[mine & (out["vignette_id"] == v), "contest_id"].unique())
        assert len(contests) == 40
        for i, contest in enumerate(contests):
            rows = mine & (out["contest_id"] == contest)
            won = i < per_run
            out.loc[rows & (out["order"] == "AB"), "verdict"] = "A" if won else "B"
            out.loc[rows & (out["order"] == "BA"), "verdict"] = "B" if won else "A"
    out.loc[mine, "raw"] = "[[" + out.loc[mine, "verdict"] + "]] reasoning for " + out.loc[mine, "contest_id"]
    return out


@pytest.fixture(scope="module")
def card_workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("paper")
    make_workspace(root)
    for run in fx.RUNS:
        folder = root / "results" / "evaluation" / f"run{run}"
        judgments = _card_judgments(pd.read_parquet(folder / "judgments.parquet"), run)
        judgments.to_parquet(folder / "judgments.parquet", index=False)
        fx.contests_from(judgments).to_parquet(folder / "contests.parquet", index=False)
    assert run_summarize(root) == 0
    return root


def test_the_card_shaped_policy_table_reads_the_cards_figures_with_the_clustered_interval_beside(card_workspace):
    tables = card_workspace / "results/summary/tables"
    row = pd.read_csv(tables / "card_policy.csv").set_index("arm").loc["committee"]
    assert (f"{row['win_rate']:.3f}", int(row["contests"]), f"{row['wilson_low']:.3f}") == ("0.872", 720, "0.846")
    md = (tables / "card_policy.md").read_text()
    line = next(ln for ln in md.splitlines() if ln.startswith("| committee "))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[:4] == ["committee", "0.872", "720", "0.846"]
    low, high = (float(x) for x in re.match(r"\[(.*), (.*)\]", cells[4]).groups())
    assert low < 0.846 < 0.872 < high  # the scenario-clustered interval, wider than the iid bound
    assert (low, high) == pytest.approx((row["headline_low"], row["headline_high"]), abs=5e-4)
    tex = (tables / "card_policy.tex").read_text()
    assert "\\begin{table}" in tex and "S[table-format=" in tex and "$[" in tex  # a float, numbers aligned, intervals as math
    assert "committee & 0.872 & 720 & 0.846 & $[" in tex


def test_every_macro_equals_its_table_value_as_printed(card_workspace):
    root = card_workspace / "results/summary"
    tex = (root / "numbers.tex").read_text()
    defined = dict(re.findall(r"\\newcommand\{\\([A-Za-z]+)\}\{(.*)\}", tex))
    records = json.loads((root / "numbers.json").read_text())
    assert records and set(defined) == {r["macro"] for r in records}
    assert len(re.findall(r"^% claim ", tex, flags=re.M)) == len(records)  # each with where it comes from
    claims = {c["id"]: c for c in json.loads((root / "claims.json").read_text())["claims"]}
    checked = 0
    for rec in records:
        assert rec["claim"] in claims
        shown = defined[rec["macro"]].replace("\\ensuremath{-}", "-")
        if "power" in rec:  # a claim's minimum detectable effect, from claims.json
            assert shown == format_cell(claims[rec["claim"]]["power"]["mde"], "mde"), rec
            continue
        if "table" not in rec:  # a card interval's figure: the card's own or the bound recomputed from it
            claim = claims[rec["claim"]]
            figures = {**claim["rule_spec"]["card_interval"], **(claim["details"] or {})}
            assert shown == format_cell(figures[rec["card_interval"]], rec["card_interval"]), rec
            continue
        frame = pd.read_csv(root / "tables" / f"{rec['table']}.csv", keep_default_na=True)
        mask = pd.Series(True, index=frame.index)
        for column, value in rec["where"].items():
            mask &= frame[column].astype(str) == str(value)
        (value,) = frame.loc[mask, rec["column"]].to_list()
        value = None if isinstance(value, float) and pd.isna(value) else value
        assert shown == format_cell(value, rec["column"], missing="--"), rec
        checked += 1
    assert checked > 20
    # the card's numbers, under the name its claim's standing gives them (a failing claim's only behind a prefix)
    stem = PREFIXES.get(standing(claims["committee_beats_gpt4"]), "") + "CommitteeBeatsGptFour"
    assert defined[stem + "WinRate"] == "0.872" and defined[stem + "Contests"] == "720"
    assert (stem == "CommitteeBeatsGptFour") == ("CommitteeBeatsGptFourWinRate" in defined)


def test_the_tables_and_numbers_compile_in_a_one_column_article(card_workspace, tmp_path_factory):
    root = card_workspace / "results/summary"
    tex = sorted((root / "tables").glob("*.tex"), key=lambda p: (not p.name.startswith("card_"), p.name))
    inputs = [root / "numbers.tex", *tex]  # the cards' tables first: the page image shows the policy card's
    out = compile_inputs(inputs, tmp_path_factory.mktemp("latex"))
    assert out.problems == []
    png = first_page_png(out.pdf, tmp_path_factory.mktemp("screens") / "paper_tables.png")
    assert png.stat().st_size > 5_000
    print(f"first page: {png}")


def test_the_check_fails_on_a_widened_table_and_on_a_bare_comparison(tmp_path):
    wide = tmp_path / "wide.tex"
    wide.write_text("\\begin{tabular}{l}\n" + "x" * 400 + " \\\\\n\\end{tabular}\n")
    bare = tmp_path / "bare.tex"
    bare.write_text("\\begin{table}\\caption{coverage >= 0.93}\\end{table}\n")
    assert any("Overfull" in p for p in compile_inputs([wide], tmp_path / "a").problems)
    assert compile_inputs([bare], tmp_path / "b").text_mode_comparisons
    assert text_mode_comparisons("coverage $\\geq$ 0.93 and $x < y$") == []


@pytest.mark.parametrize("extra_chars", [0, 15])
def test_a_long_wide_table_fits_its_landscape_page(tmp_path, extra_chars):
    """A 40-row table as wide as the demo's length-bias table (about 155 characters a row) and 15 wider: the
    longtable, which cannot be scaled, is set in a size whose line holds it."""
    import numpy as np

    from reappraisal.summary.render import to_latex
    from reappraisal.summary.summary_table import Table

    rng = np.random.default_rng(0)
    n = 40
    frame = pd.DataFrame({
        "judge": ["reward_path:ensemble"] * n, "arm": ["committee_rm_heavy"] * n,
        "opponent": ["arm:committee_rm_heavy" + "x" * extra_chars] * n, "pool": ["train"] * n,
        "longer wins": rng.random(n), "decided": rng.integers(100, 999, n), "mean length diff": -rng.random(n) * 40,
        "win rate": rng.random(n), "length-controlled": rng.random(n), "length coef": rng.normal(size=n),
    })
    path = tmp_path / "wide_long.tex"
    path.write_text(to_latex(Table("wide_long", "A wide long table", "Its rows are wide.", "-", frame)))
    out = compile_inputs([path], tmp_path / "latex")
    assert out.problems == []


def _standing_numbers(verdict: str, table: str = "headline") -> str:
    """numbers.tex for one claim over one row, with the given verdict and table."""
    frame = pd.DataFrame([{"arm": "committee", "win_rate": 0.872, "contests": 720, "ci_low": 0.61, "bar": 0.6}])
    claim = {"id": "committee_wins", "verdict": verdict, "details": None,
             "rule_spec": {"table": table, "where": {"arm": "committee"}, "column": "win_rate", "op": ">",
                           "than": 0.5}}
    return numbers_tex(claim_numbers([claim], {table: Table(table, table, "", "", frame)}))


@pytest.mark.parametrize("verdict,table,name,standing", [
    ("holds", "confirmation", "CommitteeWinsWinRate", "confirmed"),
    ("holds", "headline", "CommitteeWinsWinRate", "exploratory"),
    ("retracted", "headline", "RetractedCommitteeWinsWinRate", "retracted"),
    ("fails", "confirmation", "RefusedCommitteeWinsWinRate", "refused"),
    ("not_computable", "headline", "RefusedCommitteeWinsWinRate", "refused"),
])
def test_a_retracted_or_refused_number_cannot_be_cited_by_its_plain_name(verdict, table, name, standing):
    tex = _standing_numbers(verdict, table)
    defined = re.findall(r"\\newcommand\{\\([A-Za-z]+)\}", tex)
    assert name in defined and defined.count(name) == 1
    if standing in ("retracted", "refused"):  # the plain name is left undefined: \input cannot pick it up unknowingly
        assert "CommitteeWinsWinRate" not in defined
    comment = tex.splitlines()[tex.splitlines().index(f"\\newcommand{{\\{name}}}{{0.872}}") - 1]
    assert comment.startswith(f"% claim committee_wins, {standing}: table {table}")


def test_every_macro_of_a_build_names_its_standing(card_workspace):
    root = card_workspace / "results/summary"
    tex = (root / "numbers.tex").read_text()
    records = json.loads((root / "numbers.json").read_text())
    verdicts = {c["id"]: c["verdict"] for c in json.loads((root / "claims.json").read_text())["claims"]}
    lines = tex.splitlines()
    assert {r["standing"] for r in records} <= set(STANDINGS) and len({r["standing"] for r in records}) > 1
    for rec in records:
        comment = lines[lines.index(next(x for x in lines if x.startswith(f"\\newcommand{{\\{rec['macro']}}}"))) - 1]
        assert comment.startswith(f"% claim {rec['claim']}, {rec['standing']}: "), comment
        cited_as_support = verdicts[rec["claim"]] == "holds"
        assert rec["macro"].startswith(("Retracted", "Refused")) != cited_as_support, rec
