"""The report as a reader sees it: headless Chromium loads it with no console error and no
network request, and the headline table and every figure are on screen."""

from __future__ import annotations

import pytest

from tests.report.browser import ensure_chromium, render
from tests.report.test_report import build_fixture_report


@pytest.fixture(scope="session")
def chromium() -> str:
    return ensure_chromium()


def test_report_opens_in_headless_chromium_with_headline_and_plots_visible(chromium, tmp_path):
    _, html = build_fixture_report(tmp_path)
    shot = tmp_path / "report.png"
    seen = render(html, shot, chromium, selectors=("#headline-table", "#demo-banner", "#claims-table"))
    assert seen.console_errors == []
    assert [u for u in seen.requests if not u.startswith("file://")] == []  # nothing fetched from a network
    assert seen.failed_requests == []
    for sel, box in seen.boxes.items():
        assert box and box["width"] > 300 and box["height"] > 20, (sel, box)
    assert seen.headline_rows == 3
    assert len(seen.figures) >= 5
    for fig in seen.figures:
        assert fig["width"] > 250 and fig["height"] > 150 and fig["shapes"] > 20, fig
    assert shot.stat().st_size > 50_000  # kept under pytest's tmp path (the last runs are kept)
    print(f"screenshot: {shot}")


def test_a_run_effect_flag_on_every_headline_row_wraps_inside_the_page(chromium, tmp_path):
    """Which rows a machine's numbers flag is not fixed: the layout must hold when every row is flagged,
    with the longest flag the summary writes (ten runs, none untestable)."""
    import json

    import pandas as pd

    from reappraisal.cli import main as cli
    from reappraisal.summary.evaluation_tables import run_effect_flag
    from tests.report.summary_fixture import BAR

    inputs, html = build_fixture_report(tmp_path)
    flag = run_effect_flag({"run_effect": {"p_value": 0.0123456, "n_runs": 10},
                            "per_run": [{"run": r, "mean_of_scenarios": 0.123456} for r in range(1, 11)]}, 0.95)
    headline = tmp_path / "results/summary/tables/headline.csv"
    frame = pd.read_csv(headline)
    frame.assign(run_effect_flag=flag).to_csv(headline, index=False)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path)
        assert cli(["report", "--out", "results/report.html", "--inputs", json.dumps(inputs),
                    "--params", json.dumps({"preset": "demo", "summary": {"bar": BAR}})]) == 0
    from html import escape

    assert html.read_text().count(escape(flag, quote=False)) == len(frame)  # every row carries it
    seen = render(html, tmp_path / "flagged.png", chromium, selectors=("#headline-table",))
    assert seen.headline_rows == len(frame)  # flag rows are not counted as rows of numbers
    assert seen.overflowing_tables == []


def _with_truth(root) -> None:
    """The fixture's summary as the demo writes it: a truth table with one interval missing its truth, and claims
    with the data's and the truth's verdicts (one disagreeing)."""
    import json

    import pandas as pd

    tables = root / "results/summary/tables"
    head = pd.read_csv(tables / "headline.csv")
    rows = [{"table": "headline", "system": r["arm"], "versus": None, "opponent": r["opponent"], "pool": "train",
             "estimate": r["win_rate"], "low": r["headline_low"], "high": r["headline_high"],
             "truth": r["win_rate"] if i else r["headline_high"] + 0.05, "truth_se": 0.01, "covered": bool(i)}
            for i, r in enumerate(head.to_dict("records"))]
    pd.DataFrame(rows).to_csv(tables / "truth.csv", index=False)
    index = json.loads((tables / "index.json").read_text())
    index.append({"name": "truth", "title": "Does the pipeline tell the truth?", "caption": "Each interval beside its truth.",
                  "estimand": "the estimand of each row's interval", "files": {"csv": "results/summary/tables/truth.csv"}})
    (tables / "index.json").write_text(json.dumps(index))
    claims_path = root / "results/summary/claims.json"
    doc = json.loads(claims_path.read_text())
    spec = {"table": "headline", "column": "headline_low", "op": ">", "than": 0.608,
            "where": {"arm": "committee", "opponent": "gpt-4-0314"}}
    for c, truth in zip(doc["claims"], ("holds", "fails", None)):
        c["rule_verdict"] = "holds" if c["verdict"] == "holds" else "fails"
        c["truth_verdict"], c["rule_spec"] = truth, spec
    claims_path.write_text(json.dumps(doc))


def test_the_first_screen_shows_the_claims_and_the_forest_and_the_truth_section_its_findings(chromium, tmp_path):
    """At 1,300 × 900, before any scrolling: every standing claim in one line with its verdict, the number and
    interval its rule reads and its truth verdict (a disagreement flagged), and the whole forest plot; further
    down, the truth section's summary (coverage per table, the miss named, the claims beside their truth
    verdicts); no table wider than its column and no caption longer than three lines."""
    import json

    import pandas as pd

    from reappraisal.cli import main as cli
    from tests.report.browser import first_screen
    from tests.report.summary_fixture import BAR

    inputs, html = build_fixture_report(tmp_path)
    _with_truth(tmp_path)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path)
        assert cli(["report", "--out", "results/report.html", "--inputs", json.dumps(inputs),
                    "--params", json.dumps({"preset": "demo", "summary": {"bar": BAR}})]) == 0
    seen = first_screen(html, tmp_path / "first_screen.png", chromium)
    claims = json.loads((tmp_path / "results/summary/claims.json").read_text())["claims"]
    standing = [c for c in claims if c["verdict"] != "retracted"]
    assert [line["claim"] for line in seen.claim_lines] == [c["id"] for c in standing]
    for line in seen.claim_lines:
        assert line["bottom"] <= 900 and line["lines"] <= 1.05, line  # on screen, one line each
    head = pd.read_csv(tmp_path / "results/summary/tables/headline.csv").iloc[0]
    first = seen.claim_lines[0]["text"]
    assert f"{head['win_rate']:.3f} [{head['headline_low']:.3f}, {head['headline_high']:.3f}]" in first
    checked = [c for c in claims if c["truth_verdict"]]
    disagree = [c["id"] for c in checked if c["rule_verdict"] != c["truth_verdict"]]
    assert disagree == ["committee_beats_gpt4"]  # the fixture's headline interval misses the bar; its truth clears it
    assert f"⚑ truth {claims[0]['truth_verdict']}" in first  # the disagreement on its line
    assert "1 retracted" in seen.counts and f"{len(checked) - 1} of {len(checked)} checkable claims" in seen.counts
    assert "disagree on committee_beats_gpt4" in seen.counts
    assert seen.forest and seen.forest["y"] >= 0 and seen.forest["y"] + seen.forest["height"] <= 900, seen.forest
    assert seen.forest["width"] > 300 and seen.forest["height"] > 150
    assert seen.truth_summary and seen.truth_summary["height"] > 100
    text = html.read_text()
    summary = text[text.index('id="truth-summary"'):]
    summary = summary[:summary.index("</section>")]
    n = len(pd.read_csv(tmp_path / "results/summary/tables/truth.csv"))
    assert f"{n - 1} of {n} intervals" in summary and f"{head['arm']} vs {head['opponent']} (train)" in summary
    assert 'id="truth-claims"' in summary and "⚑ disagree" in summary
    assert seen.overflowing_tables == []
    assert seen.captions and all(c["lines"] <= 3.05 for c in seen.captions), seen.captions
