"""End to end on synthetic tables: two-stage training, evaluation, CLI errors.

The tiny run trains for seconds: it must produce parseable verdicts after
stage 1 and an honest report; it is not expected to learn the preference.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from reappraisal.cli import main as cli
from reappraisal.grm.scorer import GRMScorer, median_references
from reappraisal.grm.training_summary import SUMMARY_FILE

from .conftest import BAD, DATA, DATA_CFG, GOOD, SCENARIOS, grm_settings, tiny_cfg


def _write_inputs(tmp_path, tables):
    paths = {}
    for name in ("pairs", "targets", "vignettes"):
        paths[name] = tmp_path / f"{name}.parquet"
        tables[name].to_parquet(paths[name], index=False)
    return paths


@pytest.mark.slow
def test_two_stages_write_both_models_atomically(trained_grm):
    final, sft, root = trained_grm["final"], trained_grm["sft"], trained_grm["root"]
    for d in (final, sft):
        assert (d / "config.json").is_file() and (d / "tokenizer.json").is_file()
    assert sorted(p.name for p in root.iterdir()) == ["grm", "grm_sft"]  # no temp dirs left behind
    summary = json.loads((final / SUMMARY_FILE).read_text())
    assert summary["sft"]["source"] == "templated" and summary["sft"]["n_rows"] == 48
    steps = [r for r in summary["grpo"]["log"] if "reward" in r]
    assert len(steps) == 2
    assert all("kl" in r and -1.0 <= r["reward"] <= 1.0 for r in steps)  # beta > 0: KL is tracked


def _parameters(model_dir):
    from transformers import AutoModelForCausalLM

    return {n: p.detach() for n, p in AutoModelForCausalLM.from_pretrained(model_dir).named_parameters()}


def _unchanged(before, after):
    assert before.keys() == after.keys()
    return [n for n, p in before.items() if torch.allclose(p, after[n])]


@pytest.mark.slow
def test_sft_stage_logs_its_loss_and_moves_every_parameter(trained_grm, tiny_base):
    """TRL's ``test_train`` for stage 1: base model -> ``grm_sft``."""
    sft = json.loads((trained_grm["final"] / SUMMARY_FILE).read_text())["sft"]
    losses = [r["loss"] for r in sft["log"] if "loss" in r]
    assert len(losses) >= 2 and np.isfinite(losses).all()
    assert np.isfinite(sft["train_loss"]) and sft["train_loss"] > 0
    assert losses[-1] < 0.5 * losses[0]  # 12 epochs on 48 rows: the templated traces are learned
    assert not _unchanged(_parameters(tiny_base), _parameters(trained_grm["sft"]))


@pytest.mark.slow
def test_grpo_stage_logs_its_loss_and_moves_the_sft_model(trained_grm):
    """TRL's ``test_train`` for stage 2: ``grm_sft`` -> final ``grm`` (2 GRPO steps)."""
    grpo = json.loads((trained_grm["final"] / SUMMARY_FILE).read_text())["grpo"]
    steps = [r for r in grpo["log"] if "reward" in r]
    assert [r["step"] for r in steps] == [1, 2] and grpo["global_step"] == 2
    assert all(np.isfinite(r["loss"]) and r["grad_norm"] > 0 for r in steps)
    assert any("train_loss" in r and np.isfinite(r["train_loss"]) for r in grpo["log"])
    assert not _unchanged(_parameters(trained_grm["sft"]), _parameters(trained_grm["final"]))


@pytest.mark.slow
def test_evaluate_reports_parseable_verdicts_accuracy_ci_and_bias(trained_grm, tables, tmp_path, capsys):
    paths = _write_inputs(tmp_path, tables)
    out = tmp_path / "grm.json"
    params = json.dumps({"grm": trained_grm["cfg"], "seed": 1, "preset": "demo"})
    rc = cli(["evaluate-grm", "--model", str(trained_grm["final"]), "--sft-model", str(trained_grm["sft"]),
              "--pairs", str(paths["pairs"]), "--vignettes", str(paths["vignettes"]), "--out", str(out),
              "--judgments-out", str(tmp_path / "j.parquet"), "--params", params])
    assert rc == 0
    metrics = json.loads(out.read_text(), parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
    assert set(metrics["models"]) == {"sft", "final", "final_logprob"}
    sft = metrics["models"]["sft"]
    assert sft["parseable_rate"] >= 0.9  # stage 1 teaches the verdict format
    assert sft["n_pairs"] == metrics["heldout"]["n_pairs"] == 10 and sft["n_judgments"] == 20
    for name, m in metrics["models"].items():
        ci = m["accuracy"]["ci_cluster_t"]
        assert ci["method"] == "cluster_t" and ci["low"] <= m["accuracy"]["accuracy"] <= ci["high"]
        assert 0 <= m["position_consistency"]["consistency"] <= 1
        assert 0 <= m["first_slot_bias"]["p_value"] <= 1
        assert m["statement"].startswith(name)
        # the sentence says what the interval says (0.5 inside: not distinguishable; else above/below)
        side = ("is NOT distinguishable from chance" if ci["low"] <= 0.5 <= ci["high"]
                else "is above chance:" if ci["low"] > 0.5 else "is below chance:")
        assert side in m["statement"], (ci, m["statement"])
    assert metrics["statement"] == metrics["models"]["final"]["statement"]
    assert "demo preset" in metrics["note"]
    raw = pd.read_parquet(tmp_path / "j.parquet")
    assert len(raw) == 3 * 20 and set(raw["verdict"]) <= {"A", "B", "error"}


@pytest.mark.slow
def test_batched_scorer_equals_one_at_a_time_on_the_trained_judge(trained_grm, tables):
    refs = median_references(tables["targets"], tables["vignettes"], "effectiveness")
    scorer = GRMScorer.from_dir(trained_grm["sft"], references=refs, max_new_tokens=24, batch_size=32)
    vids = [list(SCENARIOS)[i % 3] for i in range(12)]
    cands = GOOD + BAD  # 12 candidates x 2 orders
    batched = scorer.score(vids, [SCENARIOS[v] for v in vids], cands)
    texts = scorer.last_texts
    assert scorer.last_error_count <= 2, texts  # the SFT judge answers in format
    single = scorer.score_one_at_a_time(vids, [SCENARIOS[v] for v in vids], cands)
    np.testing.assert_array_equal(batched, single)
    assert texts == scorer.last_texts


def test_cli_bad_delta_and_bad_traces_file_fail_with_one_line(tables, tmp_path, capsys, tiny_base):
    paths = _write_inputs(tmp_path, tables)
    common = ["train-grm", "--base-model", str(tiny_base), "--pairs", str(paths["pairs"]),
              "--targets", str(paths["targets"]), "--vignettes", str(paths["vignettes"]),
              "--out", str(tmp_path / "grm"), "--sft-out", str(tmp_path / "grm_sft")]
    params = {"grm": tiny_cfg(delta=99.0), "data": DATA_CFG, "seed": 0, "preset": "demo"}
    assert cli(common + ["--params", json.dumps(params)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: config key 'grm.delta': delta = 99.0 leaves no clearly separated")
    assert len(err.splitlines()) == 1

    traces = tmp_path / "traces.csv"
    pd.DataFrame({"pair": ["x"], "reasoning": ["ANSWER: A"]}).to_csv(traces, index=False)
    params = {"grm": tiny_cfg(traces_file=str(traces)), "data": DATA_CFG, "seed": 0, "preset": "demo"}
    assert cli(common + ["--params", json.dumps(params)]) == 2
    err = capsys.readouterr().err.strip()
    assert "grm.traces_file" in err and "missing column(s) ['pair_id', 'order', 'trace']" in err
    assert not (tmp_path / "grm").exists() and not (tmp_path / "grm_sft").exists()

    params = {"grm": tiny_cfg(traces_file=str(tmp_path / "nope.csv")), "data": DATA_CFG, "seed": 0}
    assert cli(common + ["--params", json.dumps(params)]) == 2
    assert "file not found" in capsys.readouterr().err


@pytest.mark.slow
def test_teacher_traces_file_and_skipped_rl_stage(tables, tiny_base, tmp_path):
    from reappraisal.grm.pairs import both_orders
    from reappraisal.grm.train_io import train_grm
    from reappraisal.input_tables import read_table

    items = both_orders(tables["pairs"][tables["pairs"]["split"] == "train"]).head(8)
    wrong = {"A": "B", "B": "A"}
    traces = pd.DataFrame({
        "pair_id": items["pair_id"], "order": items["order"],
        "trace": [f"<think>Slot {c} offers another reading.</think>\nANSWER: {c if i % 4 else wrong[c]}"
                  for i, c in enumerate(items["correct"])],
    })
    traces.to_json(tmp_path / "traces.jsonl", orient="records", lines=True)
    loaded = read_table(tmp_path / "traces.jsonl", where="traces")
    summary = train_grm(
        str(tiny_base), tables["pairs"], tables["targets"], tables["vignettes"],
        grm=grm_settings(sft={"num_train_epochs": 1}, grpo={"max_steps": 0}), data=DATA, seed=0,
        out_dir=tmp_path / "grm", sft_out_dir=tmp_path / "grm_sft", traces=loaded,
    )
    assert summary["sft"]["source"] == "traces_file"
    assert summary["sft"]["n_rows"] == 6 and summary["sft"]["n_dropped_wrong_verdict"] == 2
    assert "skipped" in summary["grpo"] and (tmp_path / "grm" / "config.json").is_file()


class Killed(Exception):
    pass


def test_killed_stages_resume_from_their_last_complete_checkpoints(tables, tiny_base, tmp_path):
    """Killed mid-SFT, mid-save and after the final GRPO checkpoint: each rerun continues where it was."""
    import shutil
    import tempfile
    from pathlib import Path

    from transformers import TrainerCallback

    from reappraisal.grm.train_io import train_grm
    from reappraisal.training.checkpoints import last_complete_checkpoint

    cfg = grm_settings(sft={"num_train_epochs": 2, "save_steps": 4, "logging_steps": 1}, grpo={"max_steps": 2, "save_steps": 1})
    kw = dict(grm=cfg, data=DATA, seed=7, out_dir=tmp_path / "grm", sft_out_dir=tmp_path / "grm_sft")
    args = (str(tiny_base), tables["pairs"], tables["targets"], tables["vignettes"])
    work = tmp_path / ".grm.work"

    def stage(args):
        return Path(args.output_dir).name

    class KillAt(TrainerCallback):
        def __init__(self, where, step=None):
            self.where, self.step = where, step

        def on_save(self, args, state, control, **kw):
            if stage(args) == self.where and state.global_step == (self.step or state.max_steps):
                raise Killed(f"{self.where} {state.global_step}")

    class Probe(TrainerCallback):
        def __init__(self):
            self.seen = {}

        def on_train_begin(self, args, state, control, **kw):
            self.seen[stage(args)] = state.global_step

        def on_step_begin(self, args, state, control, optimizer=None, **kw):
            key = stage(args) + "_adam_step"
            if key not in self.seen:
                param = next(p for g in optimizer.param_groups for p in g["params"])
                self.seen[key] = float(optimizer.state[param].get("step", 0.0))  # 0: a fresh optimizer

    with pytest.raises(Killed):
        train_grm(*args, **kw, callbacks=[KillAt("sft", 4)])
    assert last_complete_checkpoint(work / "sft").name == "checkpoint-4"
    shutil.copytree(work / "sft" / "checkpoint-4", work / "sft" / "checkpoint-8")  # killed while saving step 8:
    (work / "sft" / "checkpoint-8" / "trainer_state.json").unlink()  # the trainer state is written last
    stale = Path(tempfile.mkdtemp(prefix=".grm.", suffix=".tmp", dir=tmp_path))

    probe = Probe()
    with pytest.raises(Killed):
        train_grm(*args, **kw, callbacks=[probe, KillAt("grpo")])
    assert probe.seen == {"sft": 4, "sft_adam_step": 4.0, "grpo": 0, "grpo_adam_step": 0.0}
    assert not stale.exists()

    probe = Probe()
    summary = train_grm(*args, **kw, callbacks=[probe])
    assert probe.seen == {}  # both schedules had ended: nothing is trained again
    n_sft = summary["sft"]["global_step"]
    losses = [r["loss"] for r in summary["sft"]["log"] if "loss" in r]
    assert [r["step"] for r in summary["sft"]["log"] if "loss" in r] == list(range(1, n_sft + 1))
    assert summary["sft"]["train_loss"] == pytest.approx(sum(losses) / n_sft)  # the whole run, not the last segment
    assert summary["sft"]["resumed_from"] == f"checkpoint-{n_sft}"
    assert summary["grpo"]["global_step"] == 2 and [r["step"] for r in summary["grpo"]["log"] if "reward" in r] == [1, 2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["grm", "grm_sft"]  # work folder and temporaries gone
    for d in ("grm", "grm_sft"):
        assert (tmp_path / d / "config.json").is_file() and (tmp_path / d / "model.safetensors").is_file()
        assert not (tmp_path / d / "optimizer.pt").exists()
