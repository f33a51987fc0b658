"""The README's main command on a clean checkout: the demo preset builds results/report.html and the
model cards; every section is traceable to the artifact it was rendered from; the page opens in
headless Chromium; and every module a job loaded is among its DVC stage's code deps."""

from __future__ import annotations

import hashlib
import json
import re

import pandas as pd
import pytest
import yaml

from reappraisal.import_closure import module_path
from reappraisal.report.cards_io import gold_health, training_verdict, trajectory_fit_row
from tests.report.browser import ensure_chromium, first_screen, render
from tests.workflow_utils import imported_package_modules

ARMS = ("committee", "rm_only", "committee_rm_heavy", "bradley_terry", "grm_only", "beta0")
#: The trained policies (folders in results/policy/): an arm of one seed, or each seed of the v1 arm.
POLICIES = ("committee", "rm_only", "committee_rm_heavy", "bradley_terry-seed0", "bradley_terry-seed1", "grm_only",
            "beta0")
#: Every candidate beside the arms: the v1 arm's two seeds and the best-of-N system.
CANDIDATES = ("bradley_terry-seed0", "bradley_terry-seed1", "committee-bon4-ensemble")


@pytest.fixture(scope="module")
def screens(tmp_path_factory):
    """Where the page images are kept (the last runs of pytest's tmp paths are kept)."""
    return tmp_path_factory.mktemp("screens")


def test_report_is_built_with_demo_banner_and_every_section(demo_run):
    html = (demo_run / "results/report.html").read_text()
    assert "DEMO PRESET" in html and "no scientific meaning" in html
    ids = set(re.findall(r'id="([^"]+)"', html))
    for section in ("conclusions", "conclusions-table", "how-to-read", "headline", "per-scenario", "per-run", "head-to-head",
                    "selection", "judges", "training", "truth", "truth-summary", "truth-coverage", "truth-claims", "claims",
                    "reproduce", "model-cards", "lineage", "fig-training", "health-table"):
        assert section in ids, section
    for artifact in ("normalize", "split", "leakage", "reward_models", "grm", "preregistration", "confirmation"):
        assert f"artifact-{artifact}" in ids, artifact
    health = html[html.index('id="health-table"') :]
    health = health[: health.index("</table>")]
    for arm in POLICIES:
        assert f"<td>{arm}</td>" in health


def test_headline_is_filled_from_the_demo_contests_once_the_summary_runs(demo_run):
    import pandas as pd

    html = (demo_run / "results/report.html").read_text()
    assert 'id="headline-table"' in html
    head = pd.read_csv(demo_run / "results/summary/tables/headline.csv")
    vs_reference = head[head["opponent"] == "gpt-4-0314"]
    assert set(vs_reference["arm"]) == set(ARMS) | set(CANDIDATES)
    # Filled: every arm has a win rate over scored contests, and the page shows it.
    assert (vs_reference["contests"] > 0).all() and vs_reference["win_rate"].notna().all(), vs_reference.to_dict("records")
    table = html[html.index('id="headline-table"') :]
    table = table[: table.index("</table>")]
    for rate in vs_reference["win_rate"]:
        assert f">{rate:.3f}<" in table


def test_the_demo_measures_with_a_calibrated_panel_judge(demo_run):
    """The held-out judge sees quality: it passes calibration on human pairs without being accepted knowingly,
    every headline interval has width, and the report shows the comparisons, the gold/proxy picture and length bias."""
    import pandas as pd

    cal = json.loads((demo_run / "results/evaluation/judge_calibration.json").read_text())
    decision = cal["decision"]
    assert decision["selected"] == ["demo-panel"] and decision["ok"] and not decision["accepted_weak"]
    assert decision["min_agreement"] >= 0.8 and decision["verdicts"]["demo-panel"]["agreement"] >= 0.8
    # the tiny transformer judges stay candidates, and the gate is seen failing them
    assert not decision["verdicts"]["demo-judge"]["passed"] and not decision["verdicts"]["demo-judge-untrained"]["passed"]
    head = pd.read_csv(demo_run / "results/summary/tables/headline.csv")
    assert (head["judge"] == "demo-panel").all()
    assert (head["headline_high"] - head["headline_low"] > 0).all(), head[["arm", "opponent", "headline_low"]]
    html = (demo_run / "results/report.html").read_text()
    table = html[html.index('id="headline-table"'):]
    table = table[: table.index("</table>")]
    for opponent in ("base-policy", "arm:rm_only"):
        row = head[(head["arm"] == "committee") & (head["opponent"] == opponent)].iloc[0]
        assert f"<td>{opponent}</td>" in table
        assert f"[{row['headline_low']:.3f}, {row['headline_high']:.3f}]" in table
    caption = html[html.index('id="headline-caption"'):html.index('id="headline-table"')]
    agreement = decision["verdicts"]["demo-panel"]["agreement"]
    assert f"Held-out judge: demo-panel, selected by calibration against human preference (agreement {agreement:.3f}" in caption
    for figure in ('id="fig-forest"', 'id="fig-gold-proxy"', 'id="table-length_bias"', 'id="table-length_bins"'):
        assert figure in html, figure
    for arm in POLICIES:
        log = pd.read_csv(demo_run / f"results/policy/{arm}/training_log.csv")
        assert log["gold"].notna().all(), arm
    bias = pd.read_csv(demo_run / "results/summary/tables/length_bias.csv")
    assert {"demo-panel"} <= set(bias["judge"]) and bias["lc_win_rate"].notna().all()


def test_lineage_hashes_match_the_artifacts(demo_run):
    html = (demo_run / "results/report.html").read_text()
    lineage = html[html.index('id="lineage-table"') :]
    rows = re.findall(r'<td><code>([^<]+)</code></td><td class="hash">([0-9a-f]{64})</td>', lineage)
    assert len(rows) >= 11
    for path, digest in rows:
        assert hashlib.sha256((demo_run / path).read_bytes()).hexdigest() == digest, path


def test_report_numbers_come_from_the_artifacts(demo_run):
    html = (demo_run / "results/report.html").read_text()
    metrics = json.loads((demo_run / "results/reward/metrics.json").read_text())
    accuracy = metrics["ensemble"]["pairwise"]["accuracy"]
    assert f"{accuracy:.4f}" in html


def test_model_cards_are_regenerated_from_the_artifacts(demo_run):
    rm = json.loads((demo_run / "results/reward/metrics.json").read_text())
    card = (demo_run / "results/reward/README.md").read_text()
    assert card.startswith("---\n") and "# Reappraisal reward-model ensemble" in card
    assert f"**{rm['ensemble']['pairwise']['accuracy']:.4f}**" in card
    for seed_dir in rm["model_dirs"]:
        metrics = (demo_run / seed_dir / "metrics.json").read_bytes()
        assert hashlib.sha256(metrics).hexdigest() in card  # provenance
    grm = json.loads((demo_run / "results/grm/metrics.json").read_text())
    card = (demo_run / "results/grm/README.md").read_text()
    final = grm["models"][grm["headline_model"]]
    assert f"{final['accuracy']['accuracy']:.4f}" in card and grm["statement"] in card
    fits = pd.read_csv(demo_run / "results/summary/tables/trajectory_fit.csv")
    for arm in POLICIES:
        health = json.loads((demo_run / f"results/policy/{arm}/health.json").read_text())
        card = (demo_run / f"results/policy/{arm}/README.md").read_text()
        assert f"# Reappraisal policy, arm `{arm}`" in card
        fit = trajectory_fit_row(fits, arm)  # the truths along training, where the arm kept checkpoints
        gold = gold_health(pd.read_csv(demo_run / f"results/policy/{arm}/training_log.csv"), fit)
        assert (gold["source"] == "truths") == (fit is not None)
        verdict = training_verdict(health, gold)  # the record's, unless gold fell from its peak beyond noise
        assert f"### Training health: **{verdict}**" in card
        if gold and gold["fell"]:
            assert verdict != "healthy" and "Gold fell" in card
        assert "DEMO PRESET" in card


def test_report_opens_in_headless_chromium(demo_run, screens):
    shot = screens / "demo_report.png"
    seen = render(demo_run / "results/report.html", shot, ensure_chromium(), selectors=("#demo-banner", "#health-table"))
    assert seen.console_errors == [] and seen.failed_requests == []
    assert seen.overflowing_tables == []  # every table fits the page's text column
    assert [u for u in seen.requests if not u.startswith("file://")] == []
    assert all(box and box["width"] > 300 for box in seen.boxes.values()), seen.boxes
    assert any(f["id"] == "fig-training" and f["width"] > 250 for f in seen.figures)
    print(f"screenshot: {shot}")


def test_the_demo_tables_and_numbers_compile_for_a_paper(demo_run, screens, tmp_path_factory):
    from tests.summary.latex_check import compile_inputs, first_page_png

    root = demo_run / "results/summary"
    tex = sorted((root / "tables").glob("*.tex"), key=lambda p: (not p.name.startswith("card_"), p.name))
    assert [p.stem for p in tex[:5]] == ["card_ablation", "card_head_to_head", "card_ood", "card_policy",
                                         "card_reward_models"]
    out = compile_inputs([root / "numbers.tex", *tex], tmp_path_factory.mktemp("latex"))
    assert out.problems == []
    png = first_page_png(out.pdf, screens / "demo_paper_tables.png")  # beside the report's screenshot
    print(f"first page: {png}")
    html = (demo_run / "results/report.html").read_text()
    assert 'href="summary/numbers.tex"' in html and 'href="summary/tables/card_policy.tex"' in html


def test_every_module_a_job_loaded_is_a_code_dep_of_its_dvc_stage(demo_run):
    stages = yaml.safe_load((demo_run / "dvc.yaml").read_text())["stages"]
    checked = 0
    for name, stage in stages.items():
        rules = stage["cmd"].split("--allowed-rules", 1)[1].split("--", 1)[0].split()
        logs = [p for r in rules for p in [demo_run / "logs" / f"{r}.log", *sorted((demo_run / "logs" / r).glob("*.log"))] if p.is_file()]
        loaded = set().union(*(imported_package_modules(p.read_text()) for p in logs)) if logs else set()
        deps = set(stage["deps"])
        for module in loaded:
            rel = str(module_path(demo_run / "src", module).relative_to(demo_run))
            assert rel in deps, f"stage {name} ran {module} ({rel}) but dvc.yaml does not list it"
        checked += bool(loaded)
    assert checked >= 12  # every stage the demo ran printed what it loaded


def test_the_first_screen_says_what_the_demo_concludes_and_whether_it_is_true(demo_run, screens):
    """At 1,300 × 900 before scrolling: every standing claim of the ledger in one line, with the number and interval
    its rule reads and its truth verdict (each disagreement flagged on its line and named above), and the whole
    headline forest plot. Further down, the truth section counts the intervals covering their truth per table
    (truth.csv) and names every miss; every caption is at most three lines and no table is wider than its column."""
    seen = first_screen(demo_run / "results/report.html", screens / "demo_first_screen.png", ensure_chromium())
    ledger = json.loads((demo_run / "results/summary/claims.json").read_text())
    by_id = {c["id"]: c for c in ledger["claims"]}
    assert [line["claim"] for line in seen.claim_lines] == [c["id"] for c in ledger["claims"] if c["verdict"] != "retracted"]
    for line in seen.claim_lines:
        assert line["bottom"] <= 900 and line["lines"] <= 1.05, line
        c = by_id[line["claim"]]
        if c["truth_verdict"] and c["truth_verdict"] != c["rule_verdict"]:
            assert f"⚑ truth {c['truth_verdict']}" in line["text"], line
        elif c["truth_verdict"]:
            assert f"✓ {c['truth_verdict']}" in line["text"], line
    head = pd.read_csv(demo_run / "results/summary/tables/headline.csv")
    row = head[(head["arm"] == "committee") & (head["opponent"] == "gpt-4-0314")].iloc[0]
    line = next(x for x in seen.claim_lines if x["claim"] == "committee_beats_gpt4")
    assert f"{row['win_rate']:.3f} [{row['headline_low']:.3f}, {row['headline_high']:.3f}]" in line["text"]
    truth = ledger["truth"]
    assert f"{truth['agree']} of {truth['claims_with_truth']} checkable claims" in seen.counts
    assert all(d in seen.counts for d in truth["disagree"])
    assert seen.forest and seen.forest["y"] >= 0 and seen.forest["y"] + seen.forest["height"] <= 900, seen.forest
    html = (demo_run / "results/report.html").read_text()
    summary = html[html.index('id="truth-summary"'):]
    summary = summary[:summary.index("</section>")]
    frame = pd.read_csv(demo_run / "results/summary/tables/truth.csv")
    assert f"{int(frame['covered'].sum())} of {len(frame)} intervals" in summary
    for table, part in frame.groupby("table"):
        assert f"<td>{table}</td><td class=\"num\">{len(part)}</td><td class=\"num\">{int(part['covered'].sum())}</td>" in summary
    for miss in frame[~frame["covered"]].to_dict("records"):
        assert f"truth {miss['truth']:.3f}" in summary, miss
    assert seen.truth_summary and seen.truth_summary["height"] > 100
    assert seen.overflowing_tables == []
    assert all(c["lines"] <= 3.05 for c in seen.captions), [c for c in seen.captions if c["lines"] > 3.05]
    print(f"first screen: {screens / 'demo_first_screen.png'}")


def test_every_demo_card_parses_with_huggingface_hub_and_carries_a_model_index(demo_run):
    from huggingface_hub import ModelCard

    cards = [demo_run / "results/reward/README.md", demo_run / "results/grm/README.md",
             *[demo_run / f"results/policy/{arm}/README.md" for arm in POLICIES]]
    head = pd.read_csv(demo_run / "results/summary/tables/headline.csv")
    for path in cards:
        card = ModelCard(path.read_text(), ignore_metadata_errors=False)
        assert card.data.to_dict()["model-index"] and card.data.eval_results, path
        arm = path.parent.name
        if arm in POLICIES:
            rates = {r.metric_args["opponent"]: r.metric_value for r in card.data.eval_results if r.dataset_config == "study"}
            rows = head[head["arm"] == arm]
            assert rates == pytest.approx(dict(zip(rows["opponent"], rows["win_rate"]))), arm
