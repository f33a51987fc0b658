"""Normalization recovers the planted rater severity and removes it from z."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from reappraisal.data.normalize import estimate_rater_offsets, zscore_ratings

from tests.workflow_utils import REPO


@pytest.fixture(scope="module")
def ratings(data_pipeline):
    return pd.read_parquet(data_pipeline / "data/interim/ratings.parquet")


@pytest.fixture(scope="module")
def truth():
    sev = pd.read_csv(REPO / "data/demo/truth/rater_severity.csv", dtype={"study": str})
    return sev[["study", "rater_id", "severity"]]


def test_estimated_rater_offsets_recover_planted_severity(ratings, truth):
    est = estimate_rater_offsets(ratings).merge(truth, on=["study", "rater_id"], validate="one_to_one")
    assert len(est) == len(truth)
    assert np.corrcoef(est["offset"], est["severity"])[0, 1] >= 0.9


def test_z_scores_remove_severity(ratings, truth):
    raw_mean = ratings.groupby(["study", "rater_id"], as_index=False)["rating"].mean().merge(truth)
    z, _ = zscore_ratings(ratings)
    z_mean = z.groupby(["study", "rater_id"], as_index=False)["z"].mean().merge(truth)
    # Raw ratings carry the severity; z-scores do not.
    assert np.corrcoef(raw_mean["rating"], raw_mean["severity"])[0, 1] > 0.6
    assert abs(np.corrcoef(z_mean["z"], z_mean["severity"])[0, 1]) < 0.1
    assert np.isfinite(z["z"]).all()


def test_z_scores_pool_studies_on_one_scale(ratings):
    z, _ = zscore_ratings(ratings)
    per_study_sd = z.groupby("study")["z"].std()
    raw_sd = ratings.groupby("study")["rating"].std()
    assert raw_sd.max() / raw_sd.min() > 1.2  # the demo plants different study scales
    assert per_study_sd.max() / per_study_sd.min() < 1.1


def test_zero_variance_raters_are_dropped_and_counted(ratings):
    z, summary = zscore_ratings(ratings, zero_variance="drop")
    assert summary["zero_variance"]["cells"] == 2  # the two planted constant-novelty raters
    dropped = {(e["study"], e["rater_id"], e["dimension"]) for e in summary["zero_variance"]["examples"]}
    assert dropped == {("3", "s3_p004", "novelty"), ("4", "s4_p009", "novelty")}
    assert z.query("rater_id == 's3_p004' and dimension == 'novelty'").empty
    assert not z.query("rater_id == 's3_p004' and dimension == 'effectiveness'").empty
    assert summary["n_ratings_out"] == summary["n_ratings_in"] - summary["zero_variance"]["ratings_affected"] - summary["too_few_ratings"]["ratings_dropped"]


def test_zero_variance_policy_zero_keeps_ratings_with_z_zero(ratings):
    z, summary = zscore_ratings(ratings, zero_variance="zero")
    cell = z.query("rater_id == 's3_p004' and dimension == 'novelty'")
    assert len(cell) > 0 and (cell["z"] == 0).all()
    assert np.isfinite(z["z"]).all()


def test_hand_computed_z():
    df = pd.DataFrame(
        {"study": "1", "rater_id": "a", "reappraisal_id": ["r1", "r2", "r3"], "dimension": "eff", "rating": [1.0, 2.0, 3.0]}
    )
    z, _ = zscore_ratings(df)
    assert z["z"].tolist() == pytest.approx([-1.0, 0.0, 1.0])  # sample SD of (1,2,3) is 1
    single = df.iloc[:1]
    z1, summary = zscore_ratings(single)
    assert z1.empty and summary["too_few_ratings"]["ratings_dropped"] == 1
