"""The static import closure behind each DVC stage's code deps, on a package built here."""

from __future__ import annotations

from pathlib import Path

import pytest

from reappraisal.import_closure import closure, closure_files, external_imports
from reappraisal.workflow_dvc import cli_commands, entry_modules
from tests.workflow_utils import REPO


def write(root: Path, rel: str, text: str = "") -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def src(tmp_path: Path) -> Path:
    s = tmp_path / "src"
    write(s, "reappraisal/__init__.py")
    write(s, "reappraisal/__main__.py", "from .cli import main\n")
    write(s, "reappraisal/cli.py", "import importlib\nfrom .errors import E\nCOMMANDS = {'go': 'reappraisal.a.stage:cli_main'}\n")
    write(s, "reappraisal/errors.py", "class E(Exception): ...\n")
    write(s, "reappraisal/a/__init__.py")
    write(s, "reappraisal/a/stage.py", (
        "import json\nimport numpy as np\nfrom ..errors import E\nfrom . import helper\n"
        "def cli_main(argv):\n    from reappraisal.b.lazy import f  # lazy: only when it runs\n    return f()\n"
    ))
    write(s, "reappraisal/a/helper.py", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from reappraisal.c import typing_only\n")
    write(s, "reappraisal/b/__init__.py", "")
    write(s, "reappraisal/b/lazy.py", "from ..d.deep import g\ndef f():\n    return g()\n")
    write(s, "reappraisal/c/__init__.py", "")
    write(s, "reappraisal/c/typing_only.py", "")
    write(s, "reappraisal/d/__init__.py", "")
    write(s, "reappraisal/d/deep.py", "def g():\n    return 1\n")
    write(s, "reappraisal/d/templates/page.html.j2", "{{ x }}")
    write(s, "reappraisal/d/sub/__init__.py", "")
    write(s, "reappraisal/d/sub/data.yaml", "a: 1")
    write(s, "reappraisal/unrelated.py", "import reappraisal.a.stage\n")
    return s


def test_closure_follows_lazy_relative_and_submodule_imports(src):
    mods = closure(src, ["reappraisal.__main__", "reappraisal.a.stage"])
    assert mods == {
        "reappraisal", "reappraisal.__main__", "reappraisal.cli", "reappraisal.errors",
        "reappraisal.a", "reappraisal.a.stage", "reappraisal.a.helper",
        "reappraisal.b", "reappraisal.b.lazy", "reappraisal.c", "reappraisal.c.typing_only",
        "reappraisal.d", "reappraisal.d.deep",
    }
    # Nothing that merely imports the stage, and no other package's modules.
    assert "reappraisal.unrelated" not in mods and not any(m.startswith(("json", "numpy")) for m in mods)


def test_closure_files_carry_package_data_of_packages_in_the_closure(src):
    files = {str(p.relative_to(src)) for p in closure_files(src, ["reappraisal.a.stage"])}
    assert "reappraisal/d/templates/page.html.j2" in files  # data of package d, which is imported
    assert "reappraisal/d/sub/data.yaml" not in files  # d.sub is never imported
    assert "reappraisal/d/deep.py" in files and "reappraisal/d/__init__.py" in files


def test_unknown_module_is_an_error(src):
    with pytest.raises(FileNotFoundError, match="reappraisal.nope"):
        closure(src, ["reappraisal.nope"])


def test_shell_commands_name_their_entry_modules():
    commands = {"train-policy": "reappraisal.policy.train_io:cli_main"}
    launch = "python -m accelerate.commands.launch --config_file x.yaml --num_processes 4 -m reappraisal train-policy --arm a"
    assert entry_modules(launch, commands) == {"reappraisal.__main__", "reappraisal.policy.train_io"}
    assert entry_modules("python -m reappraisal.data.demo_generator --out d", commands) == {"reappraisal.data.demo_generator"}
    with pytest.raises(ValueError, match="unknown command 'nope'"):
        entry_modules("python -m reappraisal nope", commands)


def test_every_cli_command_resolves_to_a_module_of_this_checkout():
    commands = cli_commands(REPO)
    assert "report" in commands
    for command, target in commands.items():
        module = target.split(":")[0]
        assert closure(REPO / "src", [module]), command


def test_external_imports_are_the_required_ones_outside_the_package(src):
    write(src, "reappraisal/a/engine.py", (
        "import os.path\nimport numpy as np\nfrom yaml import safe_load\nfrom typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import pandas\n"
        "try:\n    import vllm\nexcept ImportError:\n    import fallback_engine\n"
        "def run():\n    from tenacity import Retrying  # lazy, still required when it runs\n"
    ))
    found = external_imports(src, closure(src, ["reappraisal.a.engine", "reappraisal.a.stage"]))
    assert found == {"numpy": {"reappraisal.a.engine", "reappraisal.a.stage"}, "yaml": {"reappraisal.a.engine"},
                     "tenacity": {"reappraisal.a.engine"}, "fallback_engine": {"reappraisal.a.engine"}}
