"""The report's figures: matplotlib (Agg backend) drawing inline SVG.

Each function takes the summary's rows as a DataFrame and returns one SVG
document as text (no XML prolog, so it can sit inside HTML). Output is
deterministic: no date in the metadata, and a fixed per-figure hash salt so
the ids of two figures on one page never collide.
"""

from __future__ import annotations

import io
import math
from typing import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")  # before pyplot: no display, no GUI toolkit

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

PALETTE = ("#1f5fa6", "#c0392b", "#2e8b57", "#8e44ad", "#d68910", "#566573", "#117a65", "#a04000")

plt.rcParams.update(
    {
        "font.family": "DejaVu Sans",
        "font.size": 9,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.grid": True,
        "grid.color": "#e5e5e5",
        "grid.linewidth": 0.6,
        "svg.fonttype": "path",  # glyphs as paths: the SVG needs no font to render
    }
)


def colors(names: Sequence[str]) -> dict[str, str]:
    return {n: PALETTE[i % len(PALETTE)] for i, n in enumerate(names)}


def to_svg(fig, name: str, label: str) -> str:
    """The figure as an inline SVG element with an accessible label; the figure is closed."""
    buf = io.StringIO()
    with plt.rc_context({"svg.hashsalt": name}):
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    return text.replace("<svg ", f'<svg role="img" aria-label="{_attr(label)}" ', 1)


def _attr(s: str) -> str:
    return s.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


#: Training-log columns drawn per step, with the axis label (those present are drawn).
TRAINING_METRICS: tuple[tuple[str, str], ...] = (
    ("reward", "reward (mean)"),
    ("reward_std", "reward std within groups"),
    ("kl", "KL to reference"),
    ("entropy", "entropy"),
    ("frac_reward_zero_std", "groups with zero reward std"),
    ("clipped_ratio", "completions truncated"),
    ("gate_pass_rate", "format-gate pass rate"),
    ("completion_mean_length", "completion length (tokens)"),
)


def training_curves(logs: Mapping[str, pd.DataFrame], *, name: str, title: str) -> str:
    """Small multiples, one panel per training metric, one line per arm (x = optimizer step)."""
    present = [(c, lab) for c, lab in TRAINING_METRICS if any(c in log.columns for log in logs.values())]
    if not present:
        raise ValueError("no known training metric in any log")
    ncols = 4
    nrows = math.ceil(len(present) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(10.5, 2.3 * nrows), squeeze=False)
    palette = colors(list(logs))
    for ax, (col, label) in zip(axes.flat, present):
        for arm, log in logs.items():
            if col in log.columns and "step" in log.columns:
                d = log[["step", col]].apply(pd.to_numeric, errors="coerce").dropna()
                ax.plot(d["step"], d[col], marker="o" if len(d) <= 30 else None, ms=2.5, lw=1.3, color=palette[arm], label=arm)
        ax.set_title(label, fontsize=8.5, loc="left")
        ax.tick_params(labelsize=7.5)
        ax.set_xlabel("step", fontsize=7.5)
    for ax in list(axes.flat)[len(present):]:
        ax.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, frameon=False, fontsize=8, ncol=len(labels), loc="upper right", bbox_to_anchor=(1.0, 1.04))
    fig.suptitle(title, fontsize=9.5, x=0.01, ha="left", y=1.04)
    fig.tight_layout()
    return to_svg(fig, name, title)


def agreement_by_margin(judges: Mapping[str, Sequence[Mapping]], *, name: str, title: str) -> str:
    """Judge agreement with humans per human-margin bin, one line per judge (marker area ∝ pairs)."""
    fig, ax = plt.subplots(figsize=(5.4, 3.0))
    palette = colors(list(judges))
    for judge, bins in judges.items():
        bins = [b for b in bins if b.get("agreement") is not None]
        if not bins:
            continue
        labels = [str(b["bin"]) for b in bins]
        ax.plot(labels, [float(b["agreement"]) for b in bins], color=palette[judge], lw=1.3, label=judge)
        ax.scatter(labels, [float(b["agreement"]) for b in bins], s=[8 + 2 * float(b.get("n", 0)) ** 0.5 * 4 for b in bins],
                   color=palette[judge], zorder=3)
    ax.axhline(0.5, color="#888", lw=0.8, ls=":")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("human margin (|z| gap) bin")
    ax.set_ylabel("agreement with humans")
    ax.set_title(title, fontsize=9.5, loc="left")
    ax.legend(frameon=False, fontsize=8)
    return to_svg(fig, name, title)


def forest_plot(df: pd.DataFrame, *, label: str = "label", name: str, title: str, xlabel: str,
                bar: float | None = None, low: str = "headline_low", high: str = "headline_high",
                group: str = "arm", width: float = 7.2, row_height: float = 0.28) -> str:
    """One row per ``label`` (e.g. arm vs opponent): point ``win_rate`` and its interval, coloured by ``group``;
    dashed line at ``bar``, dotted at 0.5; ``xlabel`` names the interval. ``width`` and ``row_height`` (inches)
    size it for its column."""
    rows = df.reset_index(drop=True)
    groups = list(dict.fromkeys(rows[group].astype(str)))
    palette = colors(groups)
    fig, ax = plt.subplots(figsize=(width, 0.8 + row_height * len(rows)))
    y = np.arange(len(rows))[::-1]
    for i, r in rows.iterrows():
        wr, lo, hi = (float(r[c]) if pd.notna(r[c]) else np.nan for c in ("win_rate", low, high))
        color = palette[str(r[group])]
        if np.isfinite(lo) and np.isfinite(hi):
            ax.plot([lo, hi], [y[i], y[i]], color=color, lw=1.6, solid_capstyle="butt")
        ax.plot([wr], [y[i]], "o", color=color, ms=5)
    ax.axvline(0.5, color="#888", lw=0.8, ls=":")
    if bar is not None and math.isfinite(bar):
        ax.axvline(bar, color="#555", lw=0.9, ls="--")
        ax.annotate(f"bar {bar:g}", xy=(bar, 1.0), xycoords=("data", "axes fraction"), fontsize=7.5, ha="left",
                    va="bottom", color="#555")
    ax.set_yticks(y, rows[label].astype(str).tolist(), fontsize=8)
    ax.set_xlim(-0.02, 1.02)
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=9.5, loc="left", pad=14)
    ax.grid(axis="y", visible=False)
    return to_svg(fig, name, title)


def interval_small_multiples(df: pd.DataFrame, *, facet: str, category: str, group: str = "arm", name: str,
                             title: str, bar: float | None = None, ncols: int = 2) -> str:
    """One panel per ``facet`` value (e.g. opponent): win rate and interval per ``category``, one colour per
    ``group``; shared y axis, one legend."""
    facets = list(dict.fromkeys(df[facet].astype(str)))
    groups = list(dict.fromkeys(df[group].astype(str)))
    palette = colors(groups)
    ncols = max(1, min(ncols, len(facets)))
    nrows = math.ceil(len(facets) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(10.0, 2.5 * nrows), squeeze=False, sharey=True)
    step = 0.7 / max(1, len(groups))
    for ax, f in zip(axes.flat, facets):
        part = df[df[facet].astype(str) == f]
        cats = list(dict.fromkeys(part[category].astype(str)))
        for gi, g in enumerate(groups):
            rows = part[part[group].astype(str) == g]
            if rows.empty:
                continue
            x = np.array([cats.index(str(c)) for c in rows[category]]) + (gi - (len(groups) - 1) / 2) * step
            yv = rows["win_rate"].to_numpy(float)
            lo = np.clip(yv - rows["ci_low"].to_numpy(float), 0, None)
            hi = np.clip(rows["ci_high"].to_numpy(float) - yv, 0, None)
            ax.errorbar(x, yv, yerr=[np.nan_to_num(lo), np.nan_to_num(hi)], fmt="o", ms=3.5, capsize=2, lw=1.0,
                        color=palette[g], label=g)
        ax.axhline(0.5, color="#888", lw=0.8, ls=":")
        if bar is not None and math.isfinite(bar):
            ax.axhline(bar, color="#555", lw=0.9, ls="--")
        crowded = max(map(len, cats), default=0) > 6 or len(cats) * max(map(len, cats), default=0) > 45
        ax.set_xticks(range(len(cats)), cats, rotation=60 if crowded else 0, ha="right" if crowded else "center",
                      fontsize=7 if crowded else 7.5)
        ax.set_xlim(-0.6, len(cats) - 0.4)
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(f, fontsize=8.5, loc="left")
        ax.tick_params(labelsize=7.5)
    for ax in list(axes.flat)[len(facets):]:
        ax.set_visible(False)
    handles = [plt.Line2D([], [], marker="o", ls="", color=palette[g], label=g) for g in groups]
    fig.legend(handles=handles, frameon=False, fontsize=8, ncol=min(5, len(groups)), loc="upper right",
               bbox_to_anchor=(1.0, 1.02))
    fig.suptitle(title, fontsize=9.5, x=0.01, ha="left", y=1.02)
    fig.tight_layout()
    return to_svg(fig, name, title)


#: Proxy series of the gold/proxy chart: (training-log column, label, axis) where axis "left" shares the gold's
#: z units and "right" is a win rate.
PROXY_SERIES: tuple[tuple[str, str, str], ...] = (
    ("rm_score", "proxy: ensemble score (z)", "left"),
    ("grm_score", "proxy: GRM win rate vs median human (right axis)", "right"),
)


def _gold_panels(logs: Mapping[str, pd.DataFrame], *, max_columns: int, row_height: float):
    """The arms whose training log carries gold, and a grid with one panel for each (at most ``max_columns``
    a row)."""
    arms = [a for a, log in logs.items() if "gold" in log.columns and log["gold"].notna().any()]
    if not arms:
        raise ValueError("no training log carries a gold column")
    ncols = min(max_columns, len(arms))
    nrows = math.ceil(len(arms) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(10.5, row_height * nrows), squeeze=False)
    return arms, fig, axes


def _finish_panels(fig, axes, used: int, handles: Mapping[str, object], *, name: str, title: str,
                   top: float = 1.06) -> str:
    """A grid of per-arm panels finished alike: unused panels hidden, one legend and the title above, as SVG."""
    for ax in list(axes.flat)[used:]:
        ax.set_visible(False)
    fig.legend(list(handles.values()), list(handles), frameon=False, fontsize=7.5, ncol=len(handles),
               loc="upper right", bbox_to_anchor=(1.0, top))
    fig.suptitle(title, fontsize=9.5, x=0.01, ha="left", y=top)
    fig.tight_layout()
    return to_svg(fig, name, title)


def gold_proxy_curves(logs: Mapping[str, pd.DataFrame], *, name: str, title: str) -> str:
    """Gao et al.'s picture, one panel per arm: the gold scorer's mean quality of the completions and each proxy
    the arm is optimised against, per optimizer step (faint: each step; solid: running mean over about an eighth
    of the run), with √KL to the reference at the last step under the axis."""
    arms, fig, axes = _gold_panels(logs, max_columns=3, row_height=2.7)
    legend: dict[str, object] = {}
    series = (("gold", "gold: expected quality (z)", "#b8860b", "left"),
              *((col, label, PALETTE[i], axis) for i, (col, label, axis) in enumerate(PROXY_SERIES)))
    for ax, arm in zip(axes.flat, arms):
        log = logs[arm].apply(pd.to_numeric, errors="coerce")
        step = log["step"]
        window = max(1, len(log) // 8)
        right = None
        for col, label, color, axis in series:
            if col not in log.columns or not log[col].notna().any():
                continue
            target = ax
            if axis == "right":
                right = right or ax.twinx()
                target = right
                right.set_ylim(-0.02, 1.02)
                right.tick_params(labelsize=7)
                right.grid(False)
            target.plot(step, log[col], color=color, lw=0.6, alpha=0.3)
            (line,) = target.plot(step, log[col].rolling(window, min_periods=1).mean(), color=color, lw=1.8,
                                  ls="--" if axis == "right" else "-")
            legend.setdefault(label, line)
        if "kl" in log.columns and log["kl"].notna().any():
            kl = np.sqrt(np.clip(log["kl"].dropna().to_numpy(float), 0, None))
            ax.set_xlabel(f"step (√KL at the last step {kl[-1]:.3f})", fontsize=7.5)
        else:
            ax.set_xlabel("step", fontsize=7.5)
        ax.set_ylabel("z units", fontsize=7.5)
        ax.set_title(arm, fontsize=8.5, loc="left")
        ax.tick_params(labelsize=7.5)
    return _finish_panels(fig, axes, len(arms), legend, name=name, title=title, top=1.06)


def gold_proxy_against_kl(logs: Mapping[str, pd.DataFrame], *, name: str, title: str) -> str:
    """Gao et al.'s axes, one panel per arm: gold and the raw proxies the arm climbs (the ensemble's score; the
    GRM's win rate on the right axis; running means over about an eighth of the run) against √KL to the reference
    (its running mean); an arm without KL (β = 0) is drawn against the step. The group-normalised ``reward`` is
    not drawn: its running mean cannot rise (:mod:`reappraisal.summary.overoptimization`)."""
    arms, fig, axes = _gold_panels(logs, max_columns=4, row_height=2.5)
    handles = {}
    for ax, arm in zip(axes.flat, arms):
        log = logs[arm].apply(pd.to_numeric, errors="coerce")
        window = max(2, len(log) // 8)
        has_kl = "kl" in log.columns and log["kl"].notna().any()
        x = np.sqrt(np.clip(log["kl"].rolling(window, min_periods=1).mean(), 0, None)) if has_kl else log["step"]
        (g,) = ax.plot(x, log["gold"].rolling(window, min_periods=1).mean(), color="#b8860b", lw=1.6)
        handles.setdefault("gold: expected quality (z)", g)
        right = None
        for i, (col, label, axis) in enumerate(PROXY_SERIES):
            if col not in log.columns or not log[col].notna().any():
                continue
            target = ax
            if axis == "right":
                right = right or ax.twinx()
                target = right
                right.tick_params(labelsize=7)
                right.grid(False)
            (p,) = target.plot(x, log[col].rolling(window, min_periods=1).mean(), color=PALETTE[i], lw=1.4, ls="--")
            handles.setdefault(label, p)
        ax.set_xlabel("√KL to the reference" if has_kl else "step (no KL logged at β = 0)", fontsize=7.5)
        ax.set_ylabel("z units", fontsize=7.5)
        ax.set_title(arm, fontsize=8.5, loc="left")
        ax.tick_params(labelsize=7.5)
    return _finish_panels(fig, axes, len(arms), handles, name=name, title=title, top=1.06)


def truth_against_kl(frame: pd.DataFrame, *, name: str, title: str) -> str:
    """Gao et al.'s picture from truths, one panel per arm: the gold gain over the start of fresh answers at
    each kept checkpoint (with ±1.96 Monte Carlo standard errors) and the fitted d(α − β log d), and the raw
    proxy on the start's fixed scale (right axis), against √KL to the start
    (:mod:`reappraisal.summary.trajectory`)."""
    from ..summary.trajectory import gao_fit

    arms = sorted(frame["arm"].unique())
    ncols = min(4, len(arms))
    nrows = math.ceil(len(arms) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(10.5, 2.6 * nrows), squeeze=False)
    handles = {}
    for ax, arm in zip(axes.flat, arms):
        rows = frame[frame["arm"] == arm].sort_values("step")
        d = rows["sqrt_kl"].to_numpy(float)
        gain = rows["gold_gain"].to_numpy(float)
        se = rows["gold_se"].to_numpy(float)
        g = ax.errorbar(d, gain, yerr=1.96 * se, color="#b8860b", marker="o", ms=3.5, lw=1.4, capsize=2)
        handles.setdefault("gold gain over the start (fresh draws, ±1.96 se)", g)
        for x, y, step in zip(d, gain, rows["step"]):
            ax.annotate(str(int(step)), (x, y), textcoords="offset points", xytext=(3, 3), fontsize=6)
        alpha, beta = gao_fit(d, gain)
        if np.isfinite(alpha) and d.max() > 0:
            grid = np.linspace(1e-3, d.max(), 200)
            (f,) = ax.plot(grid, grid * (alpha - beta * np.log(grid)), color="#b8860b", lw=0.9, ls=":")
            handles.setdefault("Gao's fit d(α − β log d)", f)
        ax.axhline(0, color="#999", lw=0.6)
        if rows["proxy"].notna().any():
            right = ax.twinx()
            (p,) = right.plot(d, rows["proxy"], color=PALETTE[0], lw=1.3, ls="--", marker="s", ms=3)
            handles.setdefault("proxy: the arm's raw scorers on the start's scale (right axis)", p)
            right.tick_params(labelsize=7)
            right.grid(False)
        ax.set_xlabel("√KL to the start (sampled)", fontsize=7.5)
        ax.set_ylabel("gold gain (z units)", fontsize=7.5)
        ax.set_title(arm, fontsize=8.5, loc="left")
        ax.tick_params(labelsize=7.5)
    return _finish_panels(fig, axes, len(arms), handles, name=name, title=title, top=1.08)
