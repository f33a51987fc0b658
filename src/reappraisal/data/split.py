"""Reappraisal-level split, per-reappraisal targets and preference pairs. Pure, no I/O.

Units: a *target* is one reappraisal's mean z-rating per dimension (z as in
:mod:`reappraisal.data.normalize`). The split is by text: reappraisals whose
texts are identical after :func:`~reappraisal.data.leakage.normalized_text`
(NFKC, casefolded, whitespace collapsed) form one group, whatever their ids
and scenarios, and a group lands on one side, so no text is in both train and
val. It is stratified by scenario so every training scenario appears in both
train and val. Everything not written by a human participant (GPT-4
references and every opponent model's answers) is ``heldout`` and never
enters train or val. Human reappraisals with fewer than ``min_ratings``
ratings on the primary dimension are ``excluded`` (counted).

Scenarios are split in sorted order; in each, its groups are ranked by a
keyed hash of their normalised text (:func:`text_rank`: the seed, the
scenario and the text, nothing else) and, in that order, those not placed by
an earlier scenario go to val until the scenario's val share (counting the
reappraisals placed earlier) is reached. The split is therefore a function of
the data's content: the same reappraisals in any row or file order land on
the same sides. Identical texts move only the reappraisals near the
val/train boundary of a scenario.

A *pair* is two human reappraisals of the same scenario from the same split,
with the human margin |z_a − z_b| on the primary dimension; A/B order is
randomised so position carries no information. Two identical texts are never
a pair (dropped and counted by :func:`split_summary`).
"""

from __future__ import annotations

import hashlib
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .leakage import normalized_text

SPLITS = ("train", "val", "heldout", "excluded")
HUMAN = "human"


def stable_rng(seed: int, *keys: str) -> np.random.Generator:
    """A generator determined by ``seed`` and string keys (independent of hash randomisation)."""
    digest = hashlib.sha256("\x1f".join(keys).encode()).digest()
    return np.random.default_rng([seed, int.from_bytes(digest[:8], "little")])


def text_rank(seed: int, vignette_id: str, text_key: str) -> bytes:
    """A group's place in its scenario's val/train order: a keyed hash of its normalised text (order-free)."""
    return hashlib.sha256("\x1f".join((str(seed), "split", vignette_id, text_key)).encode()).digest()


def build_targets(reappraisals: pd.DataFrame, ratings_z: pd.DataFrame, dimensions: Sequence[str]) -> pd.DataFrame:
    """One row per reappraisal: ``z_<dim>`` (mean z, NaN if unrated), ``n_<dim>``, ``n_ratings``."""
    agg = ratings_z.groupby(["reappraisal_id", "dimension"])["z"].agg(["mean", "size"]).unstack("dimension")
    out = reappraisals[["reappraisal_id", "vignette_id", "author_type", "study", "text"]].copy()
    for dim in dimensions:
        mean = agg["mean"][dim] if ("mean", dim) in agg.columns else pd.Series(dtype=float)
        size = agg["size"][dim] if ("size", dim) in agg.columns else pd.Series(dtype=float)
        out[f"z_{dim}"] = out["reappraisal_id"].map(mean).astype("float64")
        out[f"n_{dim}"] = out["reappraisal_id"].map(size).fillna(0).astype("int64")
    out["n_ratings"] = out[[f"n_{d}" for d in dimensions]].sum(axis=1).astype("int64")
    return out


class TooFewTexts(ValueError):
    """A training scenario cannot be in train and val; ``key``: the config key behind it, when one is."""

    def __init__(self, message: str, key: str | None = None):
        super().__init__(message)
        self.key = key


def assign_splits(
    targets: pd.DataFrame,
    train_vignettes: Sequence[str],
    *,
    primary_dimension: str,
    val_fraction: float,
    heldout_author_types: Sequence[str],
    min_ratings: int,
    seed: int,
) -> pd.DataFrame:
    """Add a ``split`` column; raise ValueError when a scenario cannot be in both train and val.

    Identical texts (see the module docstring) share one side.
    """
    out = targets.copy()
    out["split"] = "excluded"
    non_human = out["author_type"] != HUMAN
    explicitly_held = out["author_type"].isin(list(heldout_author_types))
    out.loc[non_human | explicitly_held, "split"] = "heldout"
    eligible = ~(non_human | explicitly_held) & (out[f"n_{primary_dimension}"] >= min_ratings)
    in_pool = eligible & out["vignette_id"].isin(list(train_vignettes))
    key = out.loc[in_pool, "text"].map(normalized_text)
    side: dict[str, str] = {}  # normalised text -> the split its group landed in
    for vid in sorted(train_vignettes):
        rows = np.sort(out.index[in_pool & (out["vignette_id"] == vid)].to_numpy())
        keys = key.loc[rows].to_numpy(dtype=object)
        groups = sorted(set(keys), key=lambda g: text_rank(seed, vid, g))  # by content, not by row order
        if len(groups) < 2:
            human = ~(non_human | explicitly_held) & (out["vignette_id"] == vid)
            few = int((human & ~eligible).sum())
            why = (f"; {few} of its {int(human.sum())} human reappraisal(s) have fewer than {min_ratings} "
                   f"{primary_dimension} rating(s) (split.min_ratings_per_reappraisal)") if few else ""
            raise TooFewTexts(
                f"scenario {vid!r} has {len(rows)} usable human reappraisal(s) with {len(groups)} distinct text(s){why}; "
                "at least 2 distinct texts are needed so it appears in train and val",
                key="split.min_ratings_per_reappraisal" if few else None,
            )
        size = {g: int((keys == g).sum()) for g in groups}
        n_val = min(max(1, int(round(val_fraction * len(rows)))), len(rows) - 1)
        n_in_val = sum(size[g] for g in groups if side.get(g) == "val")
        for g in (g for g in groups if g not in side):
            side[g] = "val" if n_in_val < n_val else "train"
            n_in_val += size[g] if side[g] == "val" else 0
        sides = {side[g] for g in groups}
        if sides != {"train", "val"}:
            raise ValueError(
                f"scenario {vid!r}: every one of its {len(groups)} distinct texts is also a reappraisal of an earlier "
                f"scenario, placed in {sides.pop()}, so it cannot appear in both train and val"
            )
    out.loc[key.index, "split"] = key.map(side)
    # Human reappraisals of scenarios outside the training pool are not trained on.
    stray = eligible & ~out["vignette_id"].isin(list(train_vignettes))
    out.loc[stray, "split"] = "heldout"
    return out


def identical_text_groups(targets: pd.DataFrame) -> pd.DataFrame:
    """Train and val reappraisals whose text another one repeats: reappraisal_id, vignette_id, split, text_key."""
    trained = targets[targets["split"].isin(["train", "val"])]
    key = trained["text"].map(normalized_text)
    repeated = key.duplicated(keep=False)
    return trained.loc[repeated, ["reappraisal_id", "vignette_id", "split"]].assign(text_key=key[repeated])


def build_pairs(targets: pd.DataFrame, *, primary_dimension: str, max_pairs_per_scenario: int, seed: int) -> pd.DataFrame:
    """Within-scenario, within-split pairs of human reappraisals with their human margin.

    Exact ties on the primary dimension carry no preference and are skipped,
    and so are two identical texts (counted by :func:`split_summary`). When a
    scenario has more candidate pairs than ``max_pairs_per_scenario``, a
    deterministic uniform sample is kept.
    """
    z_col = f"z_{primary_dimension}"
    rows: list[dict[str, Any]] = []
    human = targets[(targets["split"].isin(["train", "val"])) & targets[z_col].notna()]
    for (split, vid), grp in human.groupby(["split", "vignette_id"], sort=True):
        grp = grp.sort_values("reappraisal_id")
        ids = grp["reappraisal_id"].to_numpy()
        texts = grp["text"].to_numpy()
        keys = grp["text"].map(normalized_text).to_numpy(dtype=object)
        z = grp[z_col].to_numpy()
        i, j = np.triu_indices(len(ids), k=1)
        keep = (z[i] != z[j]) & (keys[i] != keys[j])
        i, j = i[keep], j[keep]
        rng = stable_rng(seed, "pairs", split, vid)
        if len(i) > max_pairs_per_scenario:
            pick = np.sort(rng.choice(len(i), size=max_pairs_per_scenario, replace=False))
            i, j = i[pick], j[pick]
        swap = rng.random(len(i)) < 0.5
        a = np.where(swap, j, i)
        b = np.where(swap, i, j)
        for ai, bi in zip(a, b):
            rows.append(
                {
                    "vignette_id": vid,
                    "split": split,
                    "id_a": ids[ai],
                    "id_b": ids[bi],
                    "text_a": texts[ai],
                    "text_b": texts[bi],
                    "z_a": float(z[ai]),
                    "z_b": float(z[bi]),
                }
            )
    pairs = pd.DataFrame(rows, columns=["vignette_id", "split", "id_a", "id_b", "text_a", "text_b", "z_a", "z_b"])
    pairs["margin"] = (pairs["z_a"] - pairs["z_b"]).abs()
    pairs["preferred"] = np.where(pairs["z_a"] > pairs["z_b"], "A", "B")
    pairs.insert(0, "pair_id", [f"p{k:06d}" for k in range(len(pairs))])
    return pairs


def split_warnings(targets: pd.DataFrame, pairs: pd.DataFrame, vignettes: pd.DataFrame) -> list[dict[str, str]]:
    """Scenarios the split leaves without something to evaluate against (the run goes on; the report shows them).

    ``no_val_pairs``: a training scenario whose validation reappraisals form no
    pair (one reappraisal, or all tied), so held-out pairwise accuracy says
    nothing about it. ``no_heldout_answers``: a scenario with no held-out
    answer (reference or opponent) for a policy's answers to be judged against.
    """
    val_pairs = pairs[pairs["split"] == "val"].groupby("vignette_id").size()
    heldout = targets[targets["split"] == "heldout"].groupby("vignette_id").size()
    out: list[dict[str, str]] = []
    for vid, pool in vignettes.sort_values("vignette_id")[["vignette_id", "pool"]].itertuples(index=False):
        if pool == "train" and int(val_pairs.get(vid, 0)) == 0:
            n_val = int(((targets["vignette_id"] == vid) & (targets["split"] == "val")).sum())
            out.append(
                {
                    "scenario": vid,
                    "pool": pool,
                    "check": "no_val_pairs",
                    "message": f"{n_val} validation reappraisal(s) and no validation pair: held-out accuracy cannot be measured on this scenario",
                }
            )
        if int(heldout.get(vid, 0)) == 0:
            out.append(
                {
                    "scenario": vid,
                    "pool": pool,
                    "check": "no_heldout_answers",
                    "message": "no held-out answer (reference or opponent): a policy's answers here have nothing to be judged against",
                }
            )
    return out


def identical_texts_summary(targets: pd.DataFrame, primary_dimension: str) -> dict[str, Any]:
    """What grouping by text merged: groups of identical train/val texts, and the pairs of them dropped.

    ``groups``: texts held by more than one reappraisal; ``reappraisals``: the
    reappraisals in them (each group on one side); ``across_scenarios``:
    groups spanning scenarios; ``pairs_dropped``: per split, the within-scenario
    pairs of two identical rated texts that :func:`build_pairs` skipped.
    """
    groups = identical_text_groups(targets)
    rated = groups[groups["reappraisal_id"].isin(targets.loc[targets[f"z_{primary_dimension}"].notna(), "reappraisal_id"])]
    same = rated.groupby(["split", "vignette_id", "text_key"]).size()
    dropped = (same * (same - 1) // 2).groupby(level="split").sum()
    return {
        "normalisation": "Unicode NFKC, casefolded, whitespace collapsed",
        "groups": int(groups["text_key"].nunique()),
        "reappraisals": int(len(groups)),
        "across_scenarios": int((groups.groupby("text_key")["vignette_id"].nunique() > 1).sum()),
        "pairs_dropped": {s: int(dropped.get(s, 0)) for s in ("train", "val")},
    }


def split_summary(
    targets: pd.DataFrame, pairs: pd.DataFrame, vignettes: pd.DataFrame | None = None, *, primary_dimension: str | None = None
) -> dict[str, Any]:
    """Counts per split, scenario and author type; with ``vignettes``, also :func:`split_warnings`;
    with ``primary_dimension``, also :func:`identical_texts_summary`."""
    counts = targets.groupby(["vignette_id", "split"]).size().unstack(fill_value=0)
    warnings = split_warnings(targets, pairs, vignettes) if vignettes is not None else []
    identical = {"identical_texts": identical_texts_summary(targets, primary_dimension)} if primary_dimension else {}
    return {
        **identical,
        "warnings": warnings,
        "reappraisals_by_split": {s: int((targets["split"] == s).sum()) for s in SPLITS},
        "heldout_by_author_type": targets[targets["split"] == "heldout"].groupby("author_type").size().astype(int).to_dict(),
        "per_scenario": {vid: {k: int(v) for k, v in row.items()} for vid, row in counts.iterrows()},
        "pairs_by_split": pairs.groupby("split").size().astype(int).to_dict(),
        "pair_margin_quantiles": pairs["margin"].quantile([0.1, 0.5, 0.9]).round(4).to_dict() if len(pairs) else {},
    }
