"""The Bradley–Terry reward model: trains on separated train pairs, learns the planted quality, resumes, and is
evaluated beside the ensemble on the same pairs and draws."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from safetensors.torch import load_file
from transformers import TrainerCallback

from reappraisal.cli import main
from reappraisal.errors import ConfigError, DataValidationError
from reappraisal.reward.bradley_terry_io import BradleyTerryConfig, load_bt_base, preference_pairs, train_bradley_terry
from reappraisal.settings import RewardSettings
from reappraisal.reward.dataset import examples_for_split, pairs_for_split

from .toy import DATA, DIMS, SCENARIOS, make_toy_tables

#: Six scenarios as in the demo (the toy set's three, and three more of the same kind).
DEMO_LIKE_SCENARIOS = {
    **SCENARIOS,
    "t4": "My sister Mia borrowed my car and returned it with an empty tank.",
    "t5": "My manager Sam cancelled my day off at the last minute.",
    "t6": "My neighbour Lee played loud music until three in the morning.",
}


def tiny_bt_config(**overrides):
    bt = dict(learning_rate=3e-3, num_train_epochs=2, per_device_train_batch_size=8, gradient_accumulation_steps=1,
              save_steps=5, logging_steps=5, warmup_ratio=0.0, weight_decay=0.0, lr_scheduler_type="linear")
    bt.update(overrides)
    return BradleyTerryConfig.from_settings(RewardSettings.from_config({"max_length": 128, "cpu_threads": 1,
                                                                        "bradley_terry": bt}))


def _train_pairs(toy_tables, min_gap=0.5, max_pairs=None):
    targets, vignettes, pairs = toy_tables
    return preference_pairs(pairs, targets, vignettes, primary_dimension="effectiveness", min_gap=min_gap,
                            max_pairs=max_pairs, seed=1)


def _kw(toy_tables, tiny_base, cfg):
    targets, vignettes, pairs = toy_tables
    return dict(base=str(tiny_base), train_pairs=_train_pairs(toy_tables), seed=7, cfg=cfg,
                val=examples_for_split(targets, vignettes, "val", DIMS), val_pairs=pairs_for_split(pairs, "val"),
                primary_dimension="effectiveness")


@pytest.fixture(scope="module")
def bt_trained(tmp_path_factory, toy_tables, tiny_base):
    out = tmp_path_factory.mktemp("bt") / "bradley_terry"
    return out, train_bradley_terry(out_dir=out, **_kw(toy_tables, tiny_base, tiny_bt_config()))


# ----------------------------------------------------------------------------- pairs
def test_pairs_are_separated_train_pairs_with_the_higher_z_chosen(toy_tables):
    targets, _, pairs = toy_tables
    z = targets.set_index("reappraisal_id")["z_effectiveness"]
    split = targets.set_index("reappraisal_id")["split"]
    kept = _train_pairs(toy_tables, min_gap=0.5)
    everything = _train_pairs(toy_tables, min_gap=0.0)
    assert len(everything) == int((pairs["split"] == "train").sum())  # min_gap 0 keeps every (non-tied) pair
    assert 0 < len(kept) < len(everything)
    assert (z[kept["chosen_id"]].to_numpy() - z[kept["rejected_id"]].to_numpy() >= 0.5).all()
    assert set(split[kept["chosen_id"]]) | set(split[kept["rejected_id"]]) == {"train"}
    assert kept["chosen"].tolist() == targets.set_index("reappraisal_id")["text"][kept["chosen_id"]].tolist()
    capped = _train_pairs(toy_tables, min_gap=0.5, max_pairs=20)
    assert len(capped) == 20 and set(capped["pair_id"]) <= set(kept["pair_id"])
    assert capped.equals(_train_pairs(toy_tables, min_gap=0.5, max_pairs=20))  # deterministic


def test_a_min_gap_that_leaves_no_pair_names_the_config_key(toy_tables):
    with pytest.raises(ConfigError, match=r"config key 'reward\.bradley_terry\.min_gap'.*leaves no 'train'"):
        _train_pairs(toy_tables, min_gap=50.0)


def test_a_train_pair_with_a_validation_reappraisal_is_refused(toy_tables):
    targets, vignettes, pairs = toy_tables
    bad = pairs.copy()
    first_train = bad.index[bad["split"] == "train"][0]
    bad.loc[first_train, "id_a"] = targets.loc[targets["split"] == "val", "reappraisal_id"].iloc[0]
    with pytest.raises(DataValidationError, match="only 'train' human reappraisals may be trained on"):
        preference_pairs(bad, targets, vignettes, primary_dimension="effectiveness", min_gap=0.5)


def test_cli_bad_min_gap_stops_with_one_line_naming_the_key(tmp_path, toy_files, tiny_base, capsys):
    params = json.dumps({"data": DATA,
                         "reward": {"max_length": 128, "bradley_terry": {"min_gap": 50.0}}, "seed": 1, "preset": "demo"})
    rc = main(["train-bradley-terry", "--base-model", str(tiny_base), "--targets", str(toy_files["targets"]),
               "--vignettes", str(toy_files["vignettes"]), "--pairs", str(toy_files["pairs"]),
               "--out", str(tmp_path / "bradley_terry"), "--params", params])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1
    assert err.startswith("error: config key 'reward.bradley_terry.min_gap': min_gap = 50.0 leaves no")
    assert not (tmp_path / "bradley_terry").exists()
    # a value the schema refuses is one line naming the key too
    params = params.replace('"min_gap": 50.0', '"min_gap": -1')
    rc = main(["train-bradley-terry", "--base-model", str(tiny_base), "--targets", str(toy_files["targets"]),
               "--vignettes", str(toy_files["vignettes"]), "--pairs", str(toy_files["pairs"]),
               "--out", str(tmp_path / "bradley_terry"), "--params", params])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "reward.bradley_terry.min_gap" in err


# -------------------------------------------------------------------------- training
def test_training_logs_a_finite_loss_and_moves_every_parameter(bt_trained, tiny_base):
    """TRL's ``test_train``: the starting model (base + the seeded scalar head) against the saved one."""
    from transformers import AutoModelForSequenceClassification

    out, summary = bt_trained
    _, start = load_bt_base(str(tiny_base), summary["seed"])
    before = {n: p.detach().clone() for n, p in start.named_parameters()}
    after = dict(AutoModelForSequenceClassification.from_pretrained(out).named_parameters())
    assert after.keys() == before.keys() and after["score.weight"].shape[0] == 1  # one Bradley-Terry score
    unchanged = [n for n, p in before.items() if torch.allclose(p, after[n])]
    assert not unchanged, f"not trained: {unchanged}"
    log = json.loads((out / "training_log.json").read_text())
    losses = [e["loss"] for e in log if "loss" in e]
    assert len(losses) >= 2 and all(math.isfinite(x) and x > 0 for x in losses)
    assert any("accuracy" in e for e in log)  # RewardTrainer's own metrics are kept
    assert math.isfinite(summary["train_loss"]) and summary["train_loss"] < math.log(2)  # below a coin's loss
    record = json.loads((out / "metrics.json").read_text())
    assert record["segments"] == summary["segments"] and record["train_seconds"] > 0
    assert record["n_train_pairs"] == summary["n_train_pairs"] > 0 and record["min_gap"] == 0.5
    assert {"config.json", "model.safetensors", "tokenizer.json", "metrics.json"} <= {p.name for p in out.iterdir()}
    assert sorted(p.name for p in out.parent.iterdir()) == ["bradley_terry"]  # no work folder, no lock left


def test_the_model_recovers_the_planted_quality(tmp_path):
    """A demo-like set (6 scenarios, quality planted in the text, ratings = quality + noise): on the held-out
    validation pairs (ties 0.5) the accuracy and its whole scenario-clustered interval are above chance."""
    from reappraisal.base_models.prepare_io import tokenizer_corpus
    from reappraisal.base_models.tiny import TinyArchitecture, save_tiny_model, train_tokenizer

    tables = make_toy_tables(n_per_scenario=32, seed=5, val_fraction=0.4, scenarios=DEMO_LIKE_SCENARIOS)
    targets, vignettes, pairs = tables
    tok = train_tokenizer(tokenizer_corpus(targets, vignettes), vocab_size=1000)
    arch = TinyArchitecture(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                            head_dim=16, intermediate_size=64)
    base = save_tiny_model(tmp_path / "base", tok, arch, seed=3)
    summary = train_bradley_terry(out_dir=tmp_path / "bradley_terry", **_kw(tables, base, tiny_bt_config()))
    pairwise = summary["validation"]["pairwise"]
    assert pairwise["n_scenarios"] == 6
    assert pairwise["accuracy"] > 0.65
    assert pairwise["ci_cluster_t"]["low"] > 0.5
    assert summary["validation"]["spearman_primary"]["pooled"] > 0.5


class _KilledAt(TrainerCallback):
    """A kill right after the checkpoint at ``step`` was saved (``None``: the final one)."""

    def __init__(self, step=None):
        self.step = step

    def on_save(self, args, state, control, **kwargs):
        if state.global_step == (self.step or state.max_steps):
            raise KeyboardInterrupt(f"killed after checkpoint-{state.global_step}")


def test_kill_and_resume_gives_the_weights_of_an_uninterrupted_run(tmp_path, toy_tables, tiny_base):
    kw = _kw(toy_tables, tiny_base, tiny_bt_config(num_train_epochs=1))
    fresh = train_bradley_terry(out_dir=tmp_path / "fresh" / "bradley_terry", **kw)
    n = fresh["global_steps"]
    assert n > 10

    out = tmp_path / "bradley_terry"
    with pytest.raises(KeyboardInterrupt):
        train_bradley_terry(out_dir=out, callbacks=[_KilledAt(5)], **kw)
    assert not out.exists() and (tmp_path / ".bradley_terry.work" / "checkpoint-5").is_dir()
    with pytest.raises(KeyboardInterrupt):
        train_bradley_terry(out_dir=out, callbacks=[_KilledAt()], **kw)  # after the final checkpoint, before export
    resumed = train_bradley_terry(out_dir=out, **kw)

    assert [(s["resumed_from"], s["start_step"], s["end_step"], s["completed"]) for s in resumed["segments"]] == [
        (None, 0, 5, False), ("checkpoint-5", 5, n, False)]
    assert resumed["resumed_from"] == f"checkpoint-{n}" and resumed["global_steps"] == n
    assert resumed["train_loss"] == pytest.approx(fresh["train_loss"], rel=1e-6)  # over the whole run
    a, b = load_file(str(out / "model.safetensors")), load_file(str(tmp_path / "fresh" / "bradley_terry" / "model.safetensors"))
    assert a.keys() == b.keys()
    for k in a:
        torch.testing.assert_close(a[k], b[k], atol=1e-5, rtol=1e-4)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bradley_terry", "fresh"]


def test_other_settings_start_over(tmp_path, toy_tables, tiny_base):
    out = tmp_path / "bradley_terry"
    with pytest.raises(KeyboardInterrupt):
        train_bradley_terry(out_dir=out, callbacks=[_KilledAt(5)],
                            **_kw(toy_tables, tiny_base, tiny_bt_config(num_train_epochs=1)))
    summary = train_bradley_terry(out_dir=out, **_kw(toy_tables, tiny_base, tiny_bt_config(num_train_epochs=1,
                                                                                             learning_rate=1e-3)))
    assert summary["resumed_from"] is None and [s["start_step"] for s in summary["segments"]] == [0]


# ------------------------------------------------------------------------ evaluation
def test_evaluation_puts_it_beside_the_ensemble_on_the_same_pairs_and_draws(bt_trained, trained_seeds, toy_tables):
    from reappraisal.reward.evaluate_io import evaluate_reward_models

    targets, vignettes, pairs = toy_tables
    out = evaluate_reward_models(trained_seeds[0], targets=targets, vignettes=vignettes, pairs=pairs, dimensions=DIMS,
                                 primary_dimension="effectiveness", max_length=128, n_best_of=4, draws=50, seed=3,
                                 bradley_terry_dir=bt_trained[0])
    bt, ens = out["bradley_terry"], out["ensemble"]
    # the same held-out pairs and the same clustered interval method as the ensemble; the figure the training
    # record computed from the saved model
    assert bt["pairwise"]["n_pairs"] == ens["pairwise"]["n_pairs"] == out["n_pairs"]
    assert bt["pairwise"]["ci_cluster_t"]["method"] == ens["pairwise"]["ci_cluster_t"]["method"]
    assert bt["pairwise"]["accuracy"] == pytest.approx(bt_trained[1]["validation"]["pairwise"]["accuracy"])
    # best-of-N on the same scenarios; the paired difference is the difference of the two figures
    assert [r["scenario"] for r in bt["best_of_n"]["per_scenario"]] == [r["scenario"] for r in ens["best_of_n"]["per_scenario"]]
    diff = bt["best_of_n_vs_ensemble"]
    assert diff["difference"] == pytest.approx(bt["best_of_n"]["win_vs_random"] - ens["best_of_n"]["win_vs_random"])
    assert diff["ci_cluster_t"]["low"] <= diff["difference"] <= diff["ci_cluster_t"]["high"]
    assert bt["training"]["n_train_pairs"] == bt_trained[1]["n_train_pairs"]
    assert bt["best_of_n"]["win_vs_random"] > 0.5  # the planted quality reranks too
    json.dumps(out)  # JSON-able as written


def test_the_same_draws_make_an_identical_selector_tie_exactly(toy_tables):
    from reappraisal.reward.metrics import best_of_n, paired_best_of_n_difference

    rng = np.random.default_rng(0)
    z, labels = rng.normal(size=60), np.repeat(["a", "b", "c"], 20)
    scores = z + rng.normal(0, 0.5, 60)
    one = best_of_n(scores, z, labels, 4, 100, 9)
    two = best_of_n(scores.copy(), z, labels, 4, 100, 9)
    diff = paired_best_of_n_difference(one, two)
    assert diff["difference"] == 0.0 and diff["n_scenarios"] == 3
    worse = paired_best_of_n_difference(best_of_n(-scores, z, labels, 4, 100, 9), one)
    assert worse["difference"] < 0 and worse["ci_cluster_t"]["high"] < 0
