"""GRPO training of an arm end to end (tiny policy, fake judges), resume, settings, external arms."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from .fakes import FakeGRM, FakeRM

from reappraisal.config import load_config
from reappraisal.errors import ConfigError, PipelineInputError
from reappraisal.policy.arms import ArmSpec, parse_arms, resolve_model_dir
from reappraisal.policy.committee import CommitteeWeights, FormatGate
from reappraisal.policy.health import LOG_COLUMNS
from reappraisal.policy.train_io import check_batch_fits, grpo_settings, record_external, train_policy
from reappraisal.training.tracking import Tracking
from reappraisal.settings import PolicySettings
from reappraisal.workflow_dvc import live_entries
from tests.workflow_utils import REPO, env_with_venv

POLICY = dict(
    learning_rate=1e-4, beta=0.04, num_generations=4, max_completion_length=40, per_device_train_batch_size=8,
    max_steps=3, save_steps=2, use_cpu=True, bf16=False, format_gate={"max_sentences": 2, "penalty": -3.0},
    health={"window": 2},
)
COMMITTEE = ArmSpec("committee", CommitteeWeights(0.5, 0.5, 0.5))


def policy_settings(**changes) -> PolicySettings:
    """The test's policy settings with ``changes``, as a command builds them."""
    return PolicySettings.from_config({**POLICY, **changes})


def fakes(device):
    return FakeRM(), FakeGRM()


def test_warm_start_gives_well_formed_varied_answers(warm_policy, vignettes):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from reappraisal.policy.answer import decode_completions, extract_answer
    from reappraisal.policy.prompts import build_messages

    tok = AutoTokenizer.from_pretrained(warm_policy)
    model = AutoModelForCausalLM.from_pretrained(warm_policy)
    prompt = tok.apply_chat_template(build_messages(vignettes["text"][0]), tokenize=False, add_generation_prompt=True)
    ids = tok(prompt, return_tensors="pt", add_special_tokens=False)["input_ids"]
    torch.manual_seed(0)
    out = model.generate(ids.repeat(8, 1), do_sample=True, max_new_tokens=40, pad_token_id=tok.pad_token_id)
    answers = [extract_answer(t) for t in decode_completions(tok, [o[ids.shape[1]:].tolist() for o in out])]
    gate = FormatGate()
    assert sum(gate.check(a).passed for a in answers) >= 6
    assert len(set(answers)) >= 3


def test_train_arm_end_to_end(tmp_path, warm_policy, vignettes):
    """TRL's ``test_train``: the loss is logged at every step and every trainable parameter moved."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    before = {n: p.detach().clone() for n, p in AutoModelForCausalLM.from_pretrained(warm_policy).named_parameters()}
    out = tmp_path / "committee"
    health = train_policy(arm=COMMITTEE, policy=policy_settings(), model_dir=warm_policy, vignettes=vignettes, out_dir=out,
                          scorers=fakes, seed=0)
    after = dict(AutoModelForCausalLM.from_pretrained(out / "model").named_parameters())
    AutoTokenizer.from_pretrained(out / "model")
    assert after.keys() == before.keys()
    unchanged = [n for n, p in before.items() if torch.allclose(p, after[n])]
    assert not unchanged, f"GRPO left these parameters as the warm start had them: {unchanged}"
    log = pd.read_csv(out / "training_log.csv")
    assert list(log["step"]) == [1, 2, 3]
    for col in ("reward", "reward_std", "rm_score", "grm_score", "guard", "kl", "entropy", "frac_reward_zero_std",
                "clipped_ratio", "gate_pass_rate", "completion_mean_length", "loss", "grad_norm"):
        assert log[col].notna().all(), col
    assert np.isfinite(log["loss"]).all() and (log["grad_norm"] > 0).all()  # a loss was optimized at every step
    on_disk = json.loads((out / "health.json").read_text())
    assert on_disk == json.loads(json.dumps(health))
    assert set(on_disk["checks"]) == {"kl_bounded", "entropy_alive", "reward_std_alive", "truncation_low", "format_ok"}
    # the verdict follows from the checks, over the three logged steps
    assert on_disk["failed"] == sorted(k for k, c in on_disk["checks"].items() if not c["passed"])
    assert on_disk["verdict"] == ("unhealthy" if on_disk["failed"] else "healthy") and on_disk["n_steps"] == 3
    first = on_disk["first_step"]
    assert first["gate_pass_rate"] >= 0.5 and first["frac_reward_zero_std"] < 1.0
    assert not (out / "checkpoints").exists()


def test_gold_is_logged_beside_the_proxy_never_enters_the_reward_and_reaches_dvc_exp_show(tmp_path, warm_policy,
                                                                                         vignettes, monkeypatch):
    """Every figure of the training log (committee, guard, gate, gold, KL, loss) reaches DVCLive at every step, in
    the arm's folder that the generated dvc.yaml names, and `dvc exp show` lists the last step's."""
    repo, live = _dvc_repo_reading(tmp_path / "repo", "dvclive/train_policy/committee")
    monkeypatch.chdir(repo)  # where a job runs: DVCLive finds the DVC repository there
    out = tmp_path / "committee"
    train_policy(arm=COMMITTEE, policy=policy_settings(gold_scorer="demo_gold"), model_dir=warm_policy,
                 vignettes=vignettes, out_dir=out, scorers=fakes, seed=0, tracking=Tracking("dvclive", repo / live))
    log = pd.read_csv(out / "training_log.csv")
    assert log["gold"].notna().all() and log["gold_std"].notna().all()
    assert (log["gold_std"] > 0).any()  # completions differ in planted quality
    # weight 0: the optimized reward is the committee's alone
    assert (log["reward"] - log["committee_reward"]).abs().max() < 1e-6
    logged = {col: key for col, key in LOG_COLUMNS.items() if log[col].notna().any()}
    assert {"guard", "gate_pass_rate", "rm_score", "grm_score", "gold", "kl", "loss"} <= set(logged)
    for col, key in logged.items():  # a row per step, the training log's value
        steps = pd.read_csv(repo / live / "plots" / "metrics" / f"{key}.tsv", sep="\t")
        assert list(steps["step"]) == list(log["step"]) and np.allclose(steps.iloc[:, 1], log[col], equal_nan=True), col
    shown = subprocess.run([sys.executable, "-m", "dvc", "exp", "show", "--json"], cwd=repo, capture_output=True,
                           text=True, env=env_with_venv())
    assert shown.returncode == 0, shown.stderr
    workspace = next(row for row in json.loads(shown.stdout) if row["rev"] == "workspace")
    last = workspace["data"]["metrics"][f"{live}/metrics.json"]["data"]
    assert last["step"] == 3 and last["committee"]["guard"] == pytest.approx(log["guard"].iloc[-1])
    assert last["rewards"]["gold"]["mean"] == pytest.approx(log["gold"].iloc[-1])
    with pytest.raises(ConfigError, match="demo preset only"):
        train_policy(arm=COMMITTEE, policy=policy_settings(gold_scorer="demo_gold"), model_dir=warm_policy,
                     vignettes=vignettes, out_dir=tmp_path / "paper", scorers=fakes, seed=0, preset="paper",
                     data_source="osf")
    # without a gold scorer the column stays empty
    plain = pd.read_csv(_train_plain(tmp_path, warm_policy, vignettes) / "training_log.csv")
    assert "gold" not in plain.columns or plain["gold"].isna().all()


def _dvc_repo_reading(repo: Path, live: str) -> tuple[Path, str]:
    """A git + DVC repository whose dvc.yaml holds the top-level metrics and plots the project's dvc.yaml has for
    the DVCLive folder ``live`` (nothing else), committed as `dvc exp show` needs."""
    from dvc.repo import Repo

    doc = yaml.safe_load((REPO / "dvc.yaml").read_text())
    entries = {"metrics": [m for m in doc["metrics"] if m.startswith(f"{live}/")],
               "plots": [p for p in doc["plots"] if next(iter(p)).startswith(f"{live}/")]}
    assert entries == live_entries([live])
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    Repo.init(str(repo)).close()
    (repo / "dvc.yaml").write_text(yaml.safe_dump(entries))
    (repo / ".gitignore").write_text("/dvclive/\n")  # as the project's
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.invalid"]
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "dvc.yaml"], cwd=repo, check=True)
    return repo, live


def _train_plain(tmp_path, warm_policy, vignettes):
    out = tmp_path / "plain"
    train_policy(arm=COMMITTEE, policy=policy_settings(max_steps=1), model_dir=warm_policy, vignettes=vignettes,
                 out_dir=out, scorers=fakes, seed=0)
    return out


class Interrupted(Exception):
    pass


def test_killed_runs_resume_from_the_last_complete_checkpoint_and_stop_at_max_steps(tmp_path, warm_policy, vignettes):
    """Killed mid-run, then mid-save, then after the final checkpoint: every rerun continues, none passes max_steps."""
    import shutil
    import tempfile

    from transformers import TrainerCallback

    policy = policy_settings(max_steps=4, save_steps=2)
    out = tmp_path / "arm"
    ckpts = out / "checkpoints"
    kw = dict(arm=COMMITTEE, policy=policy, model_dir=warm_policy, vignettes=vignettes, out_dir=out, scorers=fakes, seed=0)

    from reappraisal.training.locks import lock_holder

    holders = set()

    class InterruptAtSave(TrainerCallback):
        def __init__(self, step):
            self.step = step

        def on_save(self, args, state, control, **kw):
            holders.add((lock_holder(ckpts) or {}).get("pid"))
            if state.global_step == self.step:
                raise Interrupted(state.global_step)

    with pytest.raises(Interrupted):
        train_policy(**kw, callbacks=[InterruptAtSave(2)])
    assert holders == {os.getpid()}  # the arm's work folder is locked while it trains (beside it)
    assert (ckpts / "checkpoint-2" / "trainer_state.json").is_file()
    assert not (out / "model").exists() and not (out / "health.json").exists()
    # a kill while checkpoint-4 was being written: weights there, trainer state not yet
    (ckpts / "checkpoint-4").mkdir()
    shutil.copy(ckpts / "checkpoint-2" / "model.safetensors", ckpts / "checkpoint-4")
    # and what killed atomic writes of the outputs leave behind (atomic's own naming)
    stale = [Path(tempfile.mkstemp(prefix=".health.json.", suffix=".json", dir=out)[1]),
             Path(tempfile.mkdtemp(prefix=".model.", suffix=".tmp", dir=out))]
    (out / "notes.txt").write_text("not ours to remove")

    seen = {}

    class Probe(TrainerCallback):
        def on_train_begin(self, args, state, control, **kw):
            seen["start_step"] = state.global_step

        def on_step_begin(self, args, state, control, optimizer=None, **kw):
            if "adam_step" not in seen:
                param = next(p for g in optimizer.param_groups for p in g["params"])
                seen["adam_step"] = float(optimizer.state[param]["step"])

    with pytest.raises(Interrupted):  # killed again, right after the final checkpoint was complete
        train_policy(**kw, callbacks=[Probe(), InterruptAtSave(4)])
    assert seen == {"start_step": 2, "adam_step": 2.0}  # step count and optimizer state restored
    assert (ckpts / "checkpoint-4" / "trainer_state.json").is_file()

    seen.clear()
    health = train_policy(**kw, callbacks=[Probe()])
    assert seen == {}  # the schedule had ended at checkpoint-4: nothing is trained again
    assert health["resumed_from"].endswith("checkpoint-4") and health["global_step"] == 4
    # both killed segments are in the record, each up to its last checkpoint; the export-only rerun adds none
    assert [(s["resumed_from"], s["start_step"], s["end_step"], s["completed"]) for s in health["segments"]] == [
        (None, 0, 2, False), ("checkpoint-2", 2, 4, False)]
    assert health["train_seconds"] == pytest.approx(sum(s["seconds"] for s in health["segments"]), abs=1e-3)
    assert health["train_seconds"] > 0
    assert list(pd.read_csv(out / "training_log.csv")["step"]) == [1, 2, 3, 4]  # the whole run, not one segment
    assert json.loads((out / "health.json").read_text())["global_step"] == 4
    from transformers import AutoModelForCausalLM

    AutoModelForCausalLM.from_pretrained(out / "model")
    assert sorted(p.name for p in out.iterdir()) == ["health.json", "model", "notes.txt", "steps", "training_log.csv"]
    assert not any(p.exists() for p in stale)


def test_changed_settings_start_over(tmp_path, warm_policy, vignettes):
    from transformers import TrainerCallback

    out = tmp_path / "arm"

    class Stop(TrainerCallback):
        def on_save(self, args, state, control, **kw):
            raise Interrupted(state.global_step)

    with pytest.raises(Interrupted):
        train_policy(arm=COMMITTEE, policy=policy_settings(max_steps=2, save_steps=1), model_dir=warm_policy,
                     vignettes=vignettes, out_dir=out, scorers=fakes, seed=0, callbacks=[Stop()])
    health = train_policy(arm=COMMITTEE, policy=policy_settings(max_steps=2, save_steps=1, learning_rate=2e-4), model_dir=warm_policy,
                          vignettes=vignettes, out_dir=out, scorers=fakes, seed=0)
    assert health["resumed_from"] is None and health["global_step"] == 2


def test_paper_preset_has_the_model_cards_settings(tmp_path):
    cfg = load_config(overrides={"preset": "paper"})
    s = grpo_settings(PolicySettings.from_config(cfg["policy"]), seed=cfg["seed"], output_dir=tmp_path, bf16_capable=True)  # as on the cluster
    assert (s["learning_rate"], s["beta"], s["num_generations"], s["max_steps"], s["bf16"]) == (8e-6, 0.04, 12, 500, True)
    assert cfg["policy"]["launcher"] == {"accelerate_config": "workflow/accelerate/zero2_4gpu.yaml", "num_processes": 4}
    assert s["use_vllm"] and s["vllm_mode"] == "colocate"  # TRL's vLLM path: tests/policy/test_vllm_path.py
    check_batch_fits(PolicySettings.from_config(cfg["policy"]), n_prompts=6, world_size=4)  # 4 prompt groups of 12 per step from 6 scenarios
    demo = load_config()["policy"]
    assert demo["beta"] > 0 and demo["use_cpu"] and demo["warm_start"]["enabled"]


def test_zero_beta_is_refused_with_a_reason(tmp_path):
    with pytest.raises(ConfigError, match="reward-hack"):
        load_config(overrides={"policy": {"beta": 0.0}})
    with pytest.raises(ConfigError, match="beta must be > 0"):
        grpo_settings(policy_settings(beta=0.0), seed=0, output_dir=tmp_path)
    # an arm that declares beta 0 is the cards' ablation, trained as declared; policy.beta itself stays > 0
    assert grpo_settings(policy_settings(), seed=0, output_dir=tmp_path, arm_beta=0.0)["beta"] == 0.0
    from reappraisal.policy.arms import parse_arms

    arms = parse_arms(policy_settings(arms={"beta0": {"w_rm": 0.5, "w_grm": 0.5, "beta": 0.0}, "plain": {"w_rm": 1.0}}))
    assert arms["beta0"].beta == 0.0 and arms["plain"].beta is None
    with pytest.raises(ConfigError, match="external"):
        parse_arms(policy_settings(arms={"ext": {"external": "some/model", "beta": 0.0}}))
    with pytest.raises(ConfigError, match="bf16"):  # bf16 where no GPU can: refused, not silently fp32
        grpo_settings(policy_settings(bf16=True), seed=0, output_dir=tmp_path, bf16_capable=False)


def test_batch_layout_checks():
    with pytest.raises(ConfigError, match="multiple of num_generations"):
        check_batch_fits(policy_settings(per_device_train_batch_size=6), n_prompts=4, world_size=1)
    with pytest.raises(ConfigError, match="distinct prompts"):
        check_batch_fits(policy_settings(per_device_train_batch_size=24), n_prompts=4, world_size=1)
    # a group may straddle two processes (6 + 6 completions, groups of 4), but the batch must stay fillable
    check_batch_fits(policy_settings(per_device_train_batch_size=6), n_prompts=4, world_size=2)
    with pytest.raises(ConfigError, match="2 process"):
        check_batch_fits(policy_settings(per_device_train_batch_size=12), n_prompts=4, world_size=2)


def test_arms_from_config_and_external(tmp_path):
    arms = parse_arms(PolicySettings.from_config(load_config()["policy"]))
    assert {n: (a.weights.w_rm, a.weights.w_grm, a.weights.lam) for n, a in arms.items()} == {
        "committee": (0.5, 0.5, 0.5), "rm_only": (1.0, 0.0, 0.5), "committee_rm_heavy": (0.7, 0.3, 0.5),
        "bradley_terry": (1.0, 0.0, 0.5),  # the v1 recipe: the RM-only committee on the Bradley-Terry model
        "grm_only": (0.0, 1.0, 0.5), "beta0": (0.5, 0.5, 0.5)}  # the cards' two ablations
    assert arms["bradley_terry"].reward == "bradley_terry" and arms["bradley_terry"].seeds == (0, 1)
    assert arms["beta0"].beta == 0.0 and arms["committee"].beta is None
    ext = parse_arms(PolicySettings.from_config({"arms": {"bt_reward": {"external": "/ckpt/bt"}}}))["bt_reward"]
    assert not ext.trained
    health = record_external(ext, tmp_path / "bt_reward")
    assert health["verdict"] == "not_trained_here" and health["checkpoint"] == "/ckpt/bt"
    assert resolve_model_dir(tmp_path / "bt_reward" / "model") == "/ckpt/bt"
    assert len(pd.read_csv(tmp_path / "bt_reward" / "training_log.csv")) == 0
    with pytest.raises(PipelineInputError):
        train_policy(arm=ext, policy=policy_settings(), model_dir="x", vignettes=None, out_dir=tmp_path, scorers=fakes, seed=0)
    with pytest.raises(ConfigError):
        parse_arms(PolicySettings.from_config({"arms": {"bad": {"external": "/x", "w_rm": 1.0}}}))


def test_an_arm_cannot_take_the_warm_starts_folder():
    """results/policy/warm_start/ is the demo's warm start; an arm of that name would write inside it."""
    with pytest.raises(ConfigError, match="warm start") as err:
        PolicySettings.from_config({"arms": {"warm_start": {"w_rm": 1.0}}})
    assert "policy.arms.warm_start" in str(err.value)


def test_accelerate_zero2_config_parses():
    from accelerate.commands.config.config_args import load_config_from_file

    path = Path(__file__).resolve().parents[2] / "workflow" / "accelerate" / "zero2_4gpu.yaml"
    c = load_config_from_file(str(path))
    assert (str(c.distributed_type), c.num_processes, c.mixed_precision, c.deepspeed_config["zero_stage"]) == (
        "DistributedType.DEEPSPEED", 4, "bf16", 2)


def test_cli_refuses_missing_inputs_with_one_line(tmp_path, capsys):
    from reappraisal.cli import main

    params = json.dumps({"policy": load_config()["policy"], "seed": 0})
    assert main(["train-policy", "--arm", "committee", "--out-dir", str(tmp_path), "--params", params]) == 2
    assert "--model-dir is required" in capsys.readouterr().err
    assert main(["train-policy", "--arm", "nope", "--out-dir", str(tmp_path), "--params", params]) == 2
    assert "unknown arm instance 'nope'" in capsys.readouterr().err


def test_a_training_killed_after_a_later_epochs_checkpoint_resumes_into_the_uninterrupted_policy(
        tmp_path, warm_policy, vignettes):
    """GRPO's prompt order must not restart on resume: killed at a checkpoint inside a later epoch, the resumed
    training ends with the uninterrupted one's weights (bytes), training log and rewards log."""
    import hashlib

    from transformers import TrainerCallback

    n_train = int((vignettes["pool"] == "train").sum())
    per_step = POLICY["per_device_train_batch_size"] // POLICY["num_generations"]
    steps_per_epoch = n_train // per_step
    kill_at = 2 * ((steps_per_epoch + 2) // 2)  # the first checkpoint (every 2 steps) after epoch 0 ended
    policy = policy_settings(max_steps=kill_at + 2, save_steps=2)

    def trained(out, callbacks=()):
        return train_policy(arm=COMMITTEE, policy=policy, model_dir=warm_policy, vignettes=vignettes, out_dir=out,
                            scorers=fakes, seed=0, callbacks=list(callbacks), rewards_log=rewards(out))

    def rewards(out):
        return out.parent / f"{out.name}.rewards.jsonl"

    class KillAfterTheCheckpoint(TrainerCallback):  # one step past it: that step's rewards are logged, then lost
        def on_step_end(self, args, state, control, **kw):
            if state.global_step == kill_at + 1:
                raise Interrupted(state.global_step)

    whole = tmp_path / "whole"
    trained(whole)
    resumed = tmp_path / "resumed"
    with pytest.raises(Interrupted):
        trained(resumed, [KillAfterTheCheckpoint()])
    health = trained(resumed)
    assert health["resumed_from"].endswith(f"checkpoint-{kill_at}")
    digest = lambda p: hashlib.sha256(p.read_bytes()).hexdigest()
    pd.testing.assert_frame_equal(pd.read_csv(whole / "training_log.csv"), pd.read_csv(resumed / "training_log.csv"))
    assert digest(whole / "model/model.safetensors") == digest(resumed / "model/model.safetensors")
    # the rewards log holds each step once: the killed segment's steps after the checkpoint were redone
    assert rewards(resumed).read_text() == rewards(whole).read_text()
