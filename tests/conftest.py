"""Shared fixtures: a clean copy of the repository and Snakemake runs inside it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.workflow_utils import make_clean_copy, run_snakemake


@pytest.fixture
def clean_copy(tmp_path: Path) -> Path:
    """A fresh copy of the repository as a clean checkout would have it."""
    return make_clean_copy(tmp_path / "repo")


@pytest.fixture(scope="session")
def data_pipeline(tmp_path_factory) -> Path:
    """A clean copy in which Snakemake has run the data half through check_leakage."""
    repo = make_clean_copy(tmp_path_factory.mktemp("data_pipeline") / "repo")
    run_snakemake(repo, "--cores", "2", "results/data/leakage.json")
    return repo
