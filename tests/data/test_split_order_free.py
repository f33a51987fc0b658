"""The split is a function of the data, not of the order its rows or files come in.

A survey tool re-exporting the same data in another order (rows sorted by
text, by rater, or shuffled; files listed differently) must give the same
split, the same targets and the same preference pairs, so the reward models
a paper reports do not depend on how the export was sorted.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from reappraisal.cli import main as cli
from reappraisal.config import load_config
from reappraisal.data.split import assign_splits
from tests.workflow_utils import REPO

DEMO = REPO / "data" / "demo"
FILES = sorted(p.name for p in DEMO.glob("*.csv"))


def data_half(raw: Path, out: Path) -> dict[str, bytes]:
    """ingest, normalize-ratings and split-reappraisals as their rules run them; the bytes of what they write."""
    cfg = load_config()
    params = {k: cfg[k] for k in ("data", "normalize", "split")} | {"seed": cfg["seed"], "preset": cfg["preset"]}
    p = json.dumps(params)
    interim, processed = out / "interim", out / "processed"
    assert cli(["ingest", "--raw-dir", str(raw), "--out-dir", str(interim), "--checks", str(out / "ingest.json"),
                "--params", p]) == 0
    assert cli(["normalize-ratings", "--ratings", str(interim / "ratings.parquet"), "--out", str(processed / "ratings_z.parquet"),
                "--summary", str(out / "normalize.json"), "--params", p]) == 0
    assert cli(["split-reappraisals", "--ratings-z", str(processed / "ratings_z.parquet"),
                "--reappraisals", str(interim / "reappraisals.parquet"), "--vignettes", str(interim / "vignettes.parquet"),
                "--targets", str(processed / "targets.parquet"), "--pairs", str(processed / "pairs.parquet"),
                "--summary", str(out / "split.json"), "--params", p]) == 0
    return {name: (processed / name).read_bytes() for name in ("ratings_z.parquet", "targets.parquet", "pairs.parquet")}


def reordered(src: Path, dst: Path, order: str, seed: int = 0) -> None:
    """``src`` with its data rows in another order (header first, as an export writes it)."""
    with open(src, newline="", encoding="utf-8") as f:
        header, *rows = list(csv.reader(f))
    if order == "shuffled":
        rows = [rows[i] for i in np.random.default_rng(seed).permutation(len(rows))]
    elif order == "reversed":
        rows = rows[::-1]
    else:  # sorted by the given column, as a spreadsheet's sort would
        rows = sorted(rows, key=lambda r: r[header.index(order)] if order in header else "\t".join(r))
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([header, *rows])
    dst.write_text(buf.getvalue(), encoding="utf-8")


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict[str, bytes]:
    root = tmp_path_factory.mktemp("order_reference")
    raw = root / "raw"
    shutil.copytree(DEMO, raw, ignore=shutil.ignore_patterns("truth", "README.md"))
    return data_half(raw, root / "out")


def splits(targets: bytes) -> pd.Series:
    frame = pd.read_parquet(io.BytesIO(targets))
    return frame.set_index("reappraisal_id")["split"].sort_index()


@pytest.mark.parametrize("name", FILES)
def test_shuffling_one_files_rows_changes_nothing(name, reference, tmp_path):
    raw = tmp_path / "raw"
    shutil.copytree(DEMO, raw, ignore=shutil.ignore_patterns("truth", "README.md"))
    reordered(DEMO / name, raw / name, "shuffled", seed=len(name))
    got = data_half(raw, tmp_path / "out")
    pd.testing.assert_series_equal(splits(got["targets.parquet"]), splits(reference["targets.parquet"]))
    assert got == reference  # ratings_z, targets and pairs byte for byte


def test_every_file_sorted_by_text_or_rater_and_reversed_changes_nothing(reference, tmp_path):
    raw = tmp_path / "raw"
    shutil.copytree(DEMO, raw, ignore=shutil.ignore_patterns("truth", "README.md"))
    for name in FILES:
        header = (DEMO / name).read_text(encoding="utf-8").split("\n", 1)[0].split(",")
        column = next((c for c in ("text", "response", "reappraisal_text", "rater", "participant") if c in header), None)
        reordered(DEMO / name, raw / name, column or "reversed")
    got = data_half(raw, tmp_path / "out")
    pd.testing.assert_series_equal(splits(got["targets.parquet"]), splits(reference["targets.parquet"]))
    assert got == reference


def test_the_split_of_identical_texts_does_not_depend_on_row_order():
    """The pure function: the same targets in any row order give each reappraisal the same side."""
    rng = np.random.default_rng(0)
    rows = [(f"{v}_{k:02d}", v, f"Answer {k % 9} for {v}." if k % 4 else f"Shared answer {k % 3}.")
            for v in ("v1", "v2", "v3") for k in range(14)]
    targets = pd.DataFrame(rows, columns=["reappraisal_id", "vignette_id", "text"]).assign(
        author_type="human", study="1", z_effectiveness=rng.normal(size=len(rows)), n_effectiveness=3)
    args = dict(primary_dimension="effectiveness", val_fraction=0.2, heldout_author_types=["gpt4"], min_ratings=3)
    for seed in range(4):
        want = assign_splits(targets, ["v1", "v2", "v3"], seed=seed, **args).set_index("reappraisal_id")["split"]
        for _ in range(5):
            shuffled = targets.iloc[rng.permutation(len(targets))].reset_index(drop=True)
            got = assign_splits(shuffled, ["v1", "v2", "v3"], seed=seed, **args).set_index("reappraisal_id")["split"]
            pd.testing.assert_series_equal(got.sort_index(), want.sort_index())
