"""The pre-registration: what it fixes, and the confirmation refused when it or the checkpoint changed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from reappraisal.confirm import confirmation_io, generation_io
from reappraisal.confirm.preregistration import build_preregistration, check_unchanged, select
from reappraisal.confirm.registered_files import checkpoint_hashes
from reappraisal.errors import PipelineInputError
from reappraisal.file_hashes import file_digests


def _contests(rates: dict[str, list[float]], *, n=10, seed=0) -> pd.DataFrame:
    """Contests on the selection pool with per-scenario win rates ``rates[system][g]`` (n contests each)."""
    rng = np.random.default_rng(seed)
    rows = []
    for system, per_scenario in rates.items():
        for g, p in enumerate(per_scenario):
            for k in range(n):
                rows.append({"run": 1 + k % 3, "judge": "panel", "contest_id": f"{system}|{g}|{k}",
                             "vignette_id": f"ood{g:02d}", "pool": "ood", "model": system, "opponent": "qwen",
                             "score": float(rng.random() < p), "error": False})
    return pd.DataFrame(rows)


def test_selection_picks_the_best_on_the_selection_pool_and_states_the_inflation():
    contests = _contests({"a": [0.3, 0.4, 0.5, 0.4], "b": [0.8, 0.9, 0.7, 0.8], "c": [0.5, 0.5, 0.6, 0.5]})
    other = contests.assign(opponent="gpt4")  # contests against another opponent are not the selection's
    other["score"] = 1.0 - other["score"]
    selection = select(pd.concat([contests, other]), ["a", "b", "c", "d"], opponent="qwen", judge="panel")
    assert selection["selected"] == "b" and selection["candidates"] == ["a", "b", "c"]  # d never played
    by_hand = contests[contests["model"] == "b"].groupby("vignette_id")["score"].mean().mean()
    assert selection["estimate"] == pytest.approx(by_hand)
    assert 0 < selection["expected_inflation"] < selection["estimate"]
    with pytest.raises(PipelineInputError, match="no candidate has a scored contest"):
        select(contests, ["a"], opponent="nobody", judge="panel")


@pytest.fixture
def registered(tmp_path):
    """A checkpoint folder, its pre-registration on disk and confirmation answers made under it."""
    ckpt = tmp_path / "results/policy/a/model"
    ckpt.mkdir(parents=True)
    (ckpt / "model.safetensors").write_bytes(b"weights")
    (ckpt / "config.json").write_text("{}")
    selection = select(_contests({"a": [0.7, 0.8, 0.6], "b": [0.4, 0.5, 0.5]}), ["a", "b"], opponent="qwen",
                       judge="panel")
    document = build_preregistration(
        selection=selection, system={"kind": "arm", "arm": "a"}, checkpoint_sha256=checkpoint_hashes([ckpt]),
        opponent="qwen", judge="panel", bar=0.5, confidence=0.95, confirmation_scenarios=["ood07", "ood08"],
        runs=[1, 2, 3], answers_per_scenario=2, date="2026-12-02")
    prereg = tmp_path / "preregistration.yaml"
    prereg.write_text(yaml.safe_dump(json.loads(json.dumps(document, default=float)), sort_keys=False))
    generations = tmp_path / "generations.parquet"
    pd.DataFrame({"run": [1], "arm": ["a"], "vignette_id": ["ood07"], "answer": ["x"],
                  "preregistration_sha256": [file_digests(prereg)[0]]}).to_parquet(generations)
    checkpoints = json.dumps({"a": {"policy": str(ckpt)}})
    return {"dir": tmp_path, "ckpt": ckpt, "prereg": prereg, "generations": generations, "checkpoints": checkpoints}


def _confirm(r) -> None:
    d = r["dir"]
    confirmation_io.cli_main([
        "--preregistration", str(r["prereg"]), "--generations", str(r["generations"]), "--checkpoints",
        r["checkpoints"], "--targets", str(d / "none"), "--vignettes", str(d / "none"), "--calibration",
        str(d / "none.json"), "--cache-dir", str(d / "cache"), "--out", str(d / "out.json"), "--judgments",
        str(d / "j.parquet"), "--contests", str(d / "c.parquet"), "--params", "{\"seed\": 1, \"preset\": \"demo\"}"])


def test_the_registered_checkpoint_and_document_pass_the_checks(registered):
    document = yaml.safe_load(registered["prereg"].read_text())
    check_unchanged(document, checkpoint_hashes([registered["ckpt"]]), where="x",
                    recorded_document_sha256=file_digests(registered["prereg"])[0],
                    document_sha256=file_digests(registered["prereg"])[0])
    # past the checks, confirm goes on to read the judge calibration (absent here): nothing was refused
    with pytest.raises(FileNotFoundError, match=r"none\.json"):
        _confirm(registered)
    assert not (registered["dir"] / "out.json").exists()


def test_confirmation_refused_when_the_preregistration_was_edited_after_the_answers(registered):
    text = registered["prereg"].read_text().replace("bar: 0.5", "bar: 0.4")
    registered["prereg"].write_text(text)
    with pytest.raises(PipelineInputError, match="changed after the confirmation answers were generated"):
        _confirm(registered)
    assert not (registered["dir"] / "out.json").exists()


def test_confirmation_refused_when_the_checkpoint_changed(registered):
    (registered["ckpt"] / "model.safetensors").write_bytes(b"other weights")
    with pytest.raises(PipelineInputError, match="no longer matches its pre-registration"):
        _confirm(registered)
    (registered["ckpt"] / "model.safetensors").write_bytes(b"weights")
    (registered["ckpt"] / "extra.bin").write_bytes(b"new file")
    with pytest.raises(PipelineInputError, match="1 are new"):
        _confirm(registered)


def test_confirmation_generation_refused_without_a_preregistration(registered, tmp_path):
    with pytest.raises(PipelineInputError, match="pre-registration is missing"):
        generation_io.cli_main(["--preregistration", str(tmp_path / "absent.yaml"), "--checkpoints",
                                registered["checkpoints"], "--vignettes", "v.parquet", "--out", "o.parquet",
                                "--params", "{\"seed\": 1, \"preset\": \"demo\"}"])
    (registered["ckpt"] / "config.json").write_text('{"changed": true}')
    with pytest.raises(PipelineInputError, match="no longer matches"):
        generation_io.cli_main(["--preregistration", str(registered["prereg"]), "--checkpoints",
                                registered["checkpoints"], "--vignettes", "v.parquet", "--out", "o.parquet",
                                "--params", "{\"seed\": 1, \"preset\": \"demo\"}"])
    assert not Path("o.parquet").exists()


def test_a_registration_under_the_replaced_interval_is_refused_in_one_line():
    import pandas as pd

    from reappraisal.confirm.confirmation import confirmation_result

    document = {"interval": {"method": "ci_stretched_logit_jackknife", "confidence": 0.95, "clusters": "scenarios"}}
    with pytest.raises(ValueError) as raised:
        confirmation_result(pd.DataFrame(), document, n_boot=10, seed=0)
    message = str(raised.value)
    assert "\n" not in message and "ci_stretched_logit_jackknife" in message and "ci_korn_graubard" in message
