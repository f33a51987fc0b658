"""Card-shaped tables: the model cards' own tables, compact enough to ``\\input`` into a paper (pure).

Each is a view of a summary table (its rows and their artifacts), in the
shape the card printed it, with the honest column beside the quoted one:
the policy card's "win rate | n | 95% lower bound" gains the
scenario-clustered interval next to the iid Wilson bound it quoted. They
render through :func:`reappraisal.summary.render.to_latex` like every
table, and fit a one-column article's text width.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import pandas as pd

from .evaluation_tables import Settings
from .summary_table import Table, not_computable
from .texts import percent, table_text

#: The card tables, in the order the report and the paper list them.
CARD_TABLES = ("card_policy", "card_head_to_head", "card_ood", "card_ablation", "card_reward_models")


def _view(name: str, source: Table, mask: pd.Series, display: Sequence, s: Settings) -> Table:
    """Rows ``mask`` of ``source`` shown with ``display``; not computable when nothing is left."""
    title, caption = table_text(name, judge=s.headline_judge, opponent=s.headline_opponent, arm=s.headline_arm,
                                level=percent(s.confidence))
    columns = list(source.frame.columns)
    if source.status != "ok" or not mask.any():
        why = source.note or f"no row of {source.name} for this view"
        return not_computable(name, title, caption, source.estimand, columns, why)
    keep = [i for i, m in enumerate(mask.to_list()) if m]
    return Table(name, title, caption, source.estimand, source.frame.iloc[keep], [source.sources[i] for i in keep],
                 display=list(display), layout="portrait")


def card_tables(tables: Mapping[str, Table], s: Settings) -> dict[str, Table]:
    """The card-shaped views of the summary ``tables``."""
    level = percent(s.confidence)
    headline, h2h, ood = tables["headline"], tables["head_to_head"], tables["ood"]
    hf = headline.frame
    out = {
        "card_policy": _view(
            "card_policy", headline,
            (hf["opponent"] == s.headline_opponent) & (hf["judge"] == s.headline_judge) & (hf["pool"] == "train"),
            [("arm", ("arm",)), ("win rate", ("win_rate",)), ("n", ("contests",)),
             (f"{level} lower, iid", ("wilson_low",)), (f"{level} CI, clustered", ("headline_low", "headline_high"))], s),
        "card_head_to_head": _view(
            "card_head_to_head", h2h,
            (h2h.frame["kind"] == "direct") & (h2h.frame["pool"] == "train") & (h2h.frame["judge"] == s.headline_judge),
            [("arm", ("arm",)), ("opponent", ("opponent",)), ("win rate", ("estimate",)), ("n", ("contests",)),
             (f"{level} CI, clustered", ("ci_low", "ci_high"))], s),
        "card_ood": _view(
            "card_ood", ood, ood.frame["judge"] == s.headline_judge,
            [("arm", ("arm",)), ("opponent", ("opponent",)), ("win rate", ("win_rate",)), ("n", ("contests",)),
             (f"{level} lower, iid", ("wilson_low",)), (f"{level} CI, clustered", ("headline_low", "headline_high"))], s),
        "card_ablation": _view(
            "card_ablation", tables["ablation"], tables["ablation"].frame["arm"].notna(),
            [("arm", ("arm",)), ("w_rm", ("w_rm",)), ("w_grm", ("w_grm",)), ("win rate", ("win_rate",)),
             (f"{level} CI", ("headline_low", "headline_high")), (f"vs {s.headline_arm}", ("diff_vs_headline_arm",)),
             (f"{level} CI of the difference", ("diff_ci_low", "diff_ci_high"))], s),
    }
    rm = tables["reward_models"]
    rm_display = {cols: heading for heading, cols in (rm.display or [])}
    out["card_reward_models"] = _view(
        "card_reward_models", rm, rm.frame["accuracy"].notna(),
        [("model", ("model",)), ("accuracy", ("accuracy",)),
         (rm_display.get(("ci_low", "ci_high"), f"{level} CI"), ("ci_low", "ci_high")),
         ("iid Wilson", ("wilson_low", "wilson_high")), ("pairs", ("n_pairs",))], s)
    return {name: out[name] for name in CARD_TABLES}
