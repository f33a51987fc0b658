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
