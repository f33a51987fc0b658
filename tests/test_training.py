"""The shared training plumbing's pure parts: checkpoints found, leftovers removed, whole-run loss, padding, precision,
the reporter of every trainer's logged steps."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
import yaml

from reappraisal.atomic import atomic_dir
from reappraisal.errors import ConfigError
from reappraisal.training.batches import pad_right
from reappraisal.training.checkpoints import last_complete_checkpoint, schedule_finished
from reappraisal.training.run import whole_run_loss
from reappraisal.training.settings import schedule_args, sft_args, use_bf16
from reappraisal.training.work_dir import open_work_dir, remove_stale_temporaries


def _checkpoint(work: Path, step: int, *, state: str | None = "ok", weights: bool = True) -> Path:
    d = work / f"checkpoint-{step}"
    d.mkdir(parents=True)
    if weights:
        (d / "model.safetensors").write_bytes(b"w")
    if state == "ok":
        (d / "trainer_state.json").write_text(json.dumps({"global_step": step, "max_steps": 10, "log_history": []}))
    elif state == "torn":
        (d / "trainer_state.json").write_text('{"global_step": ')
    return d


def test_the_newest_complete_checkpoint_wins_and_half_written_ones_go(tmp_path):
    _checkpoint(tmp_path, 5)
    _checkpoint(tmp_path, 10)
    _checkpoint(tmp_path, 15, state="torn")
    _checkpoint(tmp_path, 20, state=None)
    _checkpoint(tmp_path, 25, weights=False)
    (tmp_path / "checkpoint-final").mkdir()
    assert last_complete_checkpoint(tmp_path, remove_incomplete=False).name == "checkpoint-10"
    assert (tmp_path / "checkpoint-20").exists()  # only the main process removes
    assert last_complete_checkpoint(tmp_path).name == "checkpoint-10"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-10", "checkpoint-5", "checkpoint-final"]
    assert last_complete_checkpoint(tmp_path / "nothing") is None


def test_work_dir_keeps_checkpoints_only_for_the_same_spec(tmp_path):
    work = tmp_path / ".out.work"
    with open_work_dir(work, {"lr": 1e-3, "data": "abc"}) as w:
        assert w.resume is None and not w.finished
        _checkpoint(work, 10)
    with open_work_dir(work, {"data": "abc", "lr": 1e-3}) as again:
        assert again.resume.name == "checkpoint-10" and again.finished  # global_step 10 of max_steps 10
    with open_work_dir(work, {"lr": 2e-3, "data": "abc"}) as other:
        assert other.resume is None and sorted(p.name for p in work.iterdir()) == ["RUN_SPEC.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.work"]  # the lock file goes with its release


def test_schedule_finished_reads_steps_and_early_stopping():
    assert not schedule_finished({"global_step": 4, "max_steps": 8})
    assert schedule_finished({"global_step": 8, "max_steps": 8})
    stopped = {"TrainerControl": {"args": {}, "attributes": {"should_training_stop": True}}}
    assert schedule_finished({"global_step": 4, "max_steps": 8, "stateful_callbacks": stopped})


def test_leftovers_of_killed_atomic_writes_are_removed_and_nothing_else(tmp_path):
    out = tmp_path / "seed0"
    with pytest.raises(KeyboardInterrupt):
        with atomic_dir(out) as tmp:
            kept = tmp  # an exception cleans up; a SIGKILL would not: recreate what it leaves
            raise KeyboardInterrupt
    assert not kept.exists()
    left = [Path(tempfile.mkdtemp(prefix=".seed0.", suffix=".tmp", dir=tmp_path)),
            Path(tempfile.mkstemp(prefix=".health.json.", suffix=".json", dir=tmp_path)[1])]
    others = [tmp_path / ".seed0.work", tmp_path / ".seed01.abcdefgh.tmp", tmp_path / "seed0.abcdefgh.tmp"]
    for p in others:
        p.mkdir()
    removed = remove_stale_temporaries(out, tmp_path / "health.json", tmp_path / "absent" / "x")
    assert sorted(removed) == sorted(left) and not any(p.exists() for p in left)
    assert all(p.exists() for p in others)


def test_whole_run_loss_joins_the_logged_steps_and_the_resumed_segment():
    history = [{"loss": 2.0, "step": 2}, {"eval_loss": 9.0, "step": 2}, {"loss": 1.0, "step": 4}, {"loss": 7.0, "step": 6}]
    # steps 1-2 mean 2.0, 3-4 mean 1.0 (from the checkpoint at 4), then 4 steps of mean 0.5 in this segment
    assert whole_run_loss(history, upto_step=4, segment_loss=0.5, global_step=8) == pytest.approx((4 + 2 + 2) / 8)
    assert whole_run_loss([], upto_step=0, segment_loss=0.7, global_step=5) == pytest.approx(0.7)
    assert whole_run_loss(history, upto_step=3, segment_loss=0.5, global_step=8) is None  # step 3 was not logged


def test_pad_right_keeps_every_token_in_place():
    batch = pad_right([[5, 6, 7], [8]], 0, labels=[[-100, 6, 7], [8]])
    assert batch["input_ids"].tolist() == [[5, 6, 7], [8, 0, 0]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]
    assert batch["labels"].tolist() == [[-100, 6, 7], [8, -100, -100]]


def test_one_precision_rule():
    assert use_bf16("auto", where="k", capable=False) is False and use_bf16("auto", where="k", capable=True) is True
    assert use_bf16("bf16", where="k", capable=True) and use_bf16(True, where="k", capable=True)
    assert not use_bf16("fp32", where="k", capable=True) and not use_bf16(False, where="k", capable=True)
    with pytest.raises(ConfigError, match="config key 'reward.bf16'"):
        use_bf16(True, where="config key 'reward.bf16'", capable=False)
    with pytest.raises(ConfigError, match="not a precision"):
        use_bf16("fp16", where="k", capable=True)


def test_schedule_args_pass_the_optimizer_settings_and_the_warmup_ratio():
    from types import SimpleNamespace

    cfg = SimpleNamespace(learning_rate=1e-5, num_train_epochs=2, per_device_train_batch_size=8,
                          gradient_accumulation_steps=1, weight_decay=0.01, lr_scheduler_type="cosine",
                          max_grad_norm=1.0, warmup_ratio=0.05, save_steps=100)
    assert schedule_args(cfg) == {"learning_rate": 1e-5, "num_train_epochs": 2, "per_device_train_batch_size": 8,
                                  "gradient_accumulation_steps": 1, "weight_decay": 0.01,
                                  "lr_scheduler_type": "cosine", "max_grad_norm": 1.0, "warmup_steps": 0.05}
    assert isinstance(schedule_args(SimpleNamespace(**{**vars(cfg), "warmup_ratio": 0}))["warmup_steps"], float)


def test_sft_args_read_the_settings_and_fix_the_linear_schedule_on_shuffled_data():
    from reappraisal.settings import GrmSftSettings

    sft = GrmSftSettings.from_config({"num_train_epochs": 1, "learning_rate": 2e-5, "per_device_train_batch_size": 4,
                                      "max_length": 256, "save_steps": 50})
    assert sft_args(sft) == {"num_train_epochs": 1.0, "learning_rate": 2e-5, "per_device_train_batch_size": 4,
                             "max_length": 256, "lr_scheduler_type": "linear", "shuffle_dataset": True}


def _every_trainers_arguments(tracking, tmp_path: Path) -> dict[str, dict]:
    """The arguments each trainer here builds (its TrainingArguments/TRL config keywords) with ``tracking``."""
    from types import SimpleNamespace

    from reappraisal.evaluation.demo_judge_io import judge_training_args
    from reappraisal.grm.train_io import _trainer_args
    from reappraisal.policy.train_io import grpo_settings
    from reappraisal.settings import EvaluationSettings, PolicySettings, RewardSettings
    from reappraisal.reward.bradley_terry_io import BradleyTerryConfig, reward_config_args
    from reappraisal.reward.train_io import RewardTrainConfig, training_arguments

    grm = _trainer_args(SimpleNamespace(path=tmp_path), seed=0, save_steps=5, tracking=tracking)  # SFT and GRPO
    return {
        "reward seed": training_arguments(RewardTrainConfig.from_settings(RewardSettings()), tmp_path, seed=0, bf16=False,
                                          use_cpu=True, tracking=tracking),
        "bradley_terry": reward_config_args(BradleyTerryConfig.from_settings(RewardSettings()), tmp_path, seed=0, bf16=False,
                                            use_cpu=True, tracking=tracking),
        "grm": grm,
        "policy arm": grpo_settings(PolicySettings(), seed=0, output_dir=tmp_path, bf16_capable=False, tracking=tracking),
        "demo judge": judge_training_args(EvaluationSettings().demo_judge, tmp_path, seed=0, bf16=False,
                                          use_cpu=True, tracking=tracking),
    }


def test_the_reporter_reaches_every_trainers_arguments(tmp_path):
    from reappraisal.training.tracking import OFF, Tracking

    live = Tracking("dvclive", tmp_path / "dvclive" / "job")
    for trainer, args in _every_trainers_arguments(live, tmp_path).items():
        assert args["report_to"] == ["dvclive"] and args["run_name"] == live.live_dir.as_posix(), trainer
    for trainer, args in _every_trainers_arguments(OFF, tmp_path).items():
        assert args["report_to"] == "none" and "run_name" not in args, trainer


def test_a_reporter_is_refused_in_one_line_naming_the_key(tmp_path):
    from reappraisal.config import load_config
    from reappraisal.settings import TrainingSettings
    from reappraisal.training.tracking import OFF, PACKAGES, REPORTERS, Tracking

    schema = yaml.safe_load((Path(__file__).parents[1] / "workflow/schemas/config.schema.yaml").read_text())
    assert tuple(schema["properties"]["training"]["properties"]["report_to"]["enum"]) == REPORTERS
    assert set(PACKAGES) == set(REPORTERS) - {"none"}
    assert Tracking.from_settings(TrainingSettings(), tmp_path) == Tracking("dvclive", tmp_path)  # into the job's folder
    assert Tracking.from_settings(TrainingSettings(), None) == OFF  # a command run by hand without --live-dir
    assert load_config()["training"]["report_to"] == "dvclive"  # both presets: the schema's default
    with pytest.raises(ConfigError) as bad:
        load_config(overrides={"training": {"report_to": "mlflow"}})
    assert "config key 'training.report_to'" in str(bad.value) and "\n" not in str(bad.value)
    with pytest.raises(ConfigError, match="config key 'training.report_to'"):
        Tracking.from_settings(TrainingSettings.from_config({"report_to": "comet_ml"}), tmp_path)
    # a reporter the environment lacks (the locks install dvclive only): one line before any training
    with pytest.raises(ConfigError, match="tensorboard is not installed.*config key 'training.report_to'|"
                                          "config key 'training.report_to'.*tensorboard is not installed"):
        Tracking.from_settings(TrainingSettings.from_config({"report_to": "tensorboard"}), tmp_path)


def test_a_trainer_built_for_another_reporter_is_refused(tmp_path):
    from types import SimpleNamespace

    from reappraisal.training.run import run_training
    from reappraisal.training.tracking import Tracking

    trainer = SimpleNamespace(args=SimpleNamespace(output_dir=str(tmp_path), report_to=["dvclive"]))
    with pytest.raises(ValueError, match="reports to \\['dvclive'\\], not to 'none'"):
        run_training(trainer, SimpleNamespace(path=tmp_path))  # transformers' own DVCLive would write ./dvclive
    trainer.args.report_to = []
    with pytest.raises(ValueError, match="not to 'dvclive'"):
        run_training(trainer, SimpleNamespace(path=tmp_path), tracking=Tracking("dvclive", tmp_path))


def test_dvclive_writes_its_folder_in_a_git_repository_without_commits(tmp_path, monkeypatch):
    """A fresh `git init` (an unpacked archive, the tests' clean copies) has no commit: the reporter still logs, into
    its folder only (no DVC repository is created, no experiment saved)."""
    import subprocess

    from reappraisal.training.tracking import open_live

    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    monkeypatch.chdir(tmp_path)
    live = open_live(tmp_path / "dvclive" / "job", resume=False)
    live.log_metric("loss", 0.5)
    live.next_step()
    live.end()
    assert (tmp_path / "dvclive" / "job" / "metrics.json").is_file()
    assert not (tmp_path / ".dvc").exists() and not (tmp_path / "dvc.yaml").exists()
