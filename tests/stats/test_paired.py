import numpy as np
import pandas as pd
import pytest
from scipy import stats

from reappraisal.stats import paired_comparison, score_contests

from .helpers import judgments_from_scores


def _contests():
    a = pd.DataFrame(
        {
            "run": [1, 2, 3, 1, 2, 1, 2],
            "vignette_id": ["v1", "v1", "v1", "v2", "v2", "v3", "v3"],
            "score": [1.0, 1.0, 0.5, 0.0, 1.0, 1.0, 1.0],
        }
    )
    b = pd.DataFrame(
        {
            "run": [1, 2, 1, 2, 1, 2, 1, 1],
            "vignette_id": ["v1", "v1", "v2", "v2", "v3", "v3", "v4", "v3"],
            "score": [0.5, 0.0, 0.0, 0.0, 1.0, 0.5, 1.0, np.nan],
        }
    )
    return pd.concat(
        [
            score_contests(judgments_from_scores(a, model="A")),
            score_contests(judgments_from_scores(b, model="B")),
        ],
        ignore_index=True,
    )


def test_paired_differences_interval_and_sign_flip_by_hand():
    result = paired_comparison(_contests(), "A", "B")
    # runs pooled per scenario: A = 2.5/3, 1/2, 1 ; B = 1/4, 0, 3/4 (v3's error left out)
    d = np.array([2.5 / 3 - 0.25, 0.5, 0.25])
    assert [row["difference"] for row in result["per_scenario"]] == pytest.approx(d)
    assert result["mean_difference"] == pytest.approx(d.mean())
    half = stats.t.ppf(0.975, 2) * d.std(ddof=1) / np.sqrt(3)
    assert (result["ci"]["low"], result["ci"]["high"]) == pytest.approx((d.mean() - half, d.mean() + half))
    assert result["ci"]["assumption"]
    # all three differences positive: only the identity pattern and its mirror
    assert result["sign_flip"]["p_value"] == pytest.approx(2 / 8)
    assert result["n_scenarios"] == 3 and result["scenarios_dropped"] == ["v4"]


def test_paired_interval_may_be_negative_and_sign_matters():
    result = paired_comparison(_contests(), "B", "A")
    assert result["mean_difference"] < 0 and result["ci"]["low"] < 0


def test_paired_comparison_refuses_ambiguous_or_too_small_input():
    contests = _contests()
    with pytest.raises(ValueError, match="no contests"):
        paired_comparison(contests, "A", "C")
    two_opponents = pd.concat([contests, contests.assign(opponent="r1")], ignore_index=True)
    with pytest.raises(ValueError, match="several opponent"):
        paired_comparison(two_opponents, "A", "B")
    assert paired_comparison(two_opponents, "A", "B", opponent="r1")["n_scenarios"] == 3
    with pytest.raises(ValueError, match="at least 2 scenarios"):
        paired_comparison(contests[contests["vignette_id"] == "v1"], "A", "B")
