"""Statistics for the evaluation report: pure numpy/scipy functions, no I/O.

Units: a *contest* is one (model answer, opponent answer) pair for one
scenario judged in both orders, scored 1 / 0.5 / 0 (see
:mod:`.contests`); *clusters* are scenarios, with runs pooled inside each
scenario. Every interval states its assumption (:data:`ASSUMPTIONS`); the headline
interval is Korn-Graubard's (:func:`cluster_korn_graubard_interval`,
Clopper-Pearson at the effective number of contests, capped near a bound) for
the equally weighted mean of scenario rates, the one estimand of a headline
row; the logit jackknives and the distribution-free cluster Clopper-Pearson
(:func:`cluster_clopper_pearson_interval`) are sensitivity columns.

Modules: ``contests`` (scoring), ``intervals`` (Wilson, cluster t, Korn-Graubard,
logit jackknives, distribution-free cluster Clopper-Pearson, design effect), ``runs`` (per-run rates, run-effect test), ``signflip``,
``bootstrap`` (percentile and wild cluster bootstraps), ``paired``
(head-to-head by scenario), ``verdict_diagnostics`` (position bias, human agreement, kappa), ``length_bias`` (longer-wins share, length-controlled win rate),
``accuracy`` (reward-model pairwise accuracy), ``headline`` (the headline
row).
"""

from .accuracy import pair_correctness, pairwise_accuracy
from .bootstrap import (
    WEBB_WEIGHTS,
    cluster_bootstrap_draws,
    exact_cluster_bootstrap,
    exact_resample_counts,
    percentile_cluster_bootstrap_interval,
    webb_weight_matrix,
    weighted_quantile,
    wild_cluster_bootstrap_interval,
    wild_cluster_bootstrap_test,
)
from .contests import (
    check_contests,
    model_outcomes,
    pair_orders,
    scenario_summary,
    score_contests,
    summarize_contests,
)
from .headline import ESTIMAND, HEADLINE_INTERVAL, headline_row
from .intervals import (
    ASSUMPTIONS,
    DesignEffect,
    Interval,
    cluster_clopper_pearson_interval,
    cluster_korn_graubard_interval,
    cluster_logit_jackknife_interval,
    cluster_stretched_logit_jackknife_interval,
    cluster_t_interval,
    design_effect,
    wilson_interval,
)
from .verdict_diagnostics import (
    agreement_by_margin,
    cohens_kappa,
    first_slot_bias,
    human_agreement,
    judge_choices,
    position_consistency,
)
from .length_bias import length_controlled_win_rate, longer_wins_share, win_rate_by_length_bin
from .paired import paired_comparison
from .runs import RunEffectTest, per_run_rates, run_effect_test, scenario_run_table
from .signflip import SignFlipResult, sign_flip_test, sign_matrix

__all__ = [
    "length_controlled_win_rate",
    "longer_wins_share",
    "win_rate_by_length_bin",
    "ASSUMPTIONS",
    "WEBB_WEIGHTS",
    "DesignEffect",
    "ESTIMAND",
    "HEADLINE_INTERVAL",
    "Interval",
    "RunEffectTest",
    "SignFlipResult",
    "agreement_by_margin",
    "check_contests",
    "cluster_bootstrap_draws",
    "cluster_clopper_pearson_interval",
    "cluster_korn_graubard_interval",
    "cluster_logit_jackknife_interval",
    "cluster_stretched_logit_jackknife_interval",
    "cluster_t_interval",
    "cohens_kappa",
    "design_effect",
    "exact_cluster_bootstrap",
    "exact_resample_counts",
    "first_slot_bias",
    "headline_row",
    "human_agreement",
    "judge_choices",
    "model_outcomes",
    "pair_correctness",
    "pair_orders",
    "paired_comparison",
    "pairwise_accuracy",
    "per_run_rates",
    "percentile_cluster_bootstrap_interval",
    "position_consistency",
    "run_effect_test",
    "scenario_run_table",
    "scenario_summary",
    "score_contests",
    "sign_flip_test",
    "sign_matrix",
    "summarize_contests",
    "webb_weight_matrix",
    "weighted_quantile",
    "wild_cluster_bootstrap_interval",
    "wild_cluster_bootstrap_test",
    "wilson_interval",
]
