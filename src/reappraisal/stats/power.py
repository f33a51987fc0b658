"""How large an effect each claim rule can see: power against effect size and the minimum detectable effect.

Pure numpy/scipy; no training, no I/O. Each function simulates (or, for the paired t, computes exactly) the
probability that a claim rule *holds* when the truth differs from the rule's null by ``effect``, on a design of
G scenarios with ``contests_per_scenario`` contests each (runs pooled; the two orders of a contest are one
contest). The rules are the ones the claims ledger applies:

- :func:`headline_power`: the lower end of the headline interval
  (:func:`~reappraisal.stats.intervals.cluster_korn_graubard_interval`) above a bar; the truth is the bar plus
  the effect (a head-to-head contest is the same rule with the bar 1/2; the pre-registered confirmation is it
  on the confirmation pool);
- :func:`paired_power`: a paired-by-scenario t interval of a difference of two arms' win rates that excludes 0
  on the claimed side (the head-to-head ``paired`` rows, the ablation); beside it the power the same data would
  give without the pairing (:func:`unpaired_power`, Welch on the two arms' scenario means) and through the exact
  sign-flip test of the same differences (:func:`sign_flip_power`);
- :func:`reversion_power`: the selection rule "the selection-pool estimate lies above the confirmation
  interval", when the selected system's truth lies ``effect`` below its selection estimate.

``effect = 0`` is the null: the power there is the rule's false-hold rate. :func:`minimum_detectable_effect`
reads the smallest effect with power at least :data:`TARGET_POWER` off a power curve.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
from scipy import stats

from .intervals import cluster_korn_graubard_interval
from .simulation import largest_spread, scenario_means_from_rates, scenario_rates

#: The power at which the minimum detectable effect is read.
TARGET_POWER = 0.8
#: The effect sizes of the power tables.
TABLE_EFFECTS = (0.02, 0.05, 0.1, 0.2)
#: The grid a minimum detectable effect is read from (win-rate units).
MDE_EFFECTS = tuple(np.round(np.arange(0.0, 0.5001, 0.01), 2))


@dataclass(frozen=True)
class PowerCurve:
    """A claim rule's power at each effect size on one design; ``mde``: the smallest effect with power >=
    :data:`TARGET_POWER` (None when none on the grid reaches it); ``false_hold``: the power at effect 0."""

    rule: str
    design: dict
    effects: tuple
    power: tuple
    false_hold: float
    mde: float | None
    target_power: float = TARGET_POWER
    notes: dict = field(default_factory=dict)

    def at(self, effect: float) -> float:
        return float(np.interp(effect, self.effects, self.power))

    def as_dict(self) -> dict:
        return asdict(self)


def minimum_detectable_effect(effects, power, target: float = TARGET_POWER) -> float | None:
    """The smallest effect at which ``power`` (non-decreasing in truth, noisy in simulation) first reaches
    ``target``, linearly interpolated between grid points; None when it never does."""
    effects, power = np.asarray(effects, dtype=float), np.asarray(power, dtype=float)
    reached = np.flatnonzero(power >= target)
    if reached.size == 0:
        return None
    i = int(reached[0])
    if i == 0:
        return float(effects[0])
    e0, e1, p0, p1 = effects[i - 1], effects[i], power[i - 1], power[i]
    return float(e0 + (target - p0) * (e1 - e0) / (p1 - p0)) if p1 > p0 else float(e1)


def _curve(rule, design, effects, power, notes=None) -> PowerCurve:
    power = tuple(float(p) for p in power)
    effects = tuple(float(e) for e in effects)
    false_hold = float(np.interp(0.0, effects, power)) if effects[0] <= 0.0 else float("nan")
    return PowerCurve(rule, design, effects, power, false_hold, minimum_detectable_effect(effects, power),
                      notes=notes or {})


def _scenario_means(mean, scenarios, contests_per_scenario, spread, datasets, seed, family, tie_share):
    """Observed scenario means of ``datasets`` designs whose scenarios' true rates have this mean and sd (at most
    0.95 of the largest a rate with that mean can have); the same seed gives every mean the same random numbers."""
    rng = np.random.default_rng([seed, int(scenarios), contests_per_scenario])
    rates = scenario_rates(rng, datasets, scenarios, mean, min(spread, largest_spread(mean)), family)
    return scenario_means_from_rates(rng, rates, contests_per_scenario, tie_share)


def headline_power(*, bar: float, scenarios: int, contests_per_scenario: float, spread: float,
                   effects=MDE_EFFECTS, datasets: int = 2000, seed: int = 0, family: str = "beta",
                   tie_share: float = 0.1, confidence: float = 0.95) -> PowerCurve:
    """P(the headline interval's lower end > ``bar``) when the scenarios' mean win rate is ``bar + effect`` and
    their rates spread with sd ``spread`` (at most 0.95 of the largest sd a rate with that mean can have).
    Effects that put the truth at 1 or above are left out. The same random numbers serve every effect (common
    random numbers), so the curve is smooth in the effect."""
    effects = [e for e in effects if bar + e < 1.0]
    m = max(1, int(round(contests_per_scenario)))
    design = {"scenarios": int(scenarios), "contests_per_scenario": m, "bar": float(bar), "spread": float(spread),
              "family": family, "tie_share": float(tie_share), "datasets": int(datasets), "seed": int(seed)}
    power = []
    for effect in effects:
        means = _scenario_means(bar + effect, scenarios, m, spread, datasets, seed, family, tie_share)
        low, _ = cluster_korn_graubard_interval(means, float(m * scenarios), confidence)
        power.append(np.mean(np.asarray(low) > bar))
    return _curve("headline_above_bar", design, effects, power)


def paired_power(*, scenarios: int, sd_difference: float, effects=MDE_EFFECTS,
                 confidence: float = 0.95) -> PowerCurve:
    """P(the paired-by-scenario t interval of the mean difference excludes 0 on the claimed side) when the G
    per-scenario differences are normal with mean ``effect`` and sd ``sd_difference`` (the between-scenario sd
    of the true differences and the within-scenario sampling noise together): the noncentral t, exactly."""
    g = int(scenarios)
    t = stats.t.isf((1 - confidence) / 2, df=g - 1)
    power = [float(stats.nct.sf(t, df=g - 1, nc=e * np.sqrt(g) / sd_difference)) if sd_difference > 0
             else float(e > 0) for e in effects]
    design = {"scenarios": g, "sd_difference": float(sd_difference)}
    return _curve("paired_difference", design, effects, power)


def sign_flip_power(*, scenarios: int, sd_difference: float, effects=MDE_EFFECTS, confidence: float = 0.95,
                    datasets: int = 20000, seed: int = 0) -> PowerCurve:
    """The same paired comparison through the exact sign-flip test of the G per-scenario differences (two-sided p
    <= 1 − ``confidence`` with the mean on the claimed side): distribution-free, but its p cannot fall below
    2 / 2^G (1/32 at G = 6), so it needs every scenario on the claimed side there."""
    g = int(scenarios)
    rng = np.random.default_rng([seed, g, 1])
    noise = sd_difference * rng.standard_normal((datasets, g))
    patterns = 1 - 2 * ((np.arange(2**g)[:, None] >> np.arange(g)) & 1)  # (2^G, G) signs
    power = []
    for effect in effects:
        d = noise + effect
        observed = np.abs(d.sum(axis=1))
        p = np.mean(np.abs(patterns @ d.T) >= observed[None, :] - 1e-12, axis=0)
        power.append(np.mean((p <= 1 - confidence) & (d.sum(axis=1) > 0)))
    design = {"scenarios": g, "sd_difference": float(sd_difference)}
    return _curve("paired_sign_flip", design, effects, power)


def unpaired_power(*, scenarios: int, sd_arm: float, correlation: float, effects=MDE_EFFECTS,
                   confidence: float = 0.95, datasets: int = 20000, seed: int = 0) -> PowerCurve:
    """The power of the same comparison analysed without its pairing: Welch's t on the two arms' G scenario means
    (each with sd ``sd_arm``, correlated ``correlation`` across arms within a scenario, as shared scenario
    difficulty makes them). Beside :func:`paired_power` with sd_difference = sd_arm·sqrt(2(1 − correlation))."""
    g = int(scenarios)
    rng = np.random.default_rng([seed, g])
    z = rng.standard_normal((datasets, g, 2))
    shared = np.sqrt(max(correlation, 0.0))
    base = sd_arm * (shared * z[..., :1] + np.sqrt(1 - shared**2) * z)
    power = []
    for effect in effects:
        a, b = base[..., 0] + effect, base[..., 1]
        res = stats.ttest_ind(a, b, axis=-1, equal_var=False)
        df = res.df if hasattr(res, "df") else 2 * g - 2
        t_crit = stats.t.isf((1 - confidence) / 2, df=df)
        power.append(np.mean(res.statistic > t_crit))
    design = {"scenarios": g, "sd_arm": float(sd_arm), "correlation": float(correlation)}
    return _curve("unpaired_difference", design, effects, power)


def reversion_power(*, truth: float, scenarios: int, contests_per_scenario: float, spread: float,
                    effects=MDE_EFFECTS, datasets: int = 2000, seed: int = 0, family: str = "beta",
                    tie_share: float = 0.1, confidence: float = 0.95) -> PowerCurve:
    """P(the confirmation interval's upper end < the selection estimate) when the selected system's truth on
    fresh scenarios is ``truth`` and its selection estimate lies ``effect`` above it (the winner's curse)."""
    m = max(1, int(round(contests_per_scenario)))
    means = _scenario_means(truth, scenarios, m, spread, datasets, seed, family, tie_share)
    _, high = cluster_korn_graubard_interval(means, float(m * scenarios), confidence)
    power = [np.mean(np.asarray(high) < truth + e) for e in effects]
    design = {"scenarios": int(scenarios), "contests_per_scenario": m, "truth": float(truth), "spread": float(spread),
              "family": family, "tie_share": float(tie_share), "datasets": int(datasets), "seed": int(seed)}
    return _curve("selection_estimate_reverts", design, effects, power)
