"""Selection: how much picking the best of K systems inflates the winner.

K systems (checkpoints, arms) are each evaluated by a win rate against one
opponent: the equally weighted mean over G scenarios of per-scenario win
rates. Picking the highest of K noisy estimates selects noise as well as
merit, so the winner's estimate on the pool it was picked on is biased
upwards (the winner's curse). With estimates X_j = μ_j + SE·(√ρ·Z₀ + √(1−ρ)·Z_j),
Z iid N(0, 1) (a shared scenario component with correlation ρ between systems,
plus an independent part), and equal μ_j, the expected inflation is

    E[max_j X_j] − μ = SE · √(1 − ρ) · E[max of K standard normals]

(≈ +0.035 at SE 0.03, K 5, ρ 0). The shared part moves every system
together and cannot be selected on; only the independent part inflates.

This is a correction for reporting, not a confirmation: a confirmatory claim
needs a pre-registration written before a fresh pool is generated
(checkpoint hash, metric, CI method, bar, one test), and the fresh pool must
be new scenarios, not new samples on the old ones.

Functions: :func:`expected_max_standard_normal`, :func:`expected_inflation`,
:func:`scenario_matrix_summary` (SE and ρ from a K × G matrix of scenario
rates), :func:`select_best`, :func:`selection_report`, and
:func:`simulate_selection` (a Monte Carlo of the winner's curse that checks
the formula). Pure numpy/scipy, no I/O.
"""

from __future__ import annotations

import math
from numbers import Integral

import numpy as np
from scipy import integrate, stats

_RATE_FLOOR = 0.01
_RATE_CEIL = 0.99
# a scenario-rate vector whose sample sd is below this is treated as constant
# (the mean of equal floats can differ from them by ~1e-17)
_ZERO_SD = 1e-12


def _check_int(name: str, value, minimum: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise ValueError(f"{what}: {name} must be an integer, got {value!r}")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{what}: {name} must be >= {minimum}, got {value}")
    return value


def _check_finite_scalar(name: str, value, what: str) -> float:
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{what}: {name} must be finite, got {value}")
    return value


def expected_max_standard_normal(k: int) -> float:
    """E[max of ``k`` iid N(0, 1)] by numerical integration.

    E[max] = ∫ x · k · φ(x) · Φ(x)^(k−1) dx over the real line
    (``scipy.integrate.quad``, absolute error ~1e-10). Exact for k = 1 (0)
    and k = 2 (1/√π ≈ 0.5642). k = 5 gives 1.16296, k = 10 gives 1.53875.
    Raises ``ValueError`` for k < 1 or a non-integer k.
    """
    k = _check_int("k", k, 1, "expected_max_standard_normal")
    if k == 1:
        return 0.0
    if k == 2:
        return 1.0 / math.sqrt(math.pi)

    def integrand(x: float) -> float:
        # Φ^(k−1) in logs so large k does not underflow in the left tail
        return x * k * math.exp(stats.norm.logpdf(x) + (k - 1) * stats.norm.logcdf(x))

    # the density of the max lives near sqrt(2 log k); split there for quad
    centre = math.sqrt(2.0 * math.log(k))
    left, _ = integrate.quad(integrand, -np.inf, centre, epsabs=1e-12, epsrel=1e-12, limit=200)
    right, _ = integrate.quad(integrand, centre, np.inf, epsabs=1e-12, epsrel=1e-12, limit=200)
    return float(left + right)


def expected_inflation(se: float, rho: float, k: int) -> float:
    """Expected upward bias of the best of ``k`` estimates: se · √(1 − ρ) · E[max of k N(0,1)].

    ``se``: standard error of one system's estimate (>= 0); ``rho``: the
    correlation between systems' estimates, **clipped to [0, 1]** (a negative
    sample correlation is treated as 0, the independent case; ρ = 1 means
    the systems move together and nothing is inflated); ``k``: number of
    systems the winner was picked from (k = 1: no selection, 0).
    Assumes equal true rates and roughly normal, equicorrelated estimates of
    equal SE. Example: se 0.03, ρ 0, k 5 gives ≈ 0.0349.
    Raises ``ValueError`` for se < 0, non-finite se or ρ, or k < 1.
    """
    se = _check_finite_scalar("se", se, "expected_inflation")
    rho = _check_finite_scalar("rho", rho, "expected_inflation")
    if se < 0:
        raise ValueError(f"expected_inflation: se must be >= 0, got {se}")
    rho = min(max(rho, 0.0), 1.0)
    return float(se * math.sqrt(1.0 - rho) * expected_max_standard_normal(k))


def _matrix_stats(rates: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(estimates, standard_errors, se, rho) of finite rates shaped (..., K, G), G >= 2."""
    k, g = rates.shape[-2], rates.shape[-1]
    estimates = rates.mean(axis=-1)
    sd = rates.std(axis=-1, ddof=1)
    standard_errors = sd / math.sqrt(g)
    se = standard_errors.mean(axis=-1)
    if k == 1:
        return estimates, standard_errors, se, np.zeros(rates.shape[:-2])
    centred = rates - estimates[..., None]
    cov = centred @ np.swapaxes(centred, -1, -2) / (g - 1)
    denom = sd[..., :, None] * sd[..., None, :]
    varies = sd > _ZERO_SD
    both_vary = varies[..., :, None] & varies[..., None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        corr = np.where(both_vary, cov / np.where(both_vary, denom, 1.0), 0.0)
    corr = np.clip(corr, -1.0, 1.0)
    upper = np.triu_indices(k, 1)
    rho = corr[..., upper[0], upper[1]].mean(axis=-1)
    return estimates, standard_errors, se, rho


def scenario_matrix_summary(rates) -> dict:
    """Per-system estimates, their standard errors and the between-system correlation.

    ``rates``: (K systems × G scenarios) per-scenario win rates in [0, 1];
    NaN where a system has no contest on a scenario. Only scenarios where
    every system has a rate are used (the others are counted in
    ``n_scenarios_dropped``), so all systems are compared on the same
    scenarios.

    On the G common scenarios: estimates_j = mean_g r_jg (equally weighted
    scenario mean); standard_errors_j = sd_g(r_jg, ddof=1) / √G;
    ``se`` = mean of the K standard errors; ``rho`` = mean over the
    K(K−1)/2 pairs of the Pearson correlation between two systems'
    scenario-rate vectors (a system whose rates do not vary contributes
    correlation 0 with every other; K = 1 gives 0.0). Because the estimates
    are scenario means over the same scenarios, this ρ is also the
    correlation between the systems' estimates when their spreads are equal.

    Returns a dict: estimates (list, length K), standard_errors (list),
    se, rho, n_scenarios (common G), n_scenarios_dropped, k.
    Raises ``ValueError`` for a non-2-D array, ±inf, rates outside [0, 1],
    or fewer than 2 common scenarios.
    """
    what = "scenario_matrix_summary"
    rates = np.asarray(rates, dtype=float)
    if rates.ndim != 2:
        raise ValueError(f"{what}: rates must be a 2-D (systems × scenarios) array, got shape {rates.shape}")
    if rates.shape[0] < 1:
        raise ValueError(f"{what}: rates has no systems")
    if np.isinf(rates).any():
        raise ValueError(f"{what}: rates must be finite or NaN (got inf)")
    finite = rates[~np.isnan(rates)]
    if (finite < 0).any() or (finite > 1).any():
        raise ValueError(f"{what}: rates must lie in [0, 1]")
    common = ~np.isnan(rates).any(axis=0)
    g = int(common.sum())
    if g < 2:
        raise ValueError(f"{what}: needs at least 2 scenarios rated for every system, got {g}")
    estimates, standard_errors, se, rho = _matrix_stats(rates[:, common])
    return {
        "estimates": [float(x) for x in estimates],
        "standard_errors": [float(x) for x in standard_errors],
        "se": float(se),
        "rho": float(rho),
        "n_scenarios": g,
        "n_scenarios_dropped": int(rates.shape[1] - g),
        "k": int(rates.shape[0]),
    }


def select_best(estimates, names) -> tuple[str, int]:
    """The name and index of the highest estimate: ``(name, index)``.

    Ties are broken by the first in ``names`` order (the lowest index).
    NaN estimates (a system with no estimate) are never selected.
    Raises ``ValueError`` when all estimates are NaN, an estimate is ±inf,
    the lengths differ, the input is empty, or a name repeats.
    """
    what = "select_best"
    estimates = np.asarray(estimates, dtype=float)
    names = list(names)
    if estimates.ndim != 1:
        raise ValueError(f"{what}: estimates must be 1-D, got shape {estimates.shape}")
    if len(names) != estimates.size:
        raise ValueError(f"{what}: {estimates.size} estimates but {len(names)} names")
    if estimates.size == 0:
        raise ValueError(f"{what}: no estimates")
    if len(set(names)) != len(names):
        raise ValueError(f"{what}: names must be unique, got {names}")
    if np.isinf(estimates).any():
        raise ValueError(f"{what}: estimates must be finite or NaN (got inf)")
    if np.isnan(estimates).all():
        raise ValueError(f"{what}: every estimate is NaN; nothing to select")
    index = int(np.nanargmax(estimates))  # first occurrence of the maximum
    return names[index], index


def selection_report(rates, names) -> dict:
    """Pick the best of K systems and say how much its estimate is inflated by the pick.

    ``rates``: (K × G) per-scenario win rates as for
    :func:`scenario_matrix_summary` (only scenarios rated for every system
    are used, also for the estimates compared); ``names``: K system names.
    The winner is the highest equally weighted scenario mean
    (:func:`select_best`: ties go to the first in ``names``).

    ``expected_inflation`` = se · √(1 − ρ) · E[max of K N(0,1)] with ``se``
    the **mean standard error across the K systems** (not the winner's own,
    which is itself selected and tends to be noisier), and ρ the mean
    pairwise correlation clipped to [0, 1]. ``shrunk_estimate`` = selected
    estimate − expected inflation, floored at 0. It is a bias-corrected
    description of the selection pool, not a confirmation: a confirmatory
    claim needs a pre-registered test on a fresh pool of new scenarios.

    Returns a dict: selected, selected_index, estimate (the winner's
    selection-pool estimate), estimates (name → estimate), k, n_scenarios,
    n_scenarios_dropped, se, rho, expected_max_standard_normal,
    expected_inflation, shrunk_estimate.
    """
    names = list(names)
    summary = scenario_matrix_summary(rates)
    if len(names) != summary["k"]:
        raise ValueError(f"selection_report: {summary['k']} systems in rates but {len(names)} names")
    selected, index = select_best(summary["estimates"], names)
    estimate = summary["estimates"][index]
    inflation = expected_inflation(summary["se"], summary["rho"], summary["k"])
    return {
        "selected": selected,
        "selected_index": index,
        "estimate": estimate,
        "estimates": dict(zip(names, summary["estimates"], strict=True)),
        "k": summary["k"],
        "n_scenarios": summary["n_scenarios"],
        "n_scenarios_dropped": summary["n_scenarios_dropped"],
        "se": summary["se"],
        "rho": summary["rho"],
        "expected_max_standard_normal": expected_max_standard_normal(summary["k"]),
        "expected_inflation": inflation,
        "shrunk_estimate": max(estimate - inflation, 0.0),
    }


def _clipped_normal_mean(centre: float, sd: float, lo: float, hi: float) -> float:
    """E[clip(Y, lo, hi)] for Y ~ N(centre, sd²), in closed form."""
    if sd == 0.0:
        return min(max(centre, lo), hi)
    a = (lo - centre) / sd
    b = (hi - centre) / sd
    inside = centre * (stats.norm.cdf(b) - stats.norm.cdf(a)) + sd * (stats.norm.pdf(a) - stats.norm.pdf(b))
    return float(lo * stats.norm.cdf(a) + hi * stats.norm.sf(b) + inside)


def _population_mean_rate(true_rate: float, scenario_sd: float, system_sd: float) -> float:
    """E over scenarios of clip(clip(true_rate + s) + d): the mean rate of every simulated system.

    s ~ N(0, scenario_sd²), d ~ N(0, system_sd²), clip to [0.01, 0.99]. The
    inner expectation over d is closed form; the outer one is integrated
    over s (breakpoints where the inner clip starts to bind).
    """
    lo, hi = _RATE_FLOOR, _RATE_CEIL
    inner = lambda a: _clipped_normal_mean(a, system_sd, lo, hi)
    if scenario_sd == 0.0:
        return inner(min(max(true_rate, lo), hi))
    # s below lo − p: a = lo; s above hi − p: a = hi; between: a = p + s
    p_low = stats.norm.cdf((lo - true_rate) / scenario_sd)
    p_high = stats.norm.sf((hi - true_rate) / scenario_sd)
    middle, _ = integrate.quad(
        lambda s: inner(true_rate + s) * stats.norm.pdf(s, scale=scenario_sd),
        lo - true_rate,
        hi - true_rate,
        epsabs=1e-12,
        epsrel=1e-10,
        limit=200,
    )
    return float(p_low * inner(lo) + p_high * inner(hi) + middle)


def simulate_selection(
    *,
    k: int,
    n_scenarios: int,
    true_rate: float,
    scenario_sd: float,
    system_sd: float,
    contests_per_scenario: int,
    n_sims: int,
    seed: int | None,
) -> dict:
    """Monte Carlo of the winner's curse, and a check of :func:`expected_inflation`.

    Each of ``n_sims`` datasets has a selection pool and an independent fresh
    confirmation pool, each of ``n_scenarios`` scenarios (the fresh pool has
    new scenarios, hence new scenario effects). On scenario g a shared effect
    s_g ~ N(0, scenario_sd²) (common to all K systems: what correlates them)
    gives a base rate clip(true_rate + s_g, 0.01, 0.99); system j's true
    rate adds its own deviation d_jg ~ N(0, system_sd²), clipped likewise;
    the observed scenario rate is Binomial(contests_per_scenario, rate) /
    contests_per_scenario. The winner is the highest equally weighted
    scenario mean on the selection pool (ties to the lowest index, as
    :func:`select_best`). Per dataset it records (a) the winner's selection
    estimate, (b) its estimate on the confirmation pool, and (c) the
    formula's inflation from the selection pool alone
    (:func:`scenario_matrix_summary`'s se and ρ, then :func:`expected_inflation`).

    ``true_mean``: all K systems are exchangeable, so the winner's true mean
    rate (its expected rate on a scenario drawn from the population) is the
    same number for every system and every dataset: E[clip(clip(true_rate +
    s) + d)], computed by numerical integration. It equals ``true_rate``
    unless the clipping binds asymmetrically (true_rate far from 0.5, large
    sds). Not used: the winner's mean true rate on the selection pool's
    scenarios (itself inflated: its d_jg were selected on), nor on the
    confirmation pool's (its s_g would then cancel from
    ``confirmation_bias``, hiding whether the fresh pool is unbiased for the
    population).

    Returns a dict of means over datasets: selection_mean, confirmation_mean,
    true_mean, observed_inflation (selection_mean − true_mean),
    formula_inflation (mean of c), confirmation_bias (confirmation_mean −
    true_mean), inflation_ratio (formula / observed; NaN when observed is 0),
    each with a Monte-Carlo standard error (``*_se``: sd across datasets /
    √n_sims; ``inflation_gap`` = observed − formula, paired per dataset,
    with ``inflation_gap_se``), plus n_sims and the inputs.
    """
    what = "simulate_selection"
    k = _check_int("k", k, 1, what)
    n_scenarios = _check_int("n_scenarios", n_scenarios, 2, what)
    contests_per_scenario = _check_int("contests_per_scenario", contests_per_scenario, 1, what)
    n_sims = _check_int("n_sims", n_sims, 2, what)
    true_rate = _check_finite_scalar("true_rate", true_rate, what)
    scenario_sd = _check_finite_scalar("scenario_sd", scenario_sd, what)
    system_sd = _check_finite_scalar("system_sd", system_sd, what)
    if not 0.0 <= true_rate <= 1.0:
        raise ValueError(f"{what}: true_rate must lie in [0, 1], got {true_rate}")
    if scenario_sd < 0 or system_sd < 0:
        raise ValueError(f"{what}: scenario_sd and system_sd must be >= 0")

    rng = np.random.default_rng(seed)

    def pool() -> np.ndarray:
        shared = rng.normal(0.0, scenario_sd, size=(n_sims, 1, n_scenarios))
        base = np.clip(true_rate + shared, _RATE_FLOOR, _RATE_CEIL)
        rate = np.clip(base + rng.normal(0.0, system_sd, size=(n_sims, k, n_scenarios)), _RATE_FLOOR, _RATE_CEIL)
        return rng.binomial(contests_per_scenario, rate) / contests_per_scenario

    selection = pool()
    confirmation = pool()
    estimates, _, se, rho = _matrix_stats(selection)
    winner = np.argmax(estimates, axis=-1)  # first maximum, as select_best
    rows = np.arange(n_sims)
    selected = estimates[rows, winner]
    confirmed = confirmation.mean(axis=-1)[rows, winner]
    formula = se * np.sqrt(1.0 - np.clip(rho, 0.0, 1.0)) * expected_max_standard_normal(k)
    true_mean = _population_mean_rate(true_rate, scenario_sd, system_sd)

    def mc_se(x: np.ndarray) -> float:
        return float(x.std(ddof=1) / math.sqrt(n_sims))

    observed = float(selected.mean() - true_mean)
    formula_mean = float(formula.mean())
    return {
        "selection_mean": float(selected.mean()),
        "selection_mean_se": mc_se(selected),
        "confirmation_mean": float(confirmed.mean()),
        "confirmation_mean_se": mc_se(confirmed),
        "true_mean": true_mean,
        "observed_inflation": observed,
        "observed_inflation_se": mc_se(selected),
        "formula_inflation": formula_mean,
        "formula_inflation_se": mc_se(formula),
        "inflation_gap": float((selected - true_mean - formula).mean()),
        "inflation_gap_se": mc_se(selected - formula),
        "inflation_ratio": formula_mean / observed if observed != 0 else float("nan"),
        "confirmation_bias": float(confirmed.mean() - true_mean),
        "confirmation_bias_se": mc_se(confirmed),
        "n_sims": n_sims,
        "k": k,
        "n_scenarios": n_scenarios,
        "true_rate": true_rate,
        "scenario_sd": scenario_sd,
        "system_sd": system_sd,
        "contests_per_scenario": contests_per_scenario,
    }
