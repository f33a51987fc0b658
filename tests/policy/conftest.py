"""Fixtures for the policy tests (data and fakes live in fakes.py)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from .fakes import build_tiny_policy, make_targets, make_vignettes


@pytest.fixture(scope="session")
def vignettes() -> pd.DataFrame:
    return make_vignettes()


@pytest.fixture(scope="session")
def targets() -> pd.DataFrame:
    return make_targets()


@pytest.fixture(scope="session")
def tiny_policy(tmp_path_factory) -> Path:
    return build_tiny_policy(tmp_path_factory.mktemp("policy_base") / "policy")


@pytest.fixture(scope="session")
def warm_policy(tmp_path_factory, tiny_policy, targets, vignettes) -> Path:
    """The tiny policy after a short warm-start SFT (well-formed thinking completions)."""
    from reappraisal.policy.warm_start import run_warm_start, warm_start_examples

    out = tmp_path_factory.mktemp("policy_warm") / "policy_warm"
    examples = warm_start_examples(targets, vignettes, seed=0)
    run_warm_start(tiny_policy, examples, out, steps=150, lr=3e-3, batch_size=16, max_length=256, seed=0)
    return out
