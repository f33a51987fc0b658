"""The committee under two processes equals the committee in one process.

``accelerate launch --multi_gpu --num_processes 2`` with ``ACCELERATE_USE_CPU=true``
starts two CPU processes talking over gloo (``accelerate launch --cpu`` alone
would start only one). In both checks a prompt group straddles the processes.
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


def _launch(*args: str, timeout: int = 240) -> None:
    env = dict(os.environ, ACCELERATE_USE_CPU="true", OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
    cmd = [str(ACCELERATE), "launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
           "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", str(_free_port()),
           str(SCRIPT), *args]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


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
