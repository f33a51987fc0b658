"""Each compat module stops at import on a library version other than the one both locks pin, unless told to go on."""

from __future__ import annotations

import importlib.util
from importlib import metadata
from pathlib import Path

import pytest

from reappraisal.compat import dvclive, transformers, trl
from reappraisal.compat.version_guard import (UntestedLibraryError, UntestedLibraryWarning, override_variable,
                                               require_tested)
from tests.test_stage_envs import pins
from tests.workflow_utils import REPO

#: Each compat module and the distribution it guards.
SEAMS = {"trl": trl, "transformers": transformers, "dvclive": dvclive}


@pytest.mark.parametrize("distribution", sorted(SEAMS))
@pytest.mark.parametrize("lock", ["requirements.lock", "requirements-gpu.lock"])
def test_each_module_was_written_against_the_version_both_locks_pin(distribution, lock):
    assert SEAMS[distribution].TESTED_VERSION == pins((REPO / lock).read_text().splitlines())[distribution]


@pytest.mark.parametrize("distribution", sorted(SEAMS))
def test_the_installed_libraries_are_the_tested_ones(distribution):
    assert metadata.version(distribution) == SEAMS[distribution].TESTED_VERSION


def _fresh_import(module) -> None:
    """Run ``module``'s file again as a new module (the guard runs at import), leaving the loaded one alone."""
    path = Path(module.__file__)
    spec = importlib.util.spec_from_file_location(f"reappraisal.compat._fresh_{path.stem}", path)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))


def _fake_versions(monkeypatch, found: dict[str, str]) -> None:
    real = metadata.version
    monkeypatch.setattr(metadata, "version", lambda name: found.get(name) or real(name))


@pytest.mark.parametrize("distribution", sorted(SEAMS))
def test_another_version_stops_the_import_naming_both_versions_and_the_override(monkeypatch, distribution):
    variable = f"REAPPRAISAL_ALLOW_UNTESTED_{distribution.upper()}"
    monkeypatch.delenv(variable, raising=False)
    _fake_versions(monkeypatch, {distribution: "99.0.0"})
    with pytest.raises(UntestedLibraryError) as raised:
        _fresh_import(SEAMS[distribution])
    message = str(raised.value)
    tested = SEAMS[distribution].TESTED_VERSION
    assert f"{distribution} 99.0.0 is installed" in message and f"{distribution} {tested}" in message
    assert f"{variable}=1" in message and f"{distribution}=={tested}" in message


@pytest.mark.parametrize("distribution", sorted(SEAMS))
def test_the_override_turns_the_error_into_a_warning(monkeypatch, distribution):
    monkeypatch.setenv(override_variable(distribution), "1")
    _fake_versions(monkeypatch, {distribution: "99.0.0"})
    with pytest.warns(UntestedLibraryWarning, match=f"{distribution} 99.0.0 is installed"):
        _fresh_import(SEAMS[distribution])


def test_only_the_value_1_overrides_and_a_missing_library_is_not_checked(monkeypatch):
    monkeypatch.setenv("REAPPRAISAL_ALLOW_UNTESTED_TRL", "yes")
    _fake_versions(monkeypatch, {"trl": "1.17.0"})
    with pytest.raises(UntestedLibraryError, match="REAPPRAISAL_ALLOW_UNTESTED_TRL=1"):
        require_tested("trl", "1.16.0", "a seam")

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    require_tested("trl", "1.16.0", "a seam")  # imported where used: that import fails, not this check


def test_the_override_variable_is_named_after_the_distribution():
    assert override_variable("dvclive") == "REAPPRAISAL_ALLOW_UNTESTED_DVCLIVE"
    assert override_variable("some-lib.x") == "REAPPRAISAL_ALLOW_UNTESTED_SOME_LIB_X"
