import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from reappraisal.stats import (
    cluster_logit_jackknife_interval,
    cluster_t_interval,
    design_effect,
    sign_flip_test,
    wilson_interval,
)


@pytest.mark.parametrize("n", [1, 7, 40, 240, 480, 720])
@pytest.mark.parametrize("share", [0.0, 0.05, 0.3125, 0.5, 0.581, 0.806, 0.99, 1.0])
@pytest.mark.parametrize("confidence", [0.9, 0.95])
def test_wilson_equals_statsmodels_including_fractional_k(n, share, confidence):
    k = share * n  # fractional whenever ties count as half wins; 0 and n included
    expected = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
    assert wilson_interval(k, n, confidence) == pytest.approx(expected, abs=1e-12)


def test_wilson_vectorized_matches_scalar_calls():
    k = np.array([0, 10.5, 627.84, 720])
    n = np.array([10, 20, 720, 720])
    low, high = wilson_interval(k, n)
    for i in range(len(k)):
        assert (low[i], high[i]) == pytest.approx(proportion_confint(k[i], n[i], method="wilson"))


@pytest.mark.parametrize(
    "rate, n, card_lower", [(0.872, 720, 0.8456), (0.806, 720, 0.7755), (0.581, 480, 0.5364)]
)
def test_wilson_reproduces_model_card_lower_bounds(rate, n, card_lower):
    low, _ = wilson_interval(rate * n, n)  # k = rate * n, fractional
    assert round(low, 4) == card_lower


def test_card_value_0718_is_not_a_wilson_bound():
    # 0.771 of 240 is k = 185 (185 / 240 = 0.7708): Wilson lower bound 0.7136,
    # shown as 0.714 in a regenerated table; the card's 0.718 is the Wald bound
    assert round(185 / 240, 3) == 0.771
    low, _ = wilson_interval(185, 240)
    assert round(low, 4) == 0.7136 and round(low, 3) == 0.714
    wald = 185 / 240 - stats.norm.ppf(0.975) * np.sqrt(185 / 240 * (55 / 240) / 240)
    assert round(wald, 3) == 0.718 != round(low, 3)


def test_wilson_edges_k0_and_kn():
    low, high = wilson_interval(0, 50)
    assert low == 0.0 and 0 < high < 0.1
    low, high = wilson_interval(50, 50)
    assert high == 1.0 and 0.9 < low < 1


@pytest.mark.parametrize("k, n", [(-1, 10), (11, 10), (1, 0), (np.nan, 10), (np.inf, np.inf), (5, np.inf)])
def test_wilson_rejects_impossible_counts(k, n):
    with pytest.raises(ValueError):
        wilson_interval(k, n)


def test_cluster_t_is_t_on_scenario_means_with_g_minus_1_df():
    means = np.array([0.9, 0.8, 0.85, 0.7, 0.95, 0.75])
    g = len(means)
    half = stats.t.ppf(0.975, g - 1) * means.std(ddof=1) / np.sqrt(g)
    assert cluster_t_interval(means) == pytest.approx((means.mean() - half, means.mean() + half))
    # identical to scipy's one-sample t interval
    ref = stats.ttest_1samp(means, 0).confidence_interval(0.95)
    assert cluster_t_interval(means) == pytest.approx((ref.low, ref.high))


def test_cluster_t_is_vectorized_over_datasets_and_clipped_to_rates():
    means = np.array([[0.9, 0.8, 0.85], [0.99, 1.0, 0.2]])
    low, high = cluster_t_interval(means)
    assert (low[0], high[0]) == pytest.approx(cluster_t_interval(means[0]))
    assert low[1] == 0.0 and high[1] == 1.0  # would leave [0, 1] unclipped
    assert cluster_t_interval([0.0, 0.0, 0.0]) == (0.0, 0.0)


@pytest.mark.parametrize("means", [[0.7], [], [0.5, np.nan, 0.6]])
def test_cluster_t_needs_two_scenarios_and_no_nan(means):
    with pytest.raises(ValueError, match="at least 2 scenarios|NaN"):
        cluster_t_interval(means)


@pytest.mark.parametrize("means, message", [([0.5, np.inf, 0.6], "finite"), ([0.5, 1.2, 0.6], r"\[0, 1\]"), ([-0.1, 0.5, 0.6], r"\[0, 1\]")])
def test_interval_functions_refuse_impossible_rates(means, message):
    # an interval outside [0, 1] must never come out silently
    for method in (cluster_t_interval, lambda m: cluster_logit_jackknife_interval(m, 100)):
        with pytest.raises(ValueError, match=message):
            method(means)
    with pytest.raises(ValueError, match="finite|NaN"):
        sign_flip_test([0.5, np.inf, 0.6], null=0.5)
    with pytest.raises(ValueError, match="finite"):
        design_effect(np.array([0.5, np.inf, 1.0, 0.0]), np.array(list("aabb")))
    assert cluster_t_interval([-0.5, 0.2, 0.1], bounds=(-1, 1))  # differences may be negative


def test_logit_jackknife_equals_a_leave_one_out_loop_and_respects_the_bound():
    means = np.array([0.97, 0.99, 0.91, 1.0, 0.95, 0.98])
    n, g = 720, 6
    eps = 0.5 / n
    logit = lambda p: np.log(min(max(p, eps), 1 - eps) / (1 - min(max(p, eps), 1 - eps)))
    pseudo = [g * logit(means.mean()) - (g - 1) * logit(np.delete(means, i).mean()) for i in range(g)]
    half = stats.t.ppf(0.975, g - 1) * np.std(pseudo, ddof=1) / np.sqrt(g)
    expected = [1 / (1 + np.exp(-(np.mean(pseudo) + sign * half))) for sign in (-1, 1)]
    low, high = cluster_logit_jackknife_interval(means, n)
    assert (low, high) == pytest.approx(expected, abs=1e-12)
    t_low, t_high = cluster_t_interval(means)
    assert high < 1.0 and t_high == 1.0  # the t interval hits the bound (clipped), the jackknife does not
    assert low < t_low  # it reaches further down, where a skewed population hides its tail


def test_design_effect_on_a_hand_computed_case():
    # two scenarios of four contests: all wins vs all losses -> scores vary
    # only between scenarios
    scores = np.array([1, 1, 1, 1, 0, 0, 0, 0], dtype=float)
    labels = np.array(list("aaaabbbb"))
    var_iid = scores.var(ddof=1) / 8  # (8/7 * 0.25) / 8
    var_cluster = np.var([1.0, 0.0], ddof=1) / 2  # 0.25
    result = design_effect(scores, labels)
    assert result.design_effect == pytest.approx(var_cluster / var_iid) == pytest.approx(7.0)
    assert result.effective_n == pytest.approx(8 / 7)
    assert (result.n, result.n_scenarios) == (8, 2)


def test_design_effect_near_one_without_clustering_and_large_with_it():
    rng = np.random.default_rng(3)
    labels = np.repeat(np.arange(40), 50)
    iid = rng.binomial(1, 0.7, size=labels.size).astype(float)
    assert 0.6 < design_effect(iid, labels).design_effect < 1.6
    clustered = rng.binomial(1, rng.beta(2, 1, size=40)[labels]).astype(float)
    assert design_effect(clustered, labels).design_effect > 5


def test_design_effect_undefined_without_variance():
    result = design_effect(np.ones(6), np.array(list("aabbcc")))
    assert np.isnan(result.design_effect) and np.isnan(result.effective_n)


def test_headline_interval_contains_its_estimate_near_the_bounds():
    from reappraisal.stats.intervals import cluster_logit_jackknife_interval, cluster_stretched_logit_jackknife_interval

    for means in ([0, 0, 0, 0.0417, 0, 0], [1, 1, 0.9583, 1, 1, 1], [0.0, 0.02, 0.0, 0.0, 0.01, 0.0]):
        theta = sum(means) / len(means)
        for method in (cluster_logit_jackknife_interval, cluster_stretched_logit_jackknife_interval):
            low, high = method(means, 72)
            assert 0 < low <= theta <= high < 1 and high > low, (method.__name__, means, low, high)


def test_the_stretched_logit_is_symmetric_about_one_half_and_the_logit_at_no_stretch():
    from reappraisal.stats.intervals import cluster_logit_jackknife_interval, cluster_stretched_logit_jackknife_interval

    means = np.array([0.97, 0.99, 0.91, 1.0, 0.95, 0.78])
    low, high = cluster_stretched_logit_jackknife_interval(means, 720)
    mirror_low, mirror_high = cluster_stretched_logit_jackknife_interval(1 - means, 720)
    assert (mirror_low, mirror_high) == pytest.approx((1 - high, 1 - low), abs=1e-12)  # losses read as wins
    assert cluster_stretched_logit_jackknife_interval(means, 720, stretch=0.0) == cluster_logit_jackknife_interval(
        means, 720)
    logit_low, logit_high = cluster_logit_jackknife_interval(means, 720)
    assert low < logit_low and high - logit_high < logit_low - low  # the reach is toward 1/2
    with pytest.raises(ValueError, match="stretch"):
        cluster_stretched_logit_jackknife_interval(means, 720, stretch=-1)
