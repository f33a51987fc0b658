"""The report renders the summary's tables, figures and claims ledger as one self-contained page."""

from __future__ import annotations

import hashlib
import html as htmllib
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

from reappraisal.cli import main as cli
from tests.report.summary_fixture import ARMS, BAR, manifest


class Page(HTMLParser):
    """Elements by id, table cells by table id, external references and scripts."""

    def __init__(self, text: str):
        super().__init__()
        self.ids: dict[str, str] = {}
        self.cells: dict[str, list[str]] = {}
        self.refs: list[str] = []
        self.tags: list[str] = []
        self._table: list[str] = []
        self._cell: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        if "id" in a:
            self.ids[a["id"]] = tag
        if tag == "table":
            self._table.append(a.get("id", ""))
        if tag in {"td", "th"}:
            self._cell = []
        for key in ("src", "href", "xlink:href"):
            if key in a:
                self.refs.append(a[key])

    def handle_endtag(self, tag):
        if tag in {"td", "th"} and self._cell is not None and self._table:
            self.cells.setdefault(self._table[-1], []).append("".join(self._cell).strip())
            self._cell = None
        if tag == "table" and self._table:
            self._table.pop()

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def build_fixture_report(root: Path) -> tuple[dict, Path]:
    """The report of the fixture's summary, built in ``root`` as the rule would (paths relative to it)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        inputs = manifest(Path("."))
        rc = cli(["report", "--out", "results/report.html", "--inputs", json.dumps(inputs),
                  "--params", json.dumps({"preset": "demo", "summary": {"bar": BAR}})])
    assert rc == 0
    return inputs, root / "results/report.html"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("report")
    inputs, path = build_fixture_report(root)
    text = path.read_text()
    return root, inputs, text, Page(text)


def test_headline_table_is_the_summary_headline_with_honest_labels(built):
    root, _, text, page = built
    head = pd.read_csv(root / "results/summary/tables/headline.csv")
    cells = page.cells["headline-table"]
    assert "iid Wilson CI (ignores clustering)" in cells
    assert "Percentile cluster bootstrap CI (under-covers)" in cells
    for r in head.to_dict("records"):
        i = cells.index(r["arm"])
        row = cells[i : i + 12]
        assert row[2] == f"{r['win_rate']:.3f}"
        assert row[3] == str(r["contests"])
        assert row[5] == f"[{r['headline_low']:.3f}, {r['headline_high']:.3f}]"
        assert row[6] == f"[{r['wilson_low']:.3f}, {r['wilson_high']:.3f}]"
        assert row[7] == f"[{r['boot_low']:.3f}, {r['boot_high']:.3f}]"
    caption = json.loads((root / "results/summary/tables/index.json").read_text())[0]["caption"]
    assert caption in text
    # the judge and the interval method, one per table, are named in the caption
    headline_caption = text[text.index('id="headline-caption"'):text.index('id="headline-table"')]
    assert f"Held-out judge: {head['judge'].iloc[0]}" in headline_caption
    assert head["headline_method"].iloc[0] in headline_caption
    assert "DEMO PRESET" in text and page.ids.get("demo-banner") == "p"


def test_a_weak_judge_accepted_knowingly_is_flagged_above_the_headline(built):
    root, _, text, page = built
    cal = json.loads((root / "results/evaluation/judge_calibration.json").read_text())
    assert cal["decision"]["accepted_weak"] and cal["decision"]["failed"] == ["demo-judge"]
    warning = text[text.index('id="weak-judge"'):text.index('id="headline-table"')]
    agreement = cal["decision"]["verdicts"]["demo-judge"]["agreement"]
    assert "demo-judge" in warning and f"{agreement:.4f}" in warning and "accept_weak_judge" in warning
    assert "Selected judge: <b>demo-judge</b>" in text


def test_every_table_in_the_index_is_rendered_and_figures_are_inline_svg(built):
    root, _, text, page = built
    index = json.loads((root / "results/summary/tables/index.json").read_text())
    for entry in index:
        if entry["name"] != "headline":
            assert f"table-{entry['name']}" in page.ids, entry["name"]
        df = pd.read_csv(root / entry["files"]["csv"])
        assert len(page.cells.get("headline-table" if entry["name"] == "headline" else f"table-{entry['name']}", [])) >= len(df)
    # one forest plot leads; per-scenario and per-run views are small multiples (one figure each, a panel per
    # opponent); gold/proxy and health curves; calibration
    figures = [k for k in page.ids if k.startswith("fig-")]
    assert set(figures) == {"fig-forest", "fig-scenario-study", "fig-scenario-other", "fig-run", "fig-gold-proxy", "fig-gold-proxy-kl",
                            "fig-training", "fig-calibration"}
    assert text.count("<svg") == len(figures)
    assert text.index('id="fig-forest"') < text.index('id="headline-table"')
    # Each arm's point is drawn: matplotlib keeps each text as a comment beside its glyph paths.
    for fig in ("fig-scenario-study", "fig-forest", "fig-gold-proxy"):
        svg = text[text.index(f'id="{fig}"'):]
        svg = svg[: svg.index("</figure>")]
        for arm in ARMS:
            assert f"<!-- {arm}" in svg, (fig, arm)


def test_page_is_self_contained(built):
    _, _, text, page = built
    assert "script" not in page.tags and "link" not in page.tags and "img" not in page.tags
    external = [r for r in page.refs if re.match(r"^[a-z]+://", r) or r.startswith("//")]
    assert external == []
    assert not re.search(r"url\(\s*['\"]?(https?:)?//", text)  # no remote CSS resources
    assert "@import" not in text


def test_claims_ledger_strikes_retractions_and_links_each_value_to_its_lineage(built):
    root, _, text, page = built
    claims = json.loads((root / "results/summary/claims.json").read_text())["claims"]
    retracted = next(c for c in claims if c["verdict"] == "retracted")
    row = text[text.index(f'id="claim-{retracted["id"]}"'):]
    row = row[: row.index("</tr>")]
    assert f"<del>{retracted['text']}</del>" in htmllib.unescape(row)
    assert retracted["retraction"]["reason"] in row and retracted["retraction"]["date"] in row
    assert f'href="#claim-{retracted["retraction"]["replacement"]}"' in row
    flagged = next(c for c in claims if c["flag"])
    assert flagged["flag"] in text
    for c in claims:
        if c["lineage"]:
            assert f'href="#lineage-{c["id"]}"' in text and f"lineage-{c['id']}" in page.ids
            block = text[text.index(f'id="lineage-{c["id"]}"'):]
            block = block[: block.index("</table>")]
            for entry in c["lineage"]:
                assert entry["sha256"] in block and entry["path"] in block and entry["dvc_stage"] in block
    held = next(c for c in claims if c["verdict"] == "holds" or c["verdict"] == "fails")
    assert f"{held['value']:.4f}</a>" in text


def test_lineage_lists_every_input_with_its_hash_and_policy_arms_come_from_kinds(built):
    root, inputs, text, page = built
    for spec in inputs.values():
        path = spec["path"] if isinstance(spec, dict) else spec
        digest = hashlib.sha256((root / path).read_bytes()).hexdigest()
        assert digest in page.cells["lineage-table"], path
    # An arm named "policy_heavy" is an arm like any other (nothing is parsed back from names).
    health_cells = page.cells["health-table"]
    assert set(ARMS) <= set(health_cells)


def test_without_summary_the_page_says_so(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    inputs = {k: v for k, v in manifest(Path(".")).items() if k not in {"summary_tables", "claims"}}
    assert cli(["report", "--out", "r.html", "--inputs", json.dumps(inputs), "--params", '{"preset": "paper"}']) == 0
    text = Path("r.html").read_text()
    assert 'id="no-summary"' in text and "No headline table" in text and "DEMO PRESET" not in text
    assert 'id="fig-training"' in text


@pytest.mark.parametrize(
    "breakage,message",
    [
        (lambda root: _drop_column(root / "results/summary/tables/headline.csv", "wilson_low"), "missing column(s) ['wilson_low']"),
        (lambda root: _edit_claims(root, verdict="probably"), "verdict 'probably' is not one of"),
        (lambda root: _edit_claims(root, drop="lineage"), "missing key(s) ['lineage']"),
        (lambda root: (root / "results/summary/tables/per_run.csv").unlink(), "table file does not exist"),
        (lambda root: (root / "results/summary/tables/index.json").write_text("[{"), "not valid JSON"),
    ],
)
def test_bad_summary_input_is_one_clear_error_and_no_report(tmp_path, monkeypatch, capsys, breakage, message):
    monkeypatch.chdir(tmp_path)
    inputs = manifest(Path("."))
    breakage(tmp_path)
    rc = cli(["report", "--out", "results/report.html", "--inputs", json.dumps(inputs), "--params", '{"preset": "demo"}'])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and message in err[0], err
    assert "results/" in err[0]  # names the file
    assert not (tmp_path / "results/report.html").exists()


def _drop_column(path: Path, column: str) -> None:
    pd.read_csv(path).drop(columns=[column]).to_csv(path, index=False)


def _edit_claims(root: Path, verdict: str | None = None, drop: str | None = None) -> None:
    path = root / "results/summary/claims.json"
    doc = json.loads(path.read_text())
    if verdict:
        doc["claims"][0]["verdict"] = verdict
    if drop:
        del doc["claims"][0][drop]
    path.write_text(json.dumps(doc))


def test_interval_labels_follow_the_configured_confidence_and_the_bar_is_the_schemas(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    inputs = manifest(Path("."))
    assert cli(["report", "--out", "r.html", "--inputs", json.dumps(inputs),
                "--params", json.dumps({"preset": "paper", "summary": {"confidence": 0.9}})]) == 0
    text = Path("r.html").read_text()
    assert "Headline 90% CI" in Page(text).cells["headline-table"]
    assert "its headline 90% interval" in text and "95%" not in text.split('id="fig-forest"')[1].split("</figure>")[0]
    from reappraisal.config import with_defaults

    caption = text[text.index('id="headline-caption"'):text.index('id="headline-table"')]
    assert f"the bar {with_defaults('summary', {})['bar']}." in caption  # the schema's default, not the report's own


#: The longest short caption the report writes: with the table's number and title and the how-to-read link, three
#: lines of the page's text column at 1,300 px (the browser tests measure the lines themselves).
MAX_CAPTION_CHARS = 240


def test_every_summary_table_has_a_short_report_caption_and_the_files_keep_the_full_one(built):
    """The report's caption of each table is at most MAX_CAPTION_CHARS once filled with long names, for every table the
    summary writes (table_texts.yaml, and those placed in a section); the page still carries the full caption (behind
    its disclosure), as the table's files do."""
    from reappraisal.report.formatting import TEXTS_PATH
    from reappraisal.summary.texts import TABLE_TEXTS, fill, load_texts

    texts = load_texts(TEXTS_PATH)
    names = set(load_texts(TABLE_TEXTS)["tables"]) | {t for s in texts["sections"] for t in s["tables"]}
    values = {"judge": "llama-3.1-70b-instruct", "opponent": "gpt-4-0314", "arm": "committee_rm_heavy", "bar": 0.608,
              "level": "95%"}
    for name in sorted(names):
        assert name in texts["table_captions"], name
        assert len(fill(texts["table_captions"][name], **values)) <= MAX_CAPTION_CHARS, name
    root, _, text, page = built
    shown = htmllib.unescape(text)
    for entry in json.loads((root / "results/summary/tables/index.json").read_text()):
        assert entry["caption"] in shown, entry["name"]  # the full caption, behind "Full caption"
    assert 'href="#how-to-read"' in text and page.ids.get("how-to-read") == "section"
    note = htmllib.unescape(text[text.index('id="how-to-read"'):text.index("</section>", text.index('id="how-to-read"'))])
    head = pd.read_csv(root / "results/summary/tables/headline.csv")
    estimand = json.loads((root / "results/summary/tables/index.json").read_text())[0]["estimand"]
    assert estimand in note and head["headline_method"].iloc[0] in note
    assert f"smallest p it can reach is {head['signflip_min_p'].min():.4f}" in note and "α = 0.05" in note


def test_the_claims_ledger_shows_each_claim_s_false_hold_rate_and_power_from_the_latest_calibration(tmp_path,
                                                                                                     monkeypatch):
    from reappraisal.calibration.coverage import claim_calibration

    root = tmp_path
    build_fixture_report(root)
    monkeypatch.chdir(root)
    claims = json.loads(Path("results/summary/claims.json").read_text())["claims"]
    ids = [c["id"] for c in claims if c["verdict"] in ("holds", "fails")][:2]
    rows = [{"world": w, "claim": cid, "rule": "r", "rule_verdict": "holds" if (w + k) % 3 == 0 else "fails",
             "truth_verdict": "fails" if w % 2 else "holds"} for w in range(6) for k, cid in enumerate(ids)]
    calibration = Path("results/calibration/claims.csv")
    calibration.parent.mkdir(parents=True)
    claim_calibration(pd.DataFrame(rows)).to_csv(calibration, index=False)
    pd.DataFrame([{"table": "headline", "method": "reported", "worlds": 6, "intervals": 60, "covered": 57,
                   "coverage": 0.95, "coverage_low": 0.86, "coverage_high": 0.99, "miss_below": 0.03,
                   "miss_above": 0.02, "median_width": 0.21}]).to_csv(calibration.with_name("summary.csv"),
                                                                      index=False)
    digest = hashlib.sha256(calibration.read_bytes()).hexdigest()
    args = ["report", "--out", "results/report.html", "--inputs", json.dumps(manifest(Path("."))),
            "--params", json.dumps({"preset": "demo", "summary": {"bar": BAR}}),
            "--worlds-calibration", str(calibration), "--worlds-calibration-sha256", digest]
    assert cli(args) == 0
    text = Path("results/report.html").read_text()
    assert 'id="worlds-calibration"' in text and "Across 6 calibration worlds" in text
    row = text[text.index(f'id="claim-{ids[0]}"'):]
    row = htmllib.unescape(row[: row.index("</tr>")])
    # world 0, 2, 4: truth holds, the rule holds in world 0 only (of them); worlds 1, 3, 5: truth fails, holds in 3
    assert "false holds 1/3" in row and "power 1/3" in row and "6 worlds" in row
    # a claim the worlds never set against a truth (no truth, or its arm not trained there) says so
    absent = next(c["id"] for c in claims if c["id"] not in ids)
    row = text[text.index(f'id="claim-{absent}"'):]
    assert "no truth verdict in any of the 6 worlds" in htmllib.unescape(row[: row.index("</tr>")])
    coverage = text[text.index('id="worlds-coverage"'):]
    assert "0.9500" in coverage[: coverage.index("</table>")]
    calibration.write_text(calibration.read_text() + "\n")  # changed since the command was written: refused
    assert cli(args) != 0
