"""The demo's simulated rater panel as a judge: agrees with the planted quality at the rate its rating model
implies, is reproducible per run and independent across runs, reads no reward-path artifact, demo preset only."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from reappraisal.data.demo_gold import RatingModel, gold_quality, gold_reading, panel_majority_probability, world_scenario
from reappraisal.errors import ConfigError
from reappraisal.evaluation.backends import make_backend
from reappraisal.evaluation.judge_spec import load_judge, spec_from_mapping
from reappraisal.evaluation.panel import check_panel_allowed

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "data" / "demo"
STUDY_FILES = {"study1_reappraisals.csv": ("reappraisal_id", "response"),
               "study3_reappraisals.csv": ("rid", "reappraisal_text"),
               "study4_reappraisals.csv": ("reappraisal_id", "response")}


def _human_items() -> pd.DataFrame:
    texts = {}
    for name, (rid, col) in STUDY_FILES.items():
        d = pd.read_csv(DEMO / name)
        texts.update(zip(d[rid], d[col]))
    truth = pd.read_csv(DEMO / "truth" / "reappraisal_quality.csv")
    truth = truth[truth["reappraisal_id"].isin(texts)].copy()
    truth["text"] = truth["reappraisal_id"].map(texts)
    scenarios = pd.read_csv(DEMO / "vignettes.csv").set_index("vignette_id")["text"]
    truth["scenario"] = truth["vignette_id"].map(scenarios)
    return truth


def _pairs(items: pd.DataFrame, per_scenario: int, min_gap: float) -> list[tuple[dict, dict]]:
    """Within-scenario pairs whose planted quality differs by at least ``min_gap`` (higher first)."""
    out = []
    for _, group in items.groupby("vignette_id", sort=True):
        rows = group.sort_values("reappraisal_id").head(per_scenario).to_dict("records")
        for a, b in itertools.combinations(rows, 2):
            if abs(a["quality"] - b["quality"]) >= min_gap:
                out.append((a, b) if a["quality"] > b["quality"] else (b, a))
    return out


@pytest.fixture(scope="module")
def panel():
    return load_judge("demo-panel")


def test_panel_agrees_with_the_planted_quality_at_the_rate_its_rating_model_implies(panel):
    pairs = _pairs(_human_items(), per_scenario=40, min_gap=0.5)
    assert len(pairs) > 1000
    backend = make_backend(panel, run=1)
    raters = int(panel.panel["raters"])
    model = RatingModel.for_dimension(panel.panel["dimension"], panel.panel["study"])
    conversations, implied = [], []
    for k, (hi, lo) in enumerate(pairs):
        # the truth-better text alternates between slots, so slot position carries no information
        a, b = (hi, lo) if k % 2 == 0 else (lo, hi)
        conversations.append(panel.messages(hi["scenario"], a["text"], b["text"]))
        # P(the majority prefers the planted-better text), from the generator's rating model in closed form
        implied.append(panel_majority_probability(gold_quality(hi["text"], hi["scenario"]),
                                                  gold_quality(lo["text"], lo["scenario"]), raters, model))
    verdicts = [panel.parse(reply) for _, reply in backend.replies(conversations)]
    agree = np.array([(v == "A") if k % 2 == 0 else (v == "B") for k, v in enumerate(verdicts)], dtype=float)
    implied = np.array(implied)
    expected, sd = implied.sum(), math.sqrt((implied * (1 - implied)).sum())
    assert abs(agree.sum() - expected) < 4 * sd, (agree.mean(), implied.mean())
    assert set(verdicts) <= {"A", "B"}  # an odd panel always has a majority
    # and the panel sees quality: far above chance, more so on clearly separated pairs
    clear = np.array([hi["quality"] - lo["quality"] >= 1.0 for hi, lo in pairs])
    assert agree.mean() > 0.8 and agree[clear].mean() > agree[~clear].mean()


def test_panel_verdicts_repeat_within_a_run_and_differ_across_runs(panel):
    items = _human_items()
    rows = items.sort_values("reappraisal_id").head(400).to_dict("records")
    convs = [panel.messages(a["scenario"], a["text"], b["text"]) for a, b in zip(rows[0::2], rows[1::2])]
    first = [r for _, r in make_backend(panel, run=1).replies(convs)]
    again = [r for _, r in make_backend(panel, run=1).replies(convs)]
    other = [r for _, r in make_backend(panel, run=2).replies(convs)]
    assert first == again
    assert sum(x != y for x, y in zip(first, other)) >= 0.1 * len(convs)
    # the reply says what the panel saw, and the judge's own pattern reads it
    assert all(r.startswith(tuple(f"{k} of 5 raters prefer A" for k in range(6))) for r in first)
    assert {panel.parse(r) for r in first} <= {"A", "B", "tie"} and "error" not in {panel.parse(r) for r in first}


def test_the_panel_reads_no_file_the_pipeline_writes(tmp_path):
    """Judge contests and calibrate in a folder without results/: every file opened lies outside it."""
    script = textwrap.dedent(f"""
        import sys, json
        opened = []
        sys.addaudithook(lambda event, args: opened.append(str(args[0])) if event == "open" and isinstance(args[0], str) else None)
        sys.path.insert(0, {str(REPO / "src")!r})
        from reappraisal.evaluation.judge_spec import load_judge
        from reappraisal.evaluation.backends import make_backend, judge_fingerprint
        spec = load_judge("demo-panel")
        judge_fingerprint(spec)
        scenario = "My neighbour plays loud music every night until two, and ignored the note I left."
        conv = spec.messages(scenario, "Maybe your neighbour did not see the note; you could knock and ask.", "Ugh.")
        reply = dict(make_backend(spec, run=3).replies([conv]))[0]
        print(json.dumps({{"verdict": spec.parse(reply), "opened": opened}}))
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, check=True)
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["verdict"] == "A"
    assert not (tmp_path / "results").exists()
    assert any("demo_texts" in p for p in out["opened"])  # the hook saw the rating model's own files being read
    touched = [p for p in out["opened"] if "results" in Path(p).parts or str(tmp_path) in p]
    assert touched == [], touched


def test_the_paper_preset_refuses_a_panel_judge_in_one_line(panel):
    with pytest.raises(ConfigError) as err:
        check_panel_allowed(panel, preset="paper", data_source="osf")
    message = str(err.value)
    assert "\n" not in message and "demo-panel" in message and "demo preset only" in message
    check_panel_allowed(panel, preset="demo", data_source="bundled")  # allowed there


def test_a_panel_judge_needs_a_pattern_that_reads_its_reply():
    raw = {"backend": "panel", "model": "raters", "template": {"user": "{scenario} {answer_a} {answer_b}"},
           "verdict": {"pattern": r"\[\[([AB])\]\]", "labels": {"A": "A", "B": "B"}}}
    with pytest.raises(ConfigError, match="VERDICT"):
        spec_from_mapping("bad-panel", raw, where="bad-panel.yaml")


def test_gold_quality_follows_the_worlds_reading():
    scenario = pd.read_csv(DEMO / "vignettes.csv").set_index("vignette_id").loc["v01", "text"]
    good = "Maybe Jordan mixed up the date of your birthday dinner. You can ask about it calmly when you are ready."
    plain = "Jordan mixed up the date of the birthday dinner."
    rambling = good + " I keep thinking. Things happen. Whatever. It is late."
    assert gold_quality(good, scenario) > gold_quality(plain, scenario) > gold_quality("", scenario)
    assert gold_quality(rambling, scenario) < gold_quality(good, scenario)
    # an OOD scenario's own words count as its keywords, its capitalized words as its people
    ood = "My roommate Keiko ate the leftovers I had labeled with my name."
    specific, generic = gold_reading("Maybe Keiko thought the leftovers were shared.", ood), gold_reading("Maybe it was shared.", ood)
    assert specific.relevance > generic.relevance == 0.0
    assert world_scenario(ood).people == ("keiko",)
