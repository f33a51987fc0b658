import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.inter_rater import cohens_kappa as sm_kappa

from reappraisal.stats import (
    agreement_by_margin,
    cohens_kappa,
    first_slot_bias,
    human_agreement,
    judge_choices,
    position_consistency,
)

from .helpers import judgments_table

# contest, AB verdict, BA verdict, human margin (model answer minus opponent answer)
PAIRS = [
    ("c1", "A", "B", 2.0),  # model wins both orders; humans agree
    ("c2", "B", "A", -1.5),  # opponent wins both orders; humans agree
    ("c3", "A", "A", 1.2),  # first slot both: undecided
    ("c4", "A", "A", -0.3),  # first slot both; not clearly separated
    ("c5", "B", "B", -1.0),  # second slot both: undecided
    ("c6", "tie", "A", 3.0),  # a tie: undecided
    ("c7", "error", "A", 2.0),  # error: left out, counted
    ("c8", "A", "B", -2.0),  # model wins both; humans disagree
]


@pytest.fixture
def judgments():
    return judgments_table([(1, c, "v1", ab, ba) for c, ab, ba, _ in PAIRS])


@pytest.fixture
def margins():
    return pd.DataFrame({"contest_id": [p[0] for p in PAIRS], "human_margin": [p[3] for p in PAIRS]})


def test_position_consistency_by_hand(judgments):
    result = position_consistency(judgments)
    assert result == {
        "n_pairs": 7,
        "n_errors": 1,
        "n_consistent": 3,  # c1, c2, c8
        "n_first_slot_both": 2,
        "n_second_slot_both": 1,
        "n_with_tie": 1,
        "n_flips": 3,  # c3, c4, c5: the winner changes with the order; the tie (c6) is not a flip
        "consistency": pytest.approx(3 / 7),
        "flip_rate": pytest.approx(3 / 7),
        "tie_rate": pytest.approx(1 / 7),
    }


def test_a_judge_that_always_says_tie_never_flips():
    result = position_consistency(judgments_table([(1, f"c{i}", "v1", "tie", "tie") for i in range(5)]))
    assert (result["flip_rate"], result["tie_rate"], result["consistency"]) == (0.0, 1.0, 0.0)
    slot_a = position_consistency(judgments_table([(1, f"c{i}", "v1", "A", "A") for i in range(5)]))
    assert (slot_a["flip_rate"], slot_a["tie_rate"], slot_a["consistency"]) == (1.0, 0.0, 0.0)


def test_first_slot_bias_uses_exact_binomial_test():
    rows = [(1, f"f{i}", "v1", "A", "A") for i in range(9)] + [(1, "s", "v1", "B", "B"), (1, "k", "v1", "A", "B")]
    result = first_slot_bias(judgments_table(rows))
    assert (result["n_first_slot_both"], result["n_second_slot_both"]) == (9, 1)
    assert result["share_first_slot"] == pytest.approx(0.9)
    assert result["p_value"] == pytest.approx(22 / 1024)  # 2 * P(X >= 9), X ~ Bin(10, 1/2)
    assert result["p_value"] == pytest.approx(stats.binomtest(9, 10).pvalue)


def test_judge_choice_is_the_answer_winning_both_orders(judgments):
    choices = judge_choices(judgments).set_index("contest_id")["judge_choice"]
    assert choices.to_dict() == {
        "c1": "model", "c2": "opponent", "c3": "undecided", "c4": "undecided",
        "c5": "undecided", "c6": "undecided", "c7": "error", "c8": "model",
    }


def test_human_agreement_three_ways_and_kappa_by_hand(judgments, margins):
    result = human_agreement(judgments, margins, min_margin=1.0)
    # separated, error-free: c1 right, c2 right, c3 c5 c6 undecided, c8 wrong
    assert (result["n_pairs"], result["n_undecided"], result["n_errors"], result["n_not_separated"]) == (6, 3, 1, 1)
    assert result["agreement_strict"] == pytest.approx(2 / 6)
    assert result["agreement_half"] == pytest.approx(3.5 / 6)
    assert result["agreement_dropped"] == pytest.approx(2 / 3)
    # p_o = 1/3, p_e = (2/6)(3/6) + (1/6)(3/6) = 1/4 -> kappa = 1/9
    assert result["kappa"] == pytest.approx(1 / 9)


def test_cohens_kappa_equals_statsmodels():
    rng = np.random.default_rng(0)
    a = rng.choice(["x", "y", "z"], size=200)
    b = np.where(rng.random(200) < 0.6, a, rng.choice(["x", "y", "z"], size=200))
    table = pd.crosstab(a, b).to_numpy()
    assert cohens_kappa(a, b) == pytest.approx(sm_kappa(table).kappa)
    assert cohens_kappa(["x", "x"], ["x", "x"]) != cohens_kappa(["x", "x"], ["x", "x"])  # NaN


def test_agreement_by_margin_bins_by_hand(judgments, margins):
    table = agreement_by_margin(judgments, margins, [1.0, 2.0, 4.0])
    low_bin, high_bin = table.iloc[0], table.iloc[1]
    # [1, 2): c2 right, c3 c5 undecided ; [2, 4]: c1 right, c6 undecided, c8 wrong
    assert (low_bin["n_pairs"], low_bin["n_undecided"]) == (3, 2)
    assert low_bin[["agreement_strict", "agreement_half", "agreement_dropped"]].tolist() == pytest.approx([1 / 3, 2 / 3, 1.0])
    assert high_bin[["agreement_strict", "agreement_half", "agreement_dropped"]].tolist() == pytest.approx([1 / 3, 0.5, 0.5])


def test_judge_statistics_refuse_mixed_judges_and_missing_margins(judgments, margins):
    mixed = pd.concat([judgments, judgments.assign(judge="judge-2")])
    with pytest.raises(ValueError, match="one judge"):
        position_consistency(mixed)
    with pytest.raises(ValueError, match="no human margin"):
        human_agreement(judgments, margins.iloc[1:], min_margin=1.0)
    with pytest.raises(ValueError, match="positive"):
        human_agreement(judgments, margins, min_margin=0)
