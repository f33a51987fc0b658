"""What ``reappraisal.compat.dvclive`` relies on still holds for the installed DVCLive."""

from __future__ import annotations

import ast
import inspect
import textwrap

from dvclive import Live

from reappraisal.compat.dvclive import live_outside_dvc


def test_live_looks_for_dvc_in_init_dvc_which_it_calls_from_its_constructor():
    defined = {n.name: [a.arg for a in n.args.args] for n in ast.parse(inspect.getsource(Live)).body[0].body
               if isinstance(n, ast.FunctionDef)}
    assert defined["_init_dvc"] == ["self"]  # (wrapped by a decorator that logs DvcException)
    init = ast.parse(textwrap.dedent(inspect.getsource(Live.__init__)))
    calls = [ast.unparse(n) for n in ast.walk(init) if isinstance(n, ast.Call)]
    assert "self._init_dvc()" in calls
    assigned = {ast.unparse(t) for n in ast.walk(init) if isinstance(n, (ast.Assign, ast.AnnAssign))
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target])}
    assert {"self._save_dvc_exp", "self._dvc_repo"} <= assigned


def test_a_live_outside_dvc_finds_no_repository_saves_no_experiment_and_writes_only_its_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("DVCLIVE_TEST", raising=False)  # the constructor's other path, which skips _init_dvc
    live = live_outside_dvc(dir=str(tmp_path / "live"), resume=False, save_dvc_exp=True, dvcyaml=False)
    assert live._dvc_repo is None and live._save_dvc_exp is False
    live.log_metric("loss", 0.5)
    live.next_step()
    live.end()
    assert (tmp_path / "live" / "metrics.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["live"]  # no dvc.yaml, no .dvc
