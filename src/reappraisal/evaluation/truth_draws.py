"""The truth's draws (demo only).

A system's fresh answers on the pools it is evaluated on (:func:`truth_pools`)
with their gold (and each rater profile's quality, which the panel's verdict
reads), under a seed of their own, and the base policy's extra draws for the
gold oracle.
"""

from __future__ import annotations

from ..settings import EvaluationSettings, Settings

import pandas as pd

from ..data.demo_quality import PROFILES

#: ``gold``: the world's gold (the profiles' share-weighted mean); ``gold_<profile>``: each rater profile's.
PROFILE_COLUMNS = [f"gold_{p}" for p in PROFILES]
DRAW_COLUMNS = ["system", "vignette_id", "pool", "sample", "answer", "passed", "gold", *PROFILE_COLUMNS]
TRUTH_POOLS = ("train", "ood", "confirm")
TRUTH_RUN = 0  # the evaluation's runs are 1, 2, 3...: the truth's draws have a seed of their own


def check_truth_allowed(settings: Settings) -> None:
    """The truth needs the world: refused unless the data are the demo generator's (bundled), one line."""
    from ..data.demo_gold import require_demo_data

    require_demo_data("the truth stage (evaluation.truth)", preset=str(settings.preset),
                      data_source=settings.data.source if settings.data else None,
                      fix="has no known truth: set evaluation.truth.enabled false", where="config evaluation.truth")


def draws_for(system: str, model_dir: str, vignettes: pd.DataFrame, settings: Settings, *,
              oracle: bool) -> pd.DataFrame:
    """One system's truth draws with their gold (see module doc)."""
    from ..data.demo_gold import SHARES, profile_qualities_of
    from .answers import generate_answers

    truth = settings.evaluation.truth
    pools = truth_pools(settings, system)
    per_pool = {p: int(truth.answers_per_scenario) for p in pools}
    if oracle:
        per_pool["train"] = max(per_pool["train"], int(truth.oracle.draws_per_scenario))
    table = generate_answers(system, TRUTH_RUN, model_dir, vignettes, settings, pools=pools, per_pool=per_pool)
    scenario = vignettes.set_index(vignettes["vignette_id"].astype(str))["text"]
    profiles = profile_qualities_of(table["answer"].tolist(), [scenario[str(v)] for v in table["vignette_id"]])
    passed = ~(table["empty"] | table["too_long"])
    return pd.DataFrame({"system": system, "vignette_id": table["vignette_id"].astype(str), "pool": table["pool"],
                         "sample": table["sample"], "answer": table["answer"], "passed": passed.to_numpy(),
                         "gold": profiles @ SHARES, **dict(zip(PROFILE_COLUMNS, profiles.T))}, columns=DRAW_COLUMNS)


def truth_pools(settings: Settings, system: str) -> tuple[str, ...]:
    """The pools a system's truth draws cover: those it is evaluated on, and the confirmation pool beside
    the OOD selection pool (a selection candidate may be confirmed there); a `model` opponent evaluated on
    the training scenarios alone (the base policy) draws there alone."""
    from .systems import system_pools

    evaluated = system_pools(settings, system)
    return tuple(p for p in TRUTH_POOLS if p in evaluated or (p == "confirm" and "ood" in evaluated))


def oracle_source(opps) -> str | None:
    """The base policy: the first `model` opponent (the warm start on the demo)."""
    return next((o.name for o in opps.values() if o.kind == "model"), None)


def panel_model(evaluation: EvaluationSettings):
    """The headline judge's panel as the truth reads it (the headline judge must be a panel)."""
    from ..data.demo_gold import SHARES, RatingModel
    from ..errors import ConfigError
    from .judge_spec import load_judge
    from .truth import PanelModel

    name = evaluation.headline_judge
    spec = load_judge(name)
    if spec.backend != "panel":
        raise ConfigError(f"the truth is the panel's expected verdict, but the headline judge {name!r} is "
                          f"backend {spec.backend!r}", where="config evaluation.headline_judge")
    model = RatingModel.for_dimension(spec.panel["dimension"], spec.panel["study"])
    return PanelModel.from_rating_model(spec.panel["raters"], model.multiplier, model.loading, model.reading_sd,
                                        shares=SHARES)
