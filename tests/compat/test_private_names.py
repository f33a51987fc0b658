"""Only ``reappraisal.compat`` touches the locked libraries' private names (a scan of every other module)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.compat.private_names import package_private_uses

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "reappraisal"


def test_no_module_outside_compat_uses_a_private_name_of_a_locked_library():
    found = package_private_uses(PACKAGE)
    assert found == [], ("private names of TRL, transformers, accelerate, DVC or DVCLive outside "
                         "src/reappraisal/compat (move each into a seam there):\n" + "\n".join(found))


#: Each pattern the scan must catch: (module text, the line it must report, what it must say).
PLANTED = {
    "private_module": ("import trl._private\n", 1, "imports the private module trl._private"),
    "from_private_module": ("from transformers._hidden import thing\n", 1, "from the private module transformers._hidden"),
    "private_name": ("from trl.trainer.utils import _use_triton\n", 1, "imports the private name _use_triton"),
    "module_attribute": ("import trl.trainer.utils as tu\n\n\ndef f():\n    tu._use_triton = print\n", 5,
                         "private attribute _use_triton of tu"),
    "lazy_module_attribute": ("def f():\n    import trl.trainer.utils\n    return trl.trainer.utils._use_triton\n", 3,
                              "private attribute _use_triton of trl.trainer.utils"),
    "instance_attribute": ("from dvclive import Live\n\n\ndef f():\n    live = Live()\n    return live._dvc_repo\n", 6,
                           "private attribute _dvc_repo of live"),
    "reflection": ("import trl.trainer.utils as tu\n\nx = getattr(tu, '_use_triton')\n", 3,
                   "private attribute _use_triton of tu"),
    "overridden_method": ("from trl import GRPOTrainer\n\n\nclass T(GRPOTrainer):\n"
                          "    def _get_train_sampler(self):\n        return None\n", 5,
                          "defines the private method _get_train_sampler"),
    "super_call": ("from trl import GRPOTrainer\n\n\nclass T(GRPOTrainer):\n"
                   "    def train(self):\n        return super()._get_train_sampler()\n", 6,
                   "calls super()._get_train_sampler"),
    "self_attribute": ("from transformers.integrations import DVCLiveCallback\n\n\nclass C(DVCLiveCallback):\n"
                       "    def on_log(self):\n        return self._initialized\n", 6, "uses self._initialized"),
    "class_factory": ("def decoded(trainer_cls):\n    class D(trainer_cls):\n"
                      "        def _generate_single_turn(self, prompt_ids):\n"
                      "            return super()._generate_single_turn(prompt_ids)\n    return D\n", 3,
                      "defines the private method _generate_single_turn"),
    "subclass_of_subclass": ("from dvclive import Live\n\n\nclass A(Live):\n    pass\n\n\nclass B(A):\n"
                             "    def _init_dvc(self):\n        pass\n", 9, "defines the private method _init_dvc"),
    "foreign_attribute": ("def metrics(trainer):\n    return trainer._metrics['train']\n", 2,
                          "uses _metrics of trainer, a private name the package does not define"),
    "foreign_reflection": ("def kind(config):\n    return getattr(config, '_attn_implementation', None)\n", 2,
                           "uses _attn_implementation of config"),
}


def _package(tmp_path: Path, modules: dict[str, str]) -> Path:
    pkg = tmp_path / "reappraisal"
    for rel, text in {"__init__.py": "", **modules}.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    return pkg


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_the_scan_finds_each_planted_pattern(tmp_path, name):
    text, line, what = PLANTED[name]
    found = package_private_uses(_package(tmp_path, {f"{name}.py": text}))
    assert any(f.startswith(f"reappraisal/{name}.py:{line}: ") and what in f for f in found), found


def test_the_project_s_own_private_names_and_other_libraries_pass_and_compat_is_not_scanned(tmp_path):
    pkg = _package(tmp_path, {
        "own.py": ("import os\nimport atexit\nfrom urllib.parse import urlsplit\nimport threading\n\n\n"
                   "class Mine:\n    def __init__(self):\n        self._x = 1\n\n    def _y(self):\n"
                   "        return self._x\n\n\nclass Worker(threading.Thread):\n    def _step(self):\n"
                   "        return self._started\n\n\n"
                   "def tag(conn, other):\n    conn._deadline = 1\n    atexit._run_exitfuncs()\n"
                   "    os._exit(0)\n    return other._deadline, urlsplit('x')._replace(query='')\n"),
        "compat/__init__.py": "",
        "compat/trl.py": "import trl.trainer.utils as tu\n\nx = tu._use_triton\n",
    })
    assert package_private_uses(pkg) == []
