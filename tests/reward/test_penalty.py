import numpy as np
import pytest

from reappraisal.reward.ensemble import ensemble_score as reexported
from reappraisal.reward.penalty import describe_penalty, ensemble_score


def test_std_form_is_mean_minus_lambda_population_std():
    s = np.array([[1.0, 0.0, 2.0], [3.0, 0.0, 2.0], [2.0, 3.0, 2.0]])
    got = ensemble_score(s, "std", 0.5)
    want = s.mean(0) - 0.5 * np.std(s, axis=0)  # numpy's default ddof=0, as the card's snippet
    np.testing.assert_allclose(got, want)
    assert got[2] == pytest.approx(2.0)  # seeds agree: no penalty


def test_variance_form_and_lambda_zero():
    s = np.array([[0.0, 1.0], [2.0, 1.0]])
    np.testing.assert_allclose(ensemble_score(s, "variance", 1.0), s.mean(0) - s.var(0))
    np.testing.assert_allclose(ensemble_score(s, "std", 0.0), s.mean(0))


def test_single_seed_has_no_penalty():
    np.testing.assert_allclose(ensemble_score(np.array([[0.3, -1.0]]), "std", 0.5), [0.3, -1.0])


def test_disagreement_lowers_the_score():
    agree = np.array([[1.0], [1.0], [1.0]])
    disagree = np.array([[0.0], [1.0], [2.0]])
    assert ensemble_score(disagree)[0] < ensemble_score(agree)[0]


@pytest.mark.parametrize(
    "scores, penalty, lam",
    [
        (np.zeros(3), "std", 0.5),
        (np.zeros((0, 3)), "std", 0.5),
        (np.zeros((2, 3)), "max", 0.5),
        (np.zeros((2, 3)), "std", -1.0),
        (np.array([[np.nan, 0.0], [0.0, 0.0]]), "std", 0.5),
    ],
)
def test_bad_input_is_rejected(scores, penalty, lam):
    with pytest.raises(ValueError):
        ensemble_score(scores, penalty, lam)


def test_reexport_and_description():
    assert reexported is ensemble_score
    assert "std" in describe_penalty("std", 0.5) and "0.5" in describe_penalty("std", 0.5)
