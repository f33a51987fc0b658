import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from reappraisal.stats import pairwise_accuracy


def test_pairwise_accuracy_ties_half_and_clustered_interval_by_hand():
    pairs = pd.DataFrame(
        {
            "vignette_id": ["v1", "v1", "v1", "v2", "v2", "v3"],
            "score_preferred": [2.0, 1.0, 0.0, 3.0, 2.0, 1.0],
            "score_other": [1.0, 1.0, 1.0, 1.0, 0.0, 2.0],
        }
    )
    result = pairwise_accuracy(pairs)
    assert result["accuracy"] == pytest.approx(3.5 / 6) and result["n_ties"] == 1
    per_scenario = np.array([0.5, 1.0, 0.0])
    assert [s["accuracy"] for s in result["per_scenario"]] == pytest.approx(per_scenario)
    half = stats.t.ppf(0.975, 2) * per_scenario.std(ddof=1) / np.sqrt(3)
    ct = result["ci_cluster_t"]
    assert ct["estimate"] == pytest.approx(0.5)
    assert (ct["low"], ct["high"]) == pytest.approx((max(0.0, 0.5 - half), min(1.0, 0.5 + half)))
    wilson = result["ci_iid_wilson"]
    assert (wilson["low"], wilson["high"]) == pytest.approx(proportion_confint(3.5, 6, method="wilson"))
    assert "ignores clustering" in wilson["assumption"]


def test_clustered_interval_is_wider_when_scenarios_differ():
    rng = np.random.default_rng(4)
    skill = np.repeat(rng.uniform(0.3, 1.0, size=20), 30)
    pairs = pd.DataFrame(
        {
            "vignette_id": np.repeat(np.arange(20), 30),
            "score_preferred": (rng.random(600) < skill).astype(float),
            "score_other": 0.5,
        }
    )
    result = pairwise_accuracy(pairs)
    width = lambda ci: ci["high"] - ci["low"]
    assert width(result["ci_cluster_t"]) > 1.5 * width(result["ci_iid_wilson"])


@pytest.mark.parametrize(
    "pairs, message",
    [
        (pd.DataFrame({"vignette_id": [], "score_preferred": [], "score_other": []}), "empty"),
        (pd.DataFrame({"vignette_id": ["v1"], "score_preferred": [1.0]}), "missing column"),
        (pd.DataFrame({"vignette_id": ["v1", "v1"], "score_preferred": [1.0, 2.0], "score_other": [0.0, 0.0]}), "at least 2 scenarios"),
        (pd.DataFrame({"vignette_id": ["v1", "v2"], "score_preferred": [1.0, np.nan], "score_other": [0.0, 0.0]}), "NaN"),
    ],
)
def test_pairwise_accuracy_validates_input(pairs, message):
    with pytest.raises(ValueError, match=message):
        pairwise_accuracy(pairs)
