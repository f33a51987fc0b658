"""The README's main command on a clean checkout: the demo preset builds results/report.html,
and every section of the report is traceable to the artifact it was rendered from."""

from __future__ import annotations

import hashlib
import json
import re

import pytest

from tests.workflow_utils import make_clean_copy, run_snakemake


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    repo = make_clean_copy(tmp_path_factory.mktemp("demo") / "repo")
    run_snakemake(repo, "--cores", "2", "results/report.html")
    return repo


def test_report_is_built_with_demo_banner_and_every_stage(demo_run):
    html = (demo_run / "results/report.html").read_text()
    assert "DEMO PRESET" in html and "no scientific meaning" in html
    titles = re.findall(r"<h2 id=([^>]+)>", html)
    for section in ("normalize", "split", "leakage", "reward_models", "grm", "lineage"):
        assert section in titles
    for arm in ("committee", "rm_only", "committee_rm_heavy"):
        assert f"policy_{arm}" in titles and f"policy_{arm}_training_log" in titles


def test_lineage_hashes_match_the_artifacts(demo_run):
    html = (demo_run / "results/report.html").read_text()
    lineage = html[html.index("<h2 id=lineage>") :]
    rows = re.findall(r"<td>([^<]+)</td><td>([0-9a-f]{64})</td>", lineage)
    assert len(rows) >= 11
    for path, digest in rows:
        assert hashlib.sha256((demo_run / path).read_bytes()).hexdigest() == digest, path


def test_report_numbers_come_from_the_artifacts(demo_run):
    html = (demo_run / "results/report.html").read_text()
    metrics = json.loads((demo_run / "results/metrics/reward_models.json").read_text())
    accuracy = metrics["ensemble"]["pairwise"]["accuracy"]
    assert f"{accuracy:.4f}" in html


def test_nothing_left_to_do_after_the_run(demo_run):
    proc = run_snakemake(demo_run, "-n", "results/report.html")
    assert "Nothing to be done" in proc.stdout + proc.stderr
