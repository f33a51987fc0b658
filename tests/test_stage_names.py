"""One name per stage: package, rule file, config section and results folder agree.

A stage's name is the name of its subpackage of ``reappraisal``, of its rule
file ``workflow/rules/<stage>.smk``, of its config section and of its
results folder ``results/<stage>/`` (where every output of its rules lies).
The exceptions are few and listed here: the data stage writes its tables to
``data/`` (with its checks in ``results/data/``), the data stage's rules each
have a section of their own, the report has no settings, the model cards
(a report output) are written beside the models they describe, and what every
trainer shares is the section of the core package that holds it (``training``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from reappraisal.workflow_dvc import snakemake_jobs

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "reappraisal"

#: The stages, in the order they run.
STAGES = ["data", "base_models", "reward", "grm", "policy", "evaluation", "confirm", "summary", "calibration", "report"]
#: Config sections of the data stage's rules besides ``data`` itself.
DATA_RULE_SECTIONS = {"normalize", "split", "leakage"}
#: Top-level config keys that are not a stage's section.
GLOBAL_KEYS = {"preset", "seed", "presets"}
#: Subpackages of the core layer (tests/test_import_layers.py), not stages.
CORE_PACKAGES = {"stats", "provenance", "training", "compat"}
#: Config sections of core packages: what every trainer shares (``training.report_to``).
CORE_SECTIONS = {"training"}


def _stage_folders(stage: str) -> tuple[str, ...]:
    if stage == "data":
        return ("data/", "results/data/")
    if stage == "report":
        return ("results/report.html",)
    return (f"results/{stage}/",)


def _model_card(path: str) -> bool:
    """The model cards: README.md beside the ensemble, the GRM and each arm's policy."""
    parts = Path(path).parts
    return parts[-1] == "README.md" and parts[:2] in {("results", "reward"), ("results", "grm"), ("results", "policy")}


def _rule_file_rules() -> dict[str, set[str]]:
    out = {}
    for smk in sorted((REPO / "workflow" / "rules").glob("*.smk")):
        if smk.stem != "common":
            out[smk.stem] = {line.split()[1].rstrip(":") for line in smk.read_text().splitlines()
                             if line.startswith("rule ")}
    return out


def test_packages_and_rule_files_are_the_stages():
    packages = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()} - CORE_PACKAGES
    assert packages == set(STAGES)
    assert set(_rule_file_rules()) == set(STAGES)


def test_config_sections_are_named_after_stages():
    schema = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())
    sections = set(schema["properties"]) - GLOBAL_KEYS - DATA_RULE_SECTIONS - CORE_SECTIONS
    assert sections == set(STAGES) - {"report"} and CORE_SECTIONS <= set(schema["properties"]) & CORE_PACKAGES
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    used = set(config) | {k for preset in config["presets"].values() for k in preset}
    assert used - GLOBAL_KEYS - DATA_RULE_SECTIONS - CORE_SECTIONS <= sections


@pytest.fixture(scope="module")
def jobs():
    """Every job of the report's DAG and of the targets built only on request (workflow/dvc_stages.yaml)."""
    found = snakemake_jobs(REPO)
    mapping = yaml.safe_load((REPO / "workflow" / "dvc_stages.yaml").read_text())
    for spec in (mapping.get("on_request") or {}).values():
        found.update({r: j for r, j in snakemake_jobs(REPO, spec["target"]).items() if r in spec["rules"]})
    return found


def test_every_output_lies_in_its_stage_folder(jobs):
    misplaced = []
    for stage, rules in _rule_file_rules().items():
        for rule in rules & set(jobs):
            for out in jobs[rule]["outputs"]:
                if not (out.startswith(_stage_folders(stage)) or stage == "report" and _model_card(out)):
                    misplaced.append(f"{stage}.smk rule {rule}: {out}")
    assert not misplaced, "outputs outside their stage's folder:\n" + "\n".join(sorted(misplaced))
    assert all(any(r in jobs for r in rules) for rules in _rule_file_rules().values())


def test_judge_names_the_evaluation_judge_only():
    """"judge" in a module, rule or results path belongs to the evaluation stage."""
    modules = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*judge*.py")]
    assert modules and all(m.startswith("evaluation/") for m in modules), modules
    rules = {r for stage, rs in _rule_file_rules().items() for r in rs if "judge" in r and stage != "evaluation"}
    assert not rules


def test_command_modules_end_in_io_and_pair_with_their_concept():
    """A command runs ``<stage>/<concept>_io.py``; ``<concept>.py`` beside it, if any, is the pure part.

    Exactly the modules that define ``cli_main`` end in ``_io``, and each is
    registered as a command, so a command's module is found by its name.
    """
    import ast

    from reappraisal.cli import COMMANDS

    registered = {target.split(":")[0] for target in COMMANDS.values()}
    defines_cli = set()
    io_modules = set()
    for path in PACKAGE.rglob("*.py"):
        module = "reappraisal." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
        tree = ast.parse(path.read_text())
        if any(isinstance(node, ast.FunctionDef) and node.name == "cli_main" for node in tree.body):
            defines_cli.add(module)
        if path.stem.endswith("_io"):
            io_modules.add(module)
    assert registered == defines_cli == io_modules


def _command_imports(package: Path = PACKAGE) -> list[str]:
    """``command -> imported command`` for every import (top level or inside a function) between two ``*_io``
    modules of the package, relative imports resolved."""
    from tests.test_import_layers import imports_of

    found = []
    for path in sorted(package.rglob("*_io.py")):
        for line, target in imports_of(path, package):
            if target.startswith("reappraisal.") and target.rsplit(".", 1)[-1].endswith("_io"):
                found.append(f"{path.relative_to(package)}:{line} imports {target}")
    return found


def test_commands_are_leaves():
    """No command imports another: what two commands share lives in a module that is not a command (the
    shared answer generation, the pre-registration's files, the base-model manifest ...), so a command's
    module can change without touching another stage's."""
    assert _command_imports() == []


def test_the_leaf_rule_sees_relative_and_late_imports(tmp_path):
    """The rule's walk finds a relative import inside a function, the way commands used to reach each other."""
    package = tmp_path / "reappraisal"
    (package / "evaluation").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "evaluation" / "__init__.py").write_text("")
    (package / "evaluation" / "truth_io.py").write_text("def cli_main():\n    from .generation_io import run\n")
    assert _command_imports(package) == ["evaluation/truth_io.py:2 imports reappraisal.evaluation.generation_io"]
