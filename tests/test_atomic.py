"""Atomic writes: all or nothing, with ordinary permissions."""

from __future__ import annotations

import os
import stat

import pytest

from reappraisal.atomic import atomic_dir, atomic_path, write_json


def test_failed_write_leaves_nothing(tmp_path):
    dest = tmp_path / "out.json"
    with pytest.raises(RuntimeError):
        with atomic_path(dest) as tmp:
            tmp.write_text("half")
            raise RuntimeError("crash")
    assert list(tmp_path.iterdir()) == []


def test_failed_directory_keeps_the_old_one(tmp_path):
    dest = tmp_path / "model"
    dest.mkdir()
    (dest / "weights").write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_dir(dest) as tmp:
            (tmp / "weights").write_text("new, half")
            raise RuntimeError("crash")
    assert (dest / "weights").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


def test_outputs_get_umask_permissions_not_private_temp_ones(tmp_path):
    old = os.umask(0o022)
    try:
        write_json({"a": 1}, tmp_path / "m.json")
        with atomic_dir(tmp_path / "d") as tmp:
            (tmp / "x").write_text("x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "m.json").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "d").stat().st_mode) == 0o755
