"""The cluster's lock (`requirements-gpu.lock`) agrees with the CPU lock and installs what every stage imports.

The lock is resolved by `scripts/lock_gpu.py` (uv, for Linux x86_64, with the network); these checks read the
committed files only: each package both locks pin has one version in both unless the GPU lock's header
declares the difference (`# differs: name==version ...`), the GPU-only engines are there (CUDA torch, vLLM in
TRL 1.16's range, DeepSpeed), every package a stage imports is pinned, and `envs/train.yaml` (the GPU stages'
conda environment) takes its pins and its Python from it.
"""

from __future__ import annotations

import re
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
import yaml
from packaging.version import Version

from reappraisal.import_closure import closure, external_imports
from tests.test_stage_envs import distribution, env_pins, pins, rule_envs_and_entries
from tests.workflow_utils import REPO

GPU_LOCK = REPO / "requirements-gpu.lock"


def declared_differences(text: str) -> set[str]:
    """Packages the header lists as deliberately different (``# differs: name==version ...``)."""
    return {re.sub(r"[-_.]+", "-", m).lower() for m in re.findall(r"^# differs: ([A-Za-z0-9_.-]+)==", text, flags=re.M)}


def header_value(text: str, key: str) -> str:
    found = re.search(rf"^# {key}: (\S+)", text, flags=re.M)
    assert found, f"requirements-gpu.lock's header has no '# {key}:' line"
    return found.group(1)


def disagreements(cpu_text: str, gpu_text: str) -> list[str]:
    """One line per package both locks pin at different versions without the GPU lock declaring it."""
    cpu, gpu, declared = pins(cpu_text.splitlines()), pins(gpu_text.splitlines()), declared_differences(gpu_text)
    return [f"{name}: requirements.lock {cpu[name]}, requirements-gpu.lock {gpu[name]}"
            for name in sorted(cpu.keys() & gpu.keys()) if cpu[name] != gpu[name] and name not in declared]


def missing_imports(stages: dict[str, dict[str, set[str]]], lock: dict[str, str], known) -> list[str]:
    return [f"{rule}: imports {module} ({', '.join(sorted(importers))}) but requirements-gpu.lock does not pin "
            f"{distribution(module, known)}"
            for rule, imports in sorted(stages.items()) for module, importers in sorted(imports.items())
            if distribution(module, known) not in lock]


@pytest.fixture(scope="module")
def texts() -> tuple[str, str]:
    return (REPO / "requirements.lock").read_text(), GPU_LOCK.read_text()


@pytest.fixture(scope="module")
def stage_imports() -> dict[str, dict[str, set[str]]]:
    src = REPO / "src"
    return {rule: external_imports(src, closure(src, entries)) for rule, (_, entries) in rule_envs_and_entries().items()}


def test_pins_shared_with_the_cpu_lock_agree_or_are_declared(texts):
    assert disagreements(*texts) == []


def test_a_planted_difference_is_refused_unless_declared(texts):
    cpu, gpu = texts
    planted = re.sub(r"^numpy==\S+", "numpy==2.3.5", gpu, flags=re.M)
    assert disagreements(cpu, planted) == [
        f"numpy: requirements.lock {pins(cpu.splitlines())['numpy']}, requirements-gpu.lock 2.3.5"]
    declared = planted.replace("# differs: none", "# differs: numpy==2.3.5 (requirements.lock: 2.4.6): a reason")
    assert disagreements(cpu, declared) == []


def test_the_lock_is_the_clusters(texts):
    """CUDA torch (no +cpu label: PyPI's Linux x86_64 build), vLLM in TRL's range, DeepSpeed, the transformers and
    TRL of the CPU lock, for the platform and Python its header names."""
    cpu, gpu = (pins(t.splitlines()) for t in texts)
    assert gpu["torch"] == cpu["torch"].split("+")[0] == "2.13.0"
    assert any(name.startswith("nvidia-") for name in gpu), "no CUDA libraries: not the CUDA build of torch"
    assert Version("0.22") <= Version(gpu["vllm"]) <= Version("0.31")  # trl/import_utils.py, is_vllm_available
    assert "deepspeed" in gpu and gpu["transformers"] == cpu["transformers"] and gpu["trl"] == cpu["trl"]
    assert header_value(texts[1], "platform").startswith("x86_64-manylinux")
    assert header_value(texts[1], "vllm") == gpu["vllm"]
    assert not any(line.strip() and not line.startswith("#") and "==" not in line for line in texts[1].splitlines())


def test_every_package_a_stage_imports_is_in_the_lock(texts, stage_imports):
    lock = pins(texts[1].splitlines())
    assert missing_imports(stage_imports, lock, packages_distributions()) == []
    assert "vllm" in stage_imports["train_policy"] and "tenacity" in stage_imports["fetch_data"]


def test_a_planted_import_missing_from_the_lock_is_named(texts, stage_imports):
    lock = {k: v for k, v in pins(texts[1].splitlines()).items() if k != "tenacity"}
    assert missing_imports(stage_imports, lock, packages_distributions()) == [
        f"{rule}: imports tenacity (reappraisal.http_retry) but requirements-gpu.lock does not pin tenacity"
        for rule in sorted(stage_imports) if "tenacity" in stage_imports[rule]]


def test_the_gpu_stages_environment_takes_the_gpu_locks_pins_and_python(texts):
    env = REPO / "envs/train.yaml"
    lock = pins(texts[1].splitlines())
    listed = env_pins(env)
    assert {d: v for d, v in listed.items() if lock.get(d) != v} == {}
    assert "vllm" in listed
    python = [d for d in yaml.safe_load(env.read_text())["dependencies"] if isinstance(d, str) and d.startswith("python=")]
    assert python == [f"python={header_value(texts[1], 'python')}"]


def test_the_lock_script_resolves_for_the_locks_platform():
    """The header says what the script does (its constants), so a regenerated lock cannot drift from it."""
    script = (REPO / "scripts/lock_gpu.py").read_text()
    gpu = GPU_LOCK.read_text()
    for key, constant in (("python", "PYTHON"), ("platform", "PLATFORM")):
        assert f'{constant} = "{header_value(gpu, key)}"' in script
    assert Path(REPO / "scripts/lock_gpu.py").is_file() and "uv pip compile" in gpu
