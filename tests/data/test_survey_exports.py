"""The demo's own ratings re-exported in layouts survey tools produce, ingested through the mapping
alone, give the same tables as the demo's wide-form ingest.

- long form: one row per rater × reappraisal × dimension with the tool's dimension labels,
  semicolon-delimited with a BOM and CRLF line ends; scenarios repeated on every
  reappraisal row (the vignettes table is derived as their distinct values) and reappraisal
  text split over two columns; unfinished responses, attention-check items and
  "-99"-coded skips that the mapping filters out or counts;
- rater × item matrix as Qualtrics exports it: three header rows, ``ResponseId``,
  ``Finished``, ``Status`` (preview responses), an attention check, one column per
  reappraisal × dimension, blank where a rater did not see the item;
- JSON as web survey back ends export it: scenarios as a pretty-printed JSON array, every
  reappraisal and every rating one JSON Lines record with nested fields (``response.text``,
  ``scores.effectiveness``), JSON booleans and numbers, ``null`` study, ids with stray spaces,
  and the rating's own scenario, checked against the reappraisal's.

The mappings are validated by the config schema too, as a user's config would be.
"""

from __future__ import annotations

import copy
import csv
import io
import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from reappraisal.config import REPO_ROOT, load_config, resolve_preset, validate_config
from reappraisal.data.ingest_io import ingest
from reappraisal.settings import DataSettings

from tests.data.ingest_fixtures import run_ingest

DEMO = REPO_ROOT / "data" / "demo"
DIMS = ["effectiveness", "empathy", "novelty", "specificity"]
KEYS = {"vignettes": ["vignette_id"], "reappraisals": ["reappraisal_id"], "ratings": ["study", "rater_id", "reappraisal_id", "dimension"]}


@pytest.fixture(scope="module")
def demo_cfg() -> dict:
    return load_config()["data"]


@pytest.fixture(scope="module")
def demo_tables(demo_cfg) -> dict[str, pd.DataFrame]:
    """The demo's wide-form ingest (the preset's own mapping)."""
    return ingest(DEMO, DataSettings.from_config(demo_cfg))


def demo_ratings_wide(demo_cfg) -> list[tuple[str, pd.DataFrame]]:
    """(study, wide frame with canonical column names) per demo rating file, in file order."""
    out = []
    for source in demo_cfg["ingest"]["ratings"]:
        df = pd.read_csv(DEMO / source["files"], dtype=str, keep_default_na=False)
        rename = {source["columns"]["rater_id"]: "rater_id", source["columns"]["reappraisal_id"]: "reappraisal_id"}
        rename.update({col: dim for dim, col in source["dimensions"].items()})
        out.append((source["study"], df.rename(columns=rename)[["rater_id", "reappraisal_id", *DIMS]]))
    return out


def demo_reappraisals(demo_cfg) -> pd.DataFrame:
    """All demo reappraisal files in source order as one frame (author_type, study, text, ...)."""
    frames = []
    for source in demo_cfg["ingest"]["reappraisals"]:
        df = pd.read_csv(DEMO / source["files"], dtype=str, keep_default_na=False)
        cols = source["columns"]
        part = pd.DataFrame({"reappraisal_id": df[cols["reappraisal_id"]], "vignette_id": df[cols["vignette_id"]], "text": df[cols["text"]]})
        part["author_type"] = df[source["author_type_column"]] if "author_type_column" in source else source["author_type"]
        part["study"] = source.get("study", "")
        frames.append(part)
    return pd.concat(frames, ignore_index=True)


def write_csv(path: Path, rows: list[list[str]], *, delimiter: str = ",", bom: bool = False, crlf: bool = False) -> None:
    buf = io.StringIO()
    csv.writer(buf, delimiter=delimiter, lineterminator="\r\n" if crlf else "\n").writerows(rows)
    path.write_bytes(("\ufeff" if bom else "").encode() + buf.getvalue().encode("utf-8"))


def config_with_mapping(mapping: dict, bundled_dir: str) -> dict:
    """The repository's config with a user's preset whose data.ingest is ``mapping``, resolved and validated."""
    raw = yaml.safe_load((REPO_ROOT / "config.yaml").read_text())
    preset = copy.deepcopy(raw["presets"]["demo"])
    preset["data"] = {"source": "bundled", "bundled_dir": bundled_dir, "ingest": mapping}
    return validate_config(resolve_preset({**raw, "preset": "survey", "presets": {**raw["presets"], "survey": preset}}))


def assert_same_tables(got: dict[str, pd.DataFrame], want: dict[str, pd.DataFrame]) -> None:
    """Same rows, values and dtypes (a file's row order is not part of a survey export: compared by key)."""
    for name, keys in KEYS.items():
        a = got[name].sort_values(keys).reset_index(drop=True)
        b = want[name].sort_values(keys).reset_index(drop=True)
        pd.testing.assert_frame_equal(a, b, check_exact=True, obj=name)


def read_outputs(out: Path) -> dict[str, pd.DataFrame]:
    return {name: pd.read_parquet(out / f"{name}.parquet") for name in KEYS}


# ---------------------------------------------------------------------------------------------
# Long form
# ---------------------------------------------------------------------------------------------

LABELS = {"effectiveness": "Effectiveness (1-7)", "empathy": "Empathy (1-7)", "novelty": "Novelty (1-7)", "specificity": "Specificity (1-7)"}

LONG_MAPPING = {
    "vignettes": [
        {
            "files": "responses.csv",
            "delimiter": ";",
            "distinct": True,
            "columns": {"vignette_id": "scenario_code", "text": "scenario_text", "emotion": "scenario_emotion", "pool": "scenario_pool"},
        }
    ],
    "reappraisals": [
        {
            "files": "responses.csv",
            "delimiter": ";",
            "author_type_column": "author",
            "columns": {"reappraisal_id": "response_code", "vignette_id": "scenario_code", "text": {"join": ["text_a", "text_b"]}, "study": "study"},
        }
    ],
    "ratings": [
        {
            "files": "ratings_long.csv",
            "layout": "long",
            "delimiter": ";",
            "scale": [1, 7],
            "missing_values": ["-99"],
            "filters": [{"column": "finished", "equals": 1}, {"column": "item_type", "not_equals": "attention_check"}],
            "columns": {"study": "study", "rater_id": "participant", "reappraisal_id": "response_code", "dimension": "scale_item", "rating": "answer"},
            "dimension_labels": {label: dim for dim, label in LABELS.items()},
        }
    ],
}


def build_long_export(raw: Path, demo_cfg) -> dict[str, int]:
    """Write the long-form export of the demo's ratings; return what the mapping must filter and count."""
    raw.mkdir(parents=True)
    vignettes = pd.read_csv(DEMO / "vignettes.csv", dtype=str, keep_default_na=False).set_index("vignette_id")
    rows = [["response_code", "scenario_code", "scenario_text", "scenario_emotion", "scenario_pool", "author", "study", "text_a", "text_b"]]
    for r in demo_reappraisals(demo_cfg).itertuples(index=False):
        first, sep, rest = r.text.partition(". ")
        a, b = (first + ".", rest) if sep else (r.text, "")
        assert " ".join(p for p in (a, b) if p) == r.text
        v = vignettes.loc[r.vignette_id]
        rows.append([r.reappraisal_id, r.vignette_id, v["text"], v["emotion"], v["pool"], r.author_type, r.study, a, b])
    write_csv(raw / "responses.csv", rows, delimiter=";", bom=True, crlf=True)

    rows = [["study", "participant", "finished", "response_code", "item_type", "scale_item", "answer"]]
    for study, wide in demo_ratings_wide(demo_cfg):
        for r in wide.itertuples(index=False):
            for dim in DIMS:
                rows.append([study, r.rater_id, "1", r.reappraisal_id, "reappraisal", LABELS[dim], getattr(r, dim)])
            if r.rater_id.endswith("01"):  # one attention-check item per first rater of a study
                rows.append([study, r.rater_id, "1", "ATTN", "attention_check", LABELS["effectiveness"], "7"])
    extra = [
        # an unfinished response (filtered out)
        ["1", "s1_dropout", "0", "s1_r0001", "reappraisal", LABELS["effectiveness"], "6"],
        # skipped items coded -99 for a rater/item pair the demo does not have (counted, not ratings)
        ["3", "s3_p001", "1", "s3_r0001", "reappraisal", LABELS["empathy"], "-99"],
        ["3", "s3_p001", "1", "s3_r0001", "reappraisal", LABELS["novelty"], "-99"],
    ]
    write_csv(raw / "ratings_long.csv", rows + extra, delimiter=";", crlf=True)
    return {"attention_rows": sum(1 for r in rows if r[4] == "attention_check"), "coded": 2}


def test_long_form_export_gives_the_demo_tables(tmp_path, capsys, demo_cfg, demo_tables):
    raw = tmp_path / "raw"
    expected = build_long_export(raw, demo_cfg)
    cfg = config_with_mapping(LONG_MAPPING, str(raw))  # the schema accepts the mapping
    code, err, out = run_ingest(tmp_path, raw, cfg["data"], capsys)
    assert code == 0, err
    got = read_outputs(out)
    assert_same_tables(got, demo_tables)
    # one row per rating in the file's order: identical, order included
    pd.testing.assert_frame_equal(got["ratings"], demo_tables["ratings"], check_exact=True)
    checks = json.loads((tmp_path / "checks" / "ingest.json").read_text())
    (ratings_src,) = [s for s in checks["sources"] if s["key"] == "data.ingest.ratings[0]"]
    assert ratings_src["rows_read"] - ratings_src["rows_kept_by_filters"] == expected["attention_rows"] + 1
    assert ratings_src["missing_code_cells"] == expected["coded"] == ratings_src["blank_rating_cells"]
    assert ratings_src["ratings"] == len(demo_tables["ratings"])


# ---------------------------------------------------------------------------------------------
# Rater × item matrix (Qualtrics-like)
# ---------------------------------------------------------------------------------------------

QUESTIONS = {"effectiveness": "Q1", "empathy": "Q2", "novelty": "Q3", "specificity": "Q4"}


def matrix_mapping(studies: list[str]) -> dict:
    base = load_config()["data"]["ingest"]
    return {
        "vignettes": base["vignettes"],
        "reappraisals": base["reappraisals"],
        "ratings": [
            {
                "files": f"qualtrics_study{study}.csv",
                "layout": "matrix",
                "study": study,
                "scale": [1, 7],
                "skip_rows_after_header": 2,
                "missing_values": [-99],
                "filters": [
                    {"column": "Status", "equals": 0},  # 1 = survey preview
                    {"column": "Finished", "equals": 1},
                    {"column": "attn_check", "equals": 3},
                ],
                "columns": {"rater_id": "PROLIFIC_PID"},
                "items": {"pattern": r"(?P<reappraisal_id>.+)_(?P<dimension>Q[1-4])"},
                "dimension_labels": {q: dim for dim, q in QUESTIONS.items()},
            }
            for study in studies
        ],
    }


def build_qualtrics_exports(raw: Path, demo_cfg) -> tuple[list[str], dict[str, int]]:
    """Write one Qualtrics-like matrix per study; return the studies and the expected counts."""
    raw.mkdir(parents=True)
    meta = ["StartDate", "EndDate", "Status", "IPAddress", "Progress", "Duration (in seconds)", "Finished", "RecordedDate", "ResponseId", "PROLIFIC_PID", "attn_check"]
    studies, counts = [], {"blank": 0, "coded": 0, "dropped": 0}
    for study, wide in demo_ratings_wide(demo_cfg):
        items = list(dict.fromkeys(wide["reappraisal_id"]))
        item_cols = [f"{rid}_{QUESTIONS[dim]}" for rid in items for dim in DIMS]
        header = meta + item_cols
        question_row = meta[:] + [f"{c.split('_Q')[0]} - How would you rate it? ({c[-2:]})" for c in item_cols]
        import_row = [json.dumps({"ImportId": f"QID{i}"}) for i in range(len(header))]
        rows = [header, question_row, import_row]
        by_rater = {r: g for r, g in wide.groupby("rater_id", sort=False)}
        for n, (rater, g) in enumerate(by_rater.items()):
            cells = {f"{rid}_{QUESTIONS[d]}": v for rid, vals in zip(g["reappraisal_id"], g[DIMS].to_numpy()) for d, v in zip(DIMS, vals)}
            answers = [cells.get(c, "") for c in item_cols]
            if n == 0:  # Qualtrics codes a seen-but-skipped item -99: two of them on an item this rater did not rate
                free = [i for i, c in enumerate(item_cols) if c not in cells][:2]
                for i in free:
                    answers[i] = "-99"
                counts["coded"] += len(free)
            counts["blank"] += sum(1 for a in answers if a in ("", "-99"))
            rows.append(["2025-03-01 10:00:00", "2025-03-01 10:20:00", "0", "", "100", "1200", "1", "2025-03-01 10:20:01", f"R_{study}{n:05d}", rater, "3", *answers])
        junk = ["7"] * len(item_cols)
        rows.append(["2025-03-01", "2025-03-01", "1", "", "100", "60", "1", "2025-03-01", f"R_{study}prev", "preview", "3", *junk])
        rows.append(["2025-03-01", "2025-03-01", "0", "", "40", "300", "0", "2025-03-01", f"R_{study}part", "dropout", "", *junk])
        rows.append(["2025-03-01", "2025-03-01", "0", "", "100", "900", "1", "2025-03-01", f"R_{study}attn", "careless", "5", *junk])
        counts["dropped"] += 3
        write_csv(raw / f"qualtrics_study{study}.csv", rows)
        studies.append(study)
    for name in ("vignettes.csv", "study1_reappraisals.csv", "study3_reappraisals.csv", "study4_reappraisals.csv", "gpt4_reappraisals.csv", "opponents.csv"):
        (raw / name).write_bytes((DEMO / name).read_bytes())
    return studies, counts


def test_qualtrics_matrix_export_gives_the_demo_tables(tmp_path, capsys, demo_cfg, demo_tables):
    raw = tmp_path / "raw"
    studies, expected = build_qualtrics_exports(raw, demo_cfg)
    cfg = config_with_mapping(matrix_mapping(studies), str(raw))
    code, err, out = run_ingest(tmp_path, raw, cfg["data"], capsys)
    assert code == 0, err
    assert_same_tables(read_outputs(out), demo_tables)
    checks = json.loads((tmp_path / "checks" / "ingest.json").read_text())
    assert checks["rows_dropped_by_filters"] == expected["dropped"] == 3 * len(studies)
    assert checks["missing_code_cells"] == expected["coded"] > 0
    assert checks["blank_rating_cells"] == expected["blank"]
    assert checks["rows"]["ratings"] == len(demo_tables["ratings"])


# ---------------------------------------------------------------------------------------------
# The worked mapping of docs/paper.md runs as written
# ---------------------------------------------------------------------------------------------


def readme_mapping() -> dict:
    text = (REPO_ROOT / "docs" / "paper.md").read_text(encoding="utf-8")
    start = text.index("A worked mapping for a long-form export")
    block = text[text.index("```yaml", start) + len("```yaml") : text.index("```", text.index("```yaml", start) + 7)]
    return yaml.safe_load(block)["presets"]["paper"]["data"]["ingest"]


def test_readme_long_form_mapping_runs_as_written(tmp_path, capsys):
    mapping = readme_mapping()
    raw = tmp_path / "raw"
    (raw / "study1").mkdir(parents=True)
    scenarios = {"S1": ("Your friend missed your birthday dinner.", "sadness"), "S2": ("Your coworker presented your plan as hers.", "anger")}
    answers = {"S1": ["Maybe Jordan got held up.", "You still had friends there."], "S2": ["Maybe she froze when praised.", "Your work speaks for itself."]}
    rows = [["ScenarioID", "ScenarioText", "Emotion", "Response"]]
    rows += [[s, scenarios[s][0], scenarios[s][1], a] for s in answers for a in answers[s]]
    write_csv(raw / "study1" / "responses.csv", rows)
    questions = list(mapping["ratings"][0]["dimension_labels"])
    rows = [["ResponseId", "Finished", "ItemType", "ScenarioID", "Response", "Question", "Value"]]
    for k, rater in enumerate(["R_1dA9x", "R_7pQ2z"]):
        for s in answers:
            for a in answers[s]:
                rows += [[rater, "1", "reappraisal", s, a, q, str(1 + (k + i + len(a)) % 7)] for i, q in enumerate(questions)]
        rows.append([rater, "1", "attention", "S0", "Select 7", questions[0], "7"])
    rows.append(["R_quit", "0", "reappraisal", "S1", answers["S1"][0], questions[0], "4"])
    rows[1][-1] = "NA"  # a skipped item
    buf = io.StringIO()
    csv.writer(buf, delimiter=";", lineterminator="\r\n").writerows(rows)
    (raw / "study1" / "ratings_long.csv").write_bytes(buf.getvalue().encode("cp1252"))

    cfg = config_with_mapping(mapping, str(raw))
    code, err, out = run_ingest(tmp_path, raw, cfg["data"], capsys)
    assert code == 0, err
    tables = read_outputs(out)
    assert sorted(tables["vignettes"]["vignette_id"]) == ["S1", "S2"]
    assert tables["reappraisals"]["reappraisal_id"].str.startswith("s1_").all()
    assert len(tables["ratings"]) == 2 * 4 * 4 - 1  # 2 raters x 4 reappraisals x 4 dimensions, one NA
    assert set(tables["ratings"]["reappraisal_id"]) == set(tables["reappraisals"]["reappraisal_id"])
    checks = json.loads((tmp_path / "checks" / "ingest.json").read_text())
    assert checks["blank_rating_cells"] == checks["missing_code_cells"] == 1
    assert checks["rows_dropped_by_filters"] == 3  # two attention items, one unfinished response


# ---------------------------------------------------------------------------------------------
# JSON array + JSON Lines with nested fields
# ---------------------------------------------------------------------------------------------

JSON_MAPPING = {
    "vignettes": [
        {
            "files": "scenarios.json",
            "format": "json",
            "columns": {"vignette_id": "scenario.id", "text": "scenario.text", "emotion": "scenario.emotion", "pool": "scenario.pool"},
        }
    ],
    "reappraisals": [
        {
            "files": "responses.jsonl",
            "format": "jsonl",
            "author_type_column": "author.type",
            "columns": {"reappraisal_id": "response.id", "vignette_id": "response.scenario", "text": "response.text", "study": "meta.study"},
        }
    ],
    "ratings": [
        {
            "files": "ratings.jsonl",
            "format": "jsonl",
            "scale": [1, 7],
            "filters": [{"column": "meta.finished", "equals": True}],
            "columns": {"study": "meta.study", "rater_id": "rater.id", "reappraisal_id": "item.response", "vignette_id": "item.scenario"},
            "dimensions": {dim: f"scores.{dim}" for dim in DIMS},
        }
    ],
}


def _number(cell: str) -> int | float:
    return int(cell) if cell.isdigit() else float(cell)


def build_json_export(raw: Path, demo_cfg) -> int:
    """Write the demo as JSON / JSON Lines with nested fields; return the number of records the filter must drop."""
    raw.mkdir(parents=True)
    vignettes = pd.read_csv(DEMO / "vignettes.csv", dtype=str, keep_default_na=False)
    records = [{"scenario": {"id": v.vignette_id, "text": v.text, "emotion": v.emotion, "pool": v.pool}} for v in vignettes.itertuples()]
    (raw / "scenarios.json").write_text(json.dumps(records, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")

    reapp = demo_reappraisals(demo_cfg)
    scenario_of = dict(zip(reapp["reappraisal_id"], reapp["vignette_id"]))
    lines = []
    for k, r in enumerate(reapp.itertuples(index=False)):
        rid = f"{r.reappraisal_id} " if k % 2 else r.reappraisal_id  # a stray space on every other id
        study = int(r.study) if r.study else None  # a number, or null for the opponents' answers
        lines.append({"response": {"id": rid, "scenario": r.vignette_id, "text": r.text}, "author": {"type": r.author_type}, "meta": {"study": study}})
    (raw / "responses.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")

    lines = []
    for study, wide in demo_ratings_wide(demo_cfg):
        for r in wide.itertuples(index=False):
            scores = {dim: _number(getattr(r, dim)) for dim in DIMS}
            item = {"response": r.reappraisal_id, "scenario": scenario_of[r.reappraisal_id]}
            lines.append({"meta": {"study": int(study), "finished": True}, "rater": {"id": r.rater_id}, "item": item, "scores": scores})
        # an unfinished response, filtered out by `equals: true`
        lines.append({"meta": {"study": int(study), "finished": False}, "rater": {"id": "dropout"}, "item": item, "scores": {d: 7 for d in DIMS}})
    (raw / "ratings.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n\n", encoding="utf-8")
    return len(demo_ratings_wide(demo_cfg))


def test_json_lines_export_with_nested_fields_gives_the_demo_tables(tmp_path, capsys, demo_cfg, demo_tables):
    raw = tmp_path / "raw"
    unfinished = build_json_export(raw, demo_cfg)
    cfg = config_with_mapping(JSON_MAPPING, str(raw))  # the schema accepts format json / jsonl and dotted paths
    code, err, out = run_ingest(tmp_path, raw, cfg["data"], capsys)
    assert code == 0, err
    assert_same_tables(read_outputs(out), demo_tables)
    checks = json.loads((tmp_path / "checks" / "ingest.json").read_text())
    assert checks["rows_dropped_by_filters"] == unfinished == 3

    # the rating's own scenario is checked: one record naming another scenario stops the run on its line
    path = raw / "ratings.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[4])
    wrong = next(v for v in sorted(demo_tables["vignettes"]["vignette_id"]) if v != record["item"]["scenario"])
    record["item"]["scenario"] = wrong
    lines[4] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, err, _ = run_ingest(tmp_path, raw, cfg["data"], capsys)
    assert code == 2
    assert err.startswith(f"error: ratings.jsonl, line 5: rating of reappraisal {record['item']['response']!r} names scenario {wrong!r}"), err


# ---------------------------------------------------------------------------------------------
# The --configfile command of docs/paper.md runs as written (the option takes every word after it)
# ---------------------------------------------------------------------------------------------


def test_readme_configfile_command_keeps_its_target():
    from snakemake.cli import get_argument_parser

    text = (REPO_ROOT / "docs" / "paper.md").read_text(encoding="utf-8")
    commands = [line.strip() for line in text.splitlines() if line.strip().startswith("snakemake") and "--configfile" in line]
    assert commands, "docs/paper.md shows no snakemake command with --configfile"
    parser = get_argument_parser()
    for command in commands:
        args = parser.parse_args(command.split()[1:])
        assert [str(p) for p in args.configfile] == ["our_lab.yaml"], command
        assert list(args.targets) == ["results/data/leakage.json"], command
    inline = text[text.index("passed after the target") :]
    assert "`--configfile=our_lab.yaml`" in inline[:600]
    args = parser.parse_args(["--configfile=our_lab.yaml", "results/data/leakage.json"])
    assert list(args.targets) == ["results/data/leakage.json"]
