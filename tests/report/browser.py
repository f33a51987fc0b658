"""Open an HTML file in headless Chromium (Debian's package, driven by Playwright over the DevTools protocol)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from tests.apt import install_when_missing

CHROMIUM = "/usr/bin/chromium"


def ensure_chromium() -> str:
    """The system chromium, installed with apt-get when missing (CI starts on a fresh machine)."""
    install_when_missing(_chromium_path, ["chromium"], timeout=1200)
    return _chromium_path()


def _chromium_path() -> str | None:
    return shutil.which("chromium") or (CHROMIUM if Path(CHROMIUM).exists() else None)


@dataclass
class Rendered:
    console_errors: list[str] = field(default_factory=list)
    boxes: dict[str, dict | None] = field(default_factory=dict)
    headline_rows: int = 0
    figures: list[dict] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    #: tables wider than the page's text column: {id or data-table, table width, column width}
    overflowing_tables: list[dict] = field(default_factory=list)


def render(html: Path, screenshot: Path, chromium: str, selectors: tuple[str, ...] = ()) -> Rendered:
    """Load ``html`` (file://), record console errors, page errors and every request, measure
    ``selectors`` and every figure's SVG, and save a full-page screenshot."""
    from playwright.sync_api import sync_playwright

    out = Rendered()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.on("console", lambda m: out.console_errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: out.console_errors.append(f"pageerror: {e}"))
            page.on("request", lambda r: out.requests.append(r.url))
            page.on("requestfailed", lambda r: out.failed_requests.append(r.url))
            page.goto(html.resolve().as_uri(), wait_until="load")
            for sel in selectors:
                loc = page.locator(sel)
                out.boxes[sel] = loc.first.bounding_box() if loc.count() and loc.first.is_visible() else None
            out.headline_rows = page.locator("#headline-table tbody tr:not(.flag-row):visible").count()
            out.figures = page.evaluate(
                """() => [...document.querySelectorAll('figure.plot')].map(f => {
                    const s = f.querySelector('svg'); const r = s ? s.getBoundingClientRect() : null;
                    return {id: f.id, width: r ? r.width : 0, height: r ? r.height : 0,
                            shapes: s ? s.querySelectorAll('path, use').length : 0};
                })"""
            )
            out.overflowing_tables = page.evaluate(
                """() => { const column = document.querySelector('main').getBoundingClientRect().width;
                    return [...document.querySelectorAll('main table')].filter(t => !t.closest('details:not([open])'))
                      .map(t => ({table: t.id || t.dataset.table || t.parentElement.id || '?',
                                  width: t.getBoundingClientRect().width, column: column}))
                      .filter(x => x.width > x.column + 1); }"""
            )
            page.screenshot(path=str(screenshot), full_page=True)
        finally:
            browser.close()
    return out


@dataclass
class FirstScreen:
    """What a reader sees of the page in a ``width`` × ``height`` window before scrolling, and its captions."""

    viewport: dict
    #: each claim line of the first screen: its box and its text's line count
    claim_lines: list[dict] = field(default_factory=list)
    forest: dict | None = None
    #: the first-screen summary line (counts, truth agreement)
    counts: str = ""
    #: every table caption with all disclosures open: {text (its start), lines}
    captions: list[dict] = field(default_factory=list)
    truth_summary: dict | None = None
    overflowing_tables: list[dict] = field(default_factory=list)


def first_screen(html: Path, screenshot: Path, chromium: str, width: int = 1300, height: int = 900) -> FirstScreen:
    """Load ``html`` at ``width`` × ``height``, measure the first screen (claim lines, forest plot) before any
    scrolling and save it as ``screenshot``; then open every disclosure and count each caption's lines."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(html.resolve().as_uri(), wait_until="load")
            out = FirstScreen(viewport={"width": width, "height": height, "scroll_y": page.evaluate("window.scrollY")})
            out.claim_lines = page.evaluate(
                """() => [...document.querySelectorAll('#conclusions-table tr.claim-line')].map(tr => {
                    const r = tr.getBoundingClientRect(); const cell = tr.querySelector('td.ctext');
                    const s = getComputedStyle(cell), lh = parseFloat(s.lineHeight);
                    const inner = cell.clientHeight - parseFloat(s.paddingTop) - parseFloat(s.paddingBottom);
                    return {claim: tr.dataset.claim, top: r.top, bottom: r.bottom,
                            lines: Math.round(inner / lh * 10) / 10,
                            text: tr.innerText};
                })"""
            )
            forest = page.locator("#conclusions #fig-forest svg")
            out.forest = forest.bounding_box() if forest.count() else None
            counts = page.locator("#conclusions .fs-counts")
            out.counts = counts.inner_text() if counts.count() else ""
            page.screenshot(path=str(screenshot))
            summary = page.locator("#truth-summary")
            out.truth_summary = summary.bounding_box() if summary.count() else None
            out.overflowing_tables = page.evaluate(
                """() => { const column = document.querySelector('main').getBoundingClientRect().width;
                    return [...document.querySelectorAll('main table')].filter(t => !t.closest('details:not([open])'))
                      .map(t => ({table: t.id || t.dataset.table || t.parentElement.id || '?',
                                  width: t.getBoundingClientRect().width, column: column}))
                      .filter(x => x.width > x.column + 1); }"""
            )
            page.evaluate("() => document.querySelectorAll('details').forEach(d => d.open = true)")
            out.captions = page.evaluate(
                """() => [...document.querySelectorAll('p.caption')].map(c => {
                    const lh = parseFloat(getComputedStyle(c).lineHeight);
                    return {text: c.innerText.slice(0, 80), lines: Math.round(c.getBoundingClientRect().height / lh * 10) / 10};
                })"""
            )
        finally:
            browser.close()
    return out
