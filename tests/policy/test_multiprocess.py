"""The committee under two processes equals the committee in one process.

``accelerate launch --multi_gpu --num_processes 2`` with ``ACCELERATE_USE_CPU=true``
starts two CPU processes talking over gloo (``accelerate launch --cpu`` alone
would start only one). In every check a prompt group straddles the processes:
the adapter alone, one GRPOTrainer step with fake judges, and the real
``train-policy`` command with the real ensemble and GRM.
"""

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from .fakes import FakeGRM, FakeRM

from reappraisal.policy.committee import CommitteeWeights, FormatGate, committee_rewards
from reappraisal.policy.reward_adapter import CommitteeReward

SCRIPT = Path(__file__).with_name("mp_committee.py")
ACCELERATE = Path(sys.executable).with_name("accelerate")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _accelerate(*target: str, timeout: int = 300, check: bool = True) -> subprocess.CompletedProcess:
    """Run ``target`` (a script and its arguments, or ``-m module ...``) in two CPU processes."""
    env = dict(os.environ, ACCELERATE_USE_CPU="true", OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
    cmd = [str(ACCELERATE), "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
           "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", str(_free_port()), *target]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if check:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def _launch(*args: str) -> None:
    _accelerate(str(SCRIPT), *args)


def test_adapter_two_processes_equal_one(tmp_path):
    sys.path.insert(0, str(SCRIPT.parent))
    from mp_committee import G, adapter_batch

    out = tmp_path / "mp.json"
    _launch("--mode", "adapter", "--out", str(out))
    got = json.loads(out.read_text())
    assert got["num_processes"] == 2
    vids, scens, comps = adapter_batch()
    one = CommitteeReward(weights=CommitteeWeights(0.5, 0.5, 0.5), gate=FormatGate(2, -3.0), num_generations=G,
                          rm_scorer=FakeRM(), grm_scorer=FakeGRM())
    ref = one(prompts=[None] * len(comps), completions=comps, vignette_id=vids, scenario=scens)
    assert got["rewards"] == pytest.approx(ref, abs=1e-12)
    # the straddling group (completions 4..7) is normalized as one group: its passing rewards are not all zero
    assert any(abs(r) > 1e-6 for r in got["rewards"][4:8] if r != -3.0)


def test_grpo_trainer_two_processes_equal_one(tmp_path, warm_policy):
    out = tmp_path / "mp_trainer.json"
    _launch("--mode", "trainer", "--out", str(out), "--model", str(warm_policy), "--work", str(tmp_path / "work"))
    got = json.loads(out.read_text())
    assert got["num_processes"] == 2
    (call,) = got["calls"]
    assert call["n_local"] == 6  # 6 per process, groups of 4: the second group straddles the processes
    vids, answers, rewards = (list(c) for c in zip(*call["records"]))
    assert len(rewards) == 12 and len(set(vids[4:8])) == 1
    # recompute in one process: gate, judges, committee over the gathered batch
    gate = FormatGate(2, -3.0)
    passed = [gate.check(a).passed for a in answers]
    scen = {v: t for v, t in zip(*_scenarios())}
    rm = np.full(12, np.nan)
    grm = np.full(12, np.nan)
    idx = [i for i in range(12) if passed[i]]
    rm[idx] = FakeRM().score([scen[vids[i]] for i in idx], [answers[i] for i in idx])
    grm[idx] = FakeGRM().score([vids[i] for i in idx], [scen[vids[i]] for i in idx], [answers[i] for i in idx])
    ref = committee_rewards(vids, passed, rm, grm, group_size=4, weights=CommitteeWeights(0.5, 0.5, 0.5), penalty=-3.0)
    assert rewards == pytest.approx(ref.rewards.tolist(), abs=1e-9)


def _scenarios():
    from .fakes import make_vignettes

    v = make_vignettes()
    return list(v["vignette_id"]), list(v["text"])


def _train_policy_command(tmp_path, warm_policy, judges, vignettes, targets, **policy) -> tuple[list[str], Path]:
    """The real ``train-policy`` command line for the committee arm, demo config with a tiny schedule."""
    from reappraisal.config import load_config

    paths = {}
    for name, table in (("vignettes", vignettes), ("targets", targets)):
        paths[name] = tmp_path / f"{name}.parquet"
        table.to_parquet(paths[name], index=False)
    settings = dict(load_config()["policy"], learning_rate=1e-4, num_generations=4, per_device_train_batch_size=6, max_steps=2, snapshot_steps=[],
                    save_steps=1, max_completion_length=40, health={"window": 2})
    settings.update(policy)
    params = {"policy": settings, "reward": judges["reward"], "grm": judges["grm"],
              "data": dict(load_config()["data"], dimensions=["effectiveness"], primary_dimension="effectiveness"),
              "seed": 0, "preset": "demo"}
    out = tmp_path / "committee"
    return ["-m", "reappraisal", "train-policy", "--arm", "committee", "--model-dir", str(warm_policy),
            "--vignettes", str(paths["vignettes"]), "--targets", str(paths["targets"]),
            "--rm-dirs", *map(str, judges["rm_dirs"]), "--grm-dir", str(judges["grm_dir"]),
            "--out-dir", str(out), "--params", json.dumps(params)], out


@pytest.mark.slow
def test_train_policy_command_two_processes_matches_one_process_committee(tmp_path, warm_policy, real_judges,
                                                                          vignettes, targets):
    from reappraisal.grm.scorer import GRMScorer, median_references
    from reappraisal.reward.ensemble import EnsembleScorer

    cmd, out = _train_policy_command(tmp_path, warm_policy, real_judges, vignettes, targets)
    log = tmp_path / "rewards.jsonl"
    _accelerate(*cmd, "--rewards-log", str(log))
    health = json.loads((out / "health.json").read_text())
    assert health["num_processes"] == 2 and health["global_step"] == 2 and (out / "model" / "config.json").is_file()
    assert not (out / "checkpoints").exists()
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(calls) == 2  # one global batch per step: 2 processes x 6 completions, groups of 4
    rm_cfg, grm_cfg = real_judges["reward"], real_judges["grm"]
    ensemble = EnsembleScorer.from_dirs(real_judges["rm_dirs"], penalty="std", lam=0.5,
                                        batch_size=rm_cfg["ensemble"]["batch_size"], max_length=rm_cfg["max_length"])
    grm = GRMScorer.from_dir(real_judges["grm_dir"], references=median_references(targets, vignettes, "effectiveness"),
                             max_new_tokens=grm_cfg["max_new_tokens"], batch_size=grm_cfg["batch_size"])
    scen = dict(zip(vignettes["vignette_id"], vignettes["text"]))
    n_passed = 0
    for call in calls:
        vids, answers, passed = call["vignette_id"], call["answer"], call["passed"]
        assert len(vids) == 12 and len(set(vids[4:8])) == 1  # the middle group straddles the processes
        idx = [i for i in range(12) if passed[i]]
        n_passed += len(idx)
        rm = np.full(12, np.nan)
        judged = np.full(12, np.nan)
        if idx:  # one process, one batched call per judge, on the gathered answers
            rm[idx] = ensemble.score([scen[vids[i]] for i in idx], [answers[i] for i in idx])
            judged[idx] = grm.score([vids[i] for i in idx], [scen[vids[i]] for i in idx], [answers[i] for i in idx])
        assert np.allclose([np.nan if v is None else v for v in call["rm"]], rm, atol=1e-5, equal_nan=True)
        assert np.allclose([np.nan if v is None else v for v in call["grm"]], judged, atol=1e-9, equal_nan=True)
        ref = committee_rewards(vids, passed, rm, judged, group_size=4, weights=CommitteeWeights(0.5, 0.5, 0.5),
                                penalty=-3.0)
        assert call["reward"] == pytest.approx(ref.rewards.tolist(), abs=1e-4)
    assert n_passed >= 8  # most answers are scored, so the comparison is not vacuous


@pytest.mark.slow
def test_train_policy_command_refuses_a_batch_two_processes_cannot_fill(tmp_path, warm_policy, real_judges,
                                                                       vignettes, targets):
    # 12 completions per process x 2 processes = 6 prompt groups of 4, from 4 train-pool vignettes:
    # one process alone would fit (3 groups), so this fails only if both processes are counted
    cmd, out = _train_policy_command(tmp_path, warm_policy, real_judges, vignettes, targets,
                                     per_device_train_batch_size=12)
    proc = _accelerate(*cmd, check=False)
    assert proc.returncode != 0
    err = proc.stdout + proc.stderr
    assert "need 6 distinct prompts per batch but the train pool has 4 vignettes" in err, err[-3000:]
    assert not (out / "health.json").exists() and not (out / "model").exists()
