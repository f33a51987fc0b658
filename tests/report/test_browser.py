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
