"""A claim's trace walks the stage graph to its roots and reports exactly what changed under it."""

from __future__ import annotations

import copy

import pytest

from reappraisal.provenance.claim_trace import changes, claim_trace, flatten, provenance_document, recorded_hash
from reappraisal.provenance.stage_graph import StageGraph

# fetch -> ingest -> train_a -> summarize ; fetch -> ingest -> train_b -> summarize
RECORDS = {
    "summarize": {"deps": {"src/pkg/summary.py": "s1", "claims.yaml": "c1", "results/a/metrics.json": "am",
                           "results/b/model": "bm.dir"},
                  "params": {"summary": {"bar": 0.5}}, "outs": {}},
    "train_b": {"deps": {"src/pkg/train.py": "t1", "data/interim/table.parquet": "tab"},
                "params": {"b": {"lr": 0.1, "layers": [4, 8]}}, "outs": {"results/b/model": "bm.dir"}},
    "train_a": {"deps": {"src/pkg/train.py": "t1", "data/interim/table.parquet": "tab"},
                "params": {"a": {"lr": 0.2}}, "outs": {"results/a/metrics.json": "am"}},
    "ingest": {"deps": {"src/pkg/ingest.py": "i1", "data/raw/files": "raw.dir", "workflow/rules/data.smk": "w1"},
               "params": {"data": {"source": "bundled"}}, "outs": {"data/interim/table.parquet": "tab"}},
    "fetch_data": {"deps": {"src/pkg/fetch.py": "f1", "data/demo": "demo.dir"}, "params": {"data": {"source": "bundled"}},
                   "outs": {"data/raw/files": "raw.dir", "data/raw/MANIFEST.json": "man"}},
    "report": {"deps": {"results/summary/claims.json": "cl"}, "params": {}, "outs": {"results/report.html": "r"}},
}
FETCHED = [{"path": "ratings.csv", "sha256": "ab" * 32, "source": "data/demo/ratings.csv"}]


@pytest.fixture
def doc():
    return provenance_document(RECORDS, {"only_a": ["results/a/metrics.json", "claims.yaml"],
                                         "only_b": ["results/b/model/config.json"]},
                               computing_stage="summarize", fetched_files=FETCHED)


def test_upstream_is_in_run_order_and_stops_at_the_roots():
    graph = StageGraph(RECORDS)
    order = graph.upstream(["train_a"])
    assert order == ["fetch_data", "ingest", "train_a"]
    assert graph.writer("results/b/model/config.json") == ("train_b", "results/b/model")
    assert graph.writer("claims.yaml") == (None, None)


def test_a_claim_runs_through_the_stages_of_the_files_it_read_only(doc):
    assert doc["claims"]["only_a"] == ["fetch_data", "ingest", "train_a", "summarize"]
    assert doc["claims"]["only_b"] == ["fetch_data", "ingest", "train_b", "summarize"]
    assert "report" not in doc["stages"]  # downstream of the summary: not what a claim was computed from


def test_trace_lists_raw_inputs_config_leaves_and_code_with_hashes(doc):
    t = claim_trace(doc, "only_b")
    assert [r["path"] for r in t["raw"]] == ["claims.yaml", "data/demo"]
    assert t["fetched_files"] == FETCHED
    config = {c["key"]: c for c in t["config"]}
    assert config["b.layers[1]"]["value"] == 8 and config["b.layers[1]"]["stages"] == ["train_b"]
    assert config["data.source"]["stages"] == ["fetch_data", "ingest"]
    assert "a.lr" not in config
    code = {c["path"]: c["hash"] for c in t["code"]}
    assert code == {"src/pkg/fetch.py": "f1", "src/pkg/ingest.py": "i1", "workflow/rules/data.smk": "w1",
                    "src/pkg/train.py": "t1", "src/pkg/summary.py": "s1"}
    assert {a["path"] for a in t["artifact"]} == {"data/raw/files", "data/raw/MANIFEST.json",
                                                  "data/interim/table.parquet", "results/b/model"}


def test_editing_one_config_value_changes_exactly_the_claims_downstream_of_its_stage(doc):
    now = copy.deepcopy(RECORDS)
    assert not changes(doc, now, "only_a") and not changes(doc, now, "only_b")
    now["train_b"]["params"]["b"]["lr"] = 0.3
    found = changes(doc, now, "only_b")
    assert [(c["kind"], c["name"], c["was"], c["now"]) for c in found] == [("config", "b.lr", 0.1, 0.3)]
    assert not changes(doc, now, "only_a")


def test_a_changed_raw_file_code_file_or_artifact_is_reported_for_every_claim_above_it(doc):
    now = copy.deepcopy(RECORDS)
    now["fetch_data"]["deps"]["data/demo"] = "other.dir"
    now["train_a"]["deps"]["src/pkg/train.py"] = "t2"
    now["train_b"]["deps"]["src/pkg/train.py"] = "t2"
    now["train_a"]["outs"]["results/a/metrics.json"] = "am2"
    a = {(c["kind"], c["name"]) for c in changes(doc, now, "only_a")}
    b = {(c["kind"], c["name"]) for c in changes(doc, now, "only_b")}
    assert a == {("raw", "data/demo"), ("code", "src/pkg/train.py"), ("artifact", "results/a/metrics.json")}
    assert b == {("raw", "data/demo"), ("code", "src/pkg/train.py")}


def test_a_removed_stage_or_an_added_config_key_counts_as_a_change(doc):
    now = copy.deepcopy(RECORDS)
    del now["train_b"]
    assert {c["now"] for c in changes(doc, now, "only_b") if c["name"] == "b.lr"} == {None}
    now = copy.deepcopy(RECORDS)
    now["train_a"]["params"]["a"]["warmup"] = 3
    assert [(c["name"], c["was"], c["now"]) for c in changes(doc, now, "only_a")] == [("a.warmup", None, 3)]


def test_recorded_hash_of_a_file_inside_an_output_folder_and_of_a_plain_dependency():
    graph = StageGraph(RECORDS)
    assert recorded_hash(graph, "results/b/model/config.json") == ("train_b", "bm.dir", False)
    assert recorded_hash(graph, "results/a/metrics.json") == ("train_a", "am", True)
    assert recorded_hash(graph, "claims.yaml") == ("summarize", "c1", True)
    assert recorded_hash(graph, "nowhere.txt") == (None, None, False)


def test_flatten_and_unknown_claims():
    assert flatten({"a": {"b": [1, {"c": 2}], "d": {}}}, "") == {"a.b[0]": 1, "a.b[1].c": 2, "a.d": {}}
    with pytest.raises(KeyError, match="no claim 'nope'"):
        claim_trace({"claims": {}, "stages": {}}, "nope")


def test_a_cycle_is_refused():
    records = {"x": {"deps": {"b": "1"}, "outs": {"a": "2"}}, "y": {"deps": {"a": "2"}, "outs": {"b": "1"}}}
    with pytest.raises(ValueError, match="cycle"):
        StageGraph(records).run_order()


def test_values_of_a_preset_the_run_did_not_use_are_neither_traced_nor_a_change():
    records = {"train": {"deps": {"src/t.py": "t"}, "outs": {"m": "m1"},
                         "params": {"preset": "demo", "presets.demo.lr": {"x": 1}, "presets.paper.lr": {"x": 2}}},
               "summarize": {"deps": {"m": "m1"}, "params": {}, "outs": {}}}
    doc = provenance_document(records, {"c": ["m"]}, computing_stage="summarize", fetched_files=[])
    assert {c["key"] for c in claim_trace(doc, "c")["config"]} == {"preset", "presets.demo.lr.x"}
    now = copy.deepcopy(records)
    now["train"]["params"]["presets.paper.lr"]["x"] = 3
    assert changes(doc, now, "c") == []
    now["train"]["params"]["presets.demo.lr"]["x"] = 3
    assert [c["name"] for c in changes(doc, now, "c")] == ["presets.demo.lr.x"]
