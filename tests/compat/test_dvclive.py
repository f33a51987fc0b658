"""What ``reappraisal.compat.dvclive`` relies on still holds for the installed DVCLive."""

from __future__ import annotations

import ast
import inspect
import textwrap

import pytest
from dvclive import Live
from dvclive import studio as dvclive_studio

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


def test_studio_data_goes_through_post_to_studio_which_drops_a_skipped_event():
    """What ``FolderLive.post_data_to_studio`` relies on: ``sync`` sends Studio's data only through
    ``post_data_to_studio``, whose queued data reach ``post_to_studio(item, "data", data)``, which returns at once
    for an event in ``_studio_events_to_skip``."""
    sync = ast.parse(textwrap.dedent(inspect.getsource(Live.sync)))
    assert "self.post_data_to_studio()" in {ast.unparse(n) for n in ast.walk(sync) if isinstance(n, ast.Call)}
    post = textwrap.dedent(inspect.getsource(Live.post_data_to_studio))
    assert "post_to_studio(item, 'data', data)" in ast.unparse(ast.parse(post))
    module = ast.parse(inspect.getsource(dvclive_studio))  # post_to_studio is wrapped without functools.wraps
    first = next(n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "post_to_studio").body[0]
    assert ast.unparse(first) == "if event in live._studio_events_to_skip:\n    return"


@pytest.mark.parametrize("studio", [False, True])
def test_without_studio_nothing_is_gathered_for_it_and_the_folder_is_the_same(tmp_path, monkeypatch, studio):
    """Without a Studio configuration the steps gather nothing for Studio; with one they still do. Either way
    the folder holds the bytes a plain ``Live`` writes."""
    monkeypatch.chdir(tmp_path)
    for var in ("DVC_STUDIO_TOKEN", "STUDIO_TOKEN", "DVC_STUDIO_URL", "DVCLIVE_TEST"):
        monkeypatch.delenv(var, raising=False)
    gathered = []
    real = Live._get_live_data
    monkeypatch.setattr(Live, "_get_live_data", lambda self: gathered.append(self.step) or real(self))
    if studio:  # a configured Studio, reached through the poster (not the network)
        monkeypatch.setattr("dvclive.live.get_dvc_studio_config", lambda live: {"token": "t", "url": "u", "repo_url": "r"})
        monkeypatch.setattr("dvclive.live.post_to_studio", lambda *args, **kwargs: None)
    folders = {}
    for name, make in (("ours", live_outside_dvc), ("plain", Live)):
        live = make(dir=str(tmp_path / name), resume=False, save_dvc_exp=False, dvcyaml=False)
        for step in range(3):
            live.log_metric("loss", 1.0 / (step + 1))
            live.next_step()
        live.end()
        folders[name] = {p.relative_to(tmp_path / name): p.read_bytes() for p in (tmp_path / name).rglob("*")
                         if p.is_file()}
    assert folders["ours"] == folders["plain"] and folders["ours"]
    per_live = [0, 1, 2, 2]  # each step, and `end`
    assert gathered == (per_live * 2 if studio else per_live)  # the plain Live gathers in any case
