"""Each stage's conda environment (`envs/*.yaml`) installs what the stage's code imports, at the lock's pins.

With `--software-deployment-method conda` every rule runs in its own
environment: a package its code imports and the environment lacks stops the
job on the compute node. What a rule imports is read from the source (the
static import closure of its shell command's entry modules,
`reappraisal.import_closure`), not from a run.
"""

from __future__ import annotations

import re
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
import yaml

from reappraisal.import_closure import closure, external_imports
from reappraisal.workflow_dvc import cli_commands, entry_modules
from tests.workflow_utils import REPO

#: Engines a setting switches on, installed on the cluster only (envs/train.yaml pins them from requirements-gpu.lock).
ADDED_ON_THE_CLUSTER = {"vllm"}


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(lines: list[str]) -> dict[str, str]:
    """``name==version`` lines as {canonical name: version without a local label (``+cpu``)}."""
    out = {}
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            out[_canonical(name)] = version.split("+", 1)[0].strip()
    return out


def env_pins(path: Path) -> dict[str, str]:
    deps = yaml.safe_load(path.read_text())["dependencies"]
    return pins([d for entry in deps if isinstance(entry, dict) for d in entry.get("pip", [])])


def rule_envs_and_entries(repo: Path = REPO) -> dict[str, tuple[str, set[str]]]:
    """Every rule's conda environment (the file name) and the package modules its shell command runs."""
    commands = cli_commands(repo)
    rules = {}
    for path in sorted((repo / "workflow/rules").glob("*.smk")):
        for block in re.split(r"^rule ", path.read_text(), flags=re.M)[1:]:
            name, body = block.split(":", 1)
            env = re.search(r"^\s+conda:\s*\n\s+\"([^\"]+)\"", body, flags=re.M)
            shell = body.split("\n    shell:", 1)[1] if "\n    shell:" in body else ""
            rules[name.strip()] = (Path(env.group(1)).name if env else None, entry_modules(shell, commands))
    return rules


def distribution(module: str, known: dict[str, list[str]]) -> str:
    """The distribution that installs top-level ``module`` (``yaml`` -> ``pyyaml``)."""
    return _canonical(known.get(module, [module])[0])


def check_envs(stages: dict[str, tuple[str | None, dict[str, set[str]]]], envs: dict[str, dict[str, str]],
               lock: dict[str, str], known: dict[str, list[str]]) -> list[str]:
    """One line per package a stage imports that its environment lacks, per pin the lock disagrees with,
    and per stage without an environment."""
    problems = []
    for rule, (env, imports) in sorted(stages.items()):
        if env is None:
            problems.append(f"{rule}: no conda environment")
            continue
        for module, importers in sorted(imports.items()):
            dist = distribution(module, known)
            if module not in ADDED_ON_THE_CLUSTER and dist not in envs[env]:
                problems.append(f"{rule}: imports {module} ({', '.join(sorted(importers))}) but envs/{env} "
                                f"does not list {dist}")
    for env, listed in sorted(envs.items()):
        for dist, version in sorted(listed.items()):
            if lock.get(dist) != version:
                problems.append(f"envs/{env}: {dist}=={version} but requirements.lock pins {lock.get(dist)}")
    return problems


#: Rules whose command starts another in a subprocess of its own, in the same environment: the calibration's
#: world build starts `reappraisal run`, which starts Snakemake (`python -m snakemake`).
STARTS_IN_A_SUBPROCESS = {"build_world": {"modules": ["reappraisal.run_io"], "runs": {"snakemake"}}}


def test_the_world_build_starts_the_run_command_and_the_run_command_snakemake():
    """What STARTS_IN_A_SUBPROCESS states, read from the code that starts them."""
    from reappraisal.calibration.world_io import build_command
    from reappraisal.cli import COMMANDS

    command = build_command(Path("world"), cores=1, profile=None)
    assert command[1:4] == ["-m", "reappraisal", "run"]
    assert COMMANDS["run"].split(":")[0] in STARTS_IN_A_SUBPROCESS["build_world"]["modules"]
    assert '"-m", "snakemake"' in (REPO / "src/reappraisal/run_io.py").read_text()


@pytest.fixture(scope="module")
def inputs():
    src = REPO / "src"
    stages = {}
    for rule, (env, entries) in rule_envs_and_entries().items():
        assert entries, f"rule {rule}: no `python -m reappraisal ...` in its shell command"
        started = STARTS_IN_A_SUBPROCESS.get(rule, {"modules": [], "runs": set()})
        imports = external_imports(src, closure(src, entries | set(started["modules"])))
        for module in started["runs"]:
            imports.setdefault(module, set()).add(f"python -m {module}")
        stages[rule] = (env, imports)
    envs = {p.name: env_pins(p) for p in sorted((REPO / "envs").glob("*.yaml"))}
    # the CPU lock's pins, and the GPU lock's for the cluster's engines only it pins (vllm)
    lock = {**pins((REPO / "requirements-gpu.lock").read_text().splitlines()),
            **pins((REPO / "requirements.lock").read_text().splitlines())}
    return stages, envs, lock, packages_distributions()


def test_every_stage_environment_installs_what_the_stage_imports(inputs):
    assert check_envs(*inputs) == []


def test_the_known_imports_are_seen(inputs):
    """The stages the environments once missed: the download and judging retry with tenacity, the summary
    reads DVC's state."""
    stages = inputs[0]
    assert "tenacity" in stages["fetch_data"][1] and "tenacity" in stages["judge"][1]
    assert "dvc" in stages["summarize"][1]
    assert "trl" in stages["train_policy"][1] and "vllm" in stages["train_policy"][1]


def test_the_cluster_engines_are_named_in_the_environment_that_needs_them():
    text = (REPO / "envs/train.yaml").read_text()
    assert all(engine in text for engine in ADDED_ON_THE_CLUSTER)


def test_check_refuses_an_environment_missing_an_import(inputs):
    stages, envs, lock, known = inputs
    envs = {**envs, "data.yaml": {k: v for k, v in envs["data.yaml"].items() if k != "tenacity"}}
    problems = check_envs(stages, envs, lock, known)
    assert problems == ["fetch_data: imports tenacity (reappraisal.http_retry) but envs/data.yaml does not list "
                        "tenacity"]


def test_check_refuses_a_pin_the_lock_disagrees_with(inputs):
    stages, envs, lock, known = inputs
    envs = {**envs, "report.yaml": {**envs["report.yaml"], "scipy": "0.1"}}
    assert check_envs(stages, envs, lock, known) == [
        f"envs/report.yaml: scipy==0.1 but requirements.lock pins {lock['scipy']}"]


def test_check_sees_a_new_import_in_a_stage(inputs, tmp_path):
    """A planted package: a stage module that starts importing a library its environment lacks."""
    stages, envs, lock, known = inputs
    pkg = tmp_path / "reappraisal"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "stage.py").write_text("import json\nimport yaml\n\ndef main():\n    import newlib.sub\n")
    planted = {"fetch_data": ("data.yaml", external_imports(tmp_path, closure(tmp_path, ["reappraisal.stage"])))}
    assert check_envs(planted, {"data.yaml": envs["data.yaml"]}, lock, known) == [
        "fetch_data: imports newlib (reappraisal.stage) but envs/data.yaml does not list newlib"]
