"""Pinned numerics: a trainer gives the same bytes on this CPU and on a (simulated) AVX2-only one.

The cheapest trainer (one reward seed on the toy data) runs as a job runs,
``python -m reappraisal train-reward-model``, three times in fresh processes:
as it is here (the package pins its kernels), under a simulated AVX2-only
machine (the capability variables plus ``MKL_ENABLE_INSTRUCTIONS=AVX2``, which
caps MKL as such a CPU would), and with the pin off on this machine's own
kernels, the control that shows the comparison can fail.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys

import pytest

from reappraisal import numerics

from .toy import DATA

AVX2_ONLY = {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2",
             "MKL_ENABLE_INSTRUCTIONS": "AVX2"}


def _clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without the pin (the test process imported the package), plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in numerics.PINNED and k != numerics.SWITCH}
    env.update(OMP_NUM_THREADS="1", **extra)
    return env


def _native_capability() -> str:
    out = subprocess.run([sys.executable, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"],
                         env=_clean_env(), capture_output=True, text=True, check=True)
    return out.stdout.strip()


def _train(tmp_path, name, toy_files, tiny_base, env) -> str:
    params = json.dumps({
        "data": DATA,
        "reward": {"seeds": [0], "max_length": 128, "learning_rate": 3e-3, "num_train_epochs": 3,
                   "per_device_train_batch_size": 8, "save_steps": 1000, "eval_steps": 1000,
                   "logging_steps": 1000, "cpu_threads": 1},
        "seed": 1, "preset": "demo",
    })
    out = tmp_path / name / "seed0"
    cmd = [sys.executable, "-m", "reappraisal", "train-reward-model", "--base-model", str(tiny_base),
           "--targets", str(toy_files["targets"]), "--vignettes", str(toy_files["vignettes"]),
           "--pairs", str(toy_files["pairs"]), "--seed", "0", "--out", str(out), "--params", params]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return hashlib.sha256((out / "model.safetensors").read_bytes()).hexdigest()


@pytest.mark.skipif(not numerics.applies(), reason="the pin applies to x86-64 only")
def test_a_trainer_writes_the_same_bytes_here_and_on_an_avx2_only_cpu(tmp_path, toy_files, tiny_base):
    here = _train(tmp_path, "here", toy_files, tiny_base, _clean_env())
    avx2_only = _train(tmp_path, "avx2_only", toy_files, tiny_base, _clean_env(**AVX2_ONLY))
    assert here == avx2_only
    if _native_capability() != numerics.PINNED_CAPABILITY:
        # The control: on this CPU's own (wider) kernels the same training rounds differently.
        native = _train(tmp_path, "native", toy_files, tiny_base, _clean_env(**{numerics.SWITCH: numerics.NATIVE}))
        assert native != here


def test_the_pin_sets_every_variable_and_overrides_the_shell():
    env = {"MKL_CBWR": "AUTO", "ATEN_CPU_CAPABILITY": "avx512"}
    assert numerics.pin_numerics(env) == numerics.PINNED
    assert {k: env[k] for k in numerics.PINNED} == numerics.PINNED


def test_the_pin_is_off_on_arm_and_when_asked_for_native_kernels():
    assert numerics.pinned_environment({}, machine="aarch64") == {}
    assert numerics.pinned_environment({numerics.SWITCH: "Native"}, machine="x86_64") == {}
    assert numerics.pinned_environment({}, machine="x86_64") == numerics.PINNED


@pytest.mark.skipif(not numerics.applies(), reason="the pin applies to x86-64 only")
def test_importing_the_package_pins_torch_and_a_late_import_is_refused():
    probe = ("import reappraisal, torch; torch.ones(3).softmax(0); "
             "print(torch.backends.cpu.get_cpu_capability())")
    out = subprocess.run([sys.executable, "-c", probe], env=_clean_env(), capture_output=True, text=True, check=True)
    assert out.stdout.strip() == numerics.PINNED_CAPABILITY
    if _native_capability() != numerics.PINNED_CAPABILITY:
        late = ("import torch; torch.ones(3).softmax(0); from reappraisal.training.settings import set_cpu_threads; "
                "set_cpu_threads(1)")
        refused = subprocess.run([sys.executable, "-c", late], env=_clean_env(), capture_output=True, text=True)
        assert refused.returncode != 0 and "torch ran before the reappraisal package was imported" in refused.stderr


def _cpu_vendor() -> str:
    with open("/proc/cpuinfo") as info:
        return next((line.split(":")[1].strip() for line in info if line.startswith("vendor_id")), "")


def _mkl_branch(**extra: str) -> str:
    """The CNR branch MKL reports for a GEMM in a fresh process that imported the package first."""
    probe = "import reappraisal, torch; torch.set_num_threads(1); torch.ones(16, 32) @ torch.ones(32, 8)"
    out = subprocess.run([sys.executable, "-c", probe], env=_clean_env(MKL_VERBOSE="1", **extra),
                         capture_output=True, text=True, check=True)
    branches = re.findall(r"\bCNR:(\w+)", out.stdout)
    assert branches, out.stdout[-2000:]
    return branches[-1]


@pytest.mark.skipif(not numerics.applies(), reason="the pin applies to x86-64 only")
def test_mkl_takes_the_avx2_branch_on_intel_only():
    """What the docs promise per vendor: MKL honours the pinned AVX2 branch on Intel CPUs and runs its AUTO
    branch on others, which is why an AMD machine computes other bytes than an Intel one."""
    assert _mkl_branch() == ("AVX2" if _cpu_vendor() == "GenuineIntel" else "AUTO")
