"""fetch_data for both sources, through the stage's command line: the bundled copy and
the OSF API (a local server imitating it, serving the demo export), then ingest."""

from __future__ import annotations

import hashlib
import json

from tests.data.osf_fake import FakeOsf

from reappraisal.cli import main
from reappraisal.config import load_config
from reappraisal.data.fetch_io import bundled_files

from tests.workflow_utils import REPO


def _run_fetch(tmp_path, data_cfg):
    out, manifest = tmp_path / "raw" / "files", tmp_path / "raw" / "MANIFEST.json"
    code = main(["fetch-data", "--out-dir", str(out), "--manifest", str(manifest), "--params", json.dumps({"data": data_cfg})])
    return code, out, manifest


def test_bundled_source_copies_the_export_without_truth(tmp_path):
    cfg = load_config()["data"]
    cfg["bundled_dir"] = str(REPO / "data/demo")
    code, out, manifest_path = _run_fetch(tmp_path, cfg)
    assert code == 0
    manifest = json.loads(manifest_path.read_text())
    copied = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert copied == sorted(e["path"] for e in manifest["files"])
    assert not any(p.startswith("truth/") for p in copied)
    for entry in manifest["files"]:
        assert hashlib.sha256((out / entry["path"]).read_bytes()).hexdigest() == entry["sha256"]


def test_osf_source_downloads_then_ingest_reads_it(httpserver, tmp_path, monkeypatch):
    monkeypatch.delenv("OSF_TOKEN", raising=False)
    fake = FakeOsf(httpserver, "z9e48", max_page_size=4)
    demo = REPO / "data/demo"
    for path in bundled_files(demo):
        fake.add_file(f"export/{path.relative_to(demo).as_posix()}", path.read_bytes())
    fake.add_file("export/notes.txt", b"not selected")
    fake.install()

    cfg = load_config(overrides={"preset": "paper"})["data"]
    cfg["osf"] = {**cfg["osf"], "api_url": fake.api_url, "include": ["export/*.csv"]}
    demo_mapping = load_config()["data"]["ingest"]
    for table in (demo_mapping[name] for name in ("vignettes", "reappraisals", "ratings")):
        for source in table:
            source["files"] = "export/" + source["files"]
    cfg["ingest"] = demo_mapping

    code, out, manifest_path = _run_fetch(tmp_path, cfg)
    assert code == 0
    manifest = json.loads(manifest_path.read_text())
    assert manifest["source"] == "osf" and manifest["node"] == "z9e48"
    assert {e["path"] for e in manifest["files"]} == {f"export/{p.name}" for p in bundled_files(demo)}
    assert not (out / "export/notes.txt").exists()
    assert not (tmp_path / "raw" / "files" / "osf_manifest.json").exists()

    interim = tmp_path / "interim"
    code = main(["ingest", "--raw-dir", str(out), "--out-dir", str(interim), "--params", json.dumps({"data": cfg})])
    assert code == 0
    assert (interim / "ratings.parquet").exists()
