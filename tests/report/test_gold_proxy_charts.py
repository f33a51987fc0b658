"""The report's gold/proxy figures draw the scorers' raw outputs the policy climbs, never the normalised reward."""

from __future__ import annotations

import matplotlib.axes
import numpy as np
import pandas as pd

from reappraisal.report import charts


def test_the_kl_figure_draws_the_raw_scorers_not_the_group_normalised_reward(monkeypatch):
    n = 40
    t = np.linspace(0, 1, n)
    log = pd.DataFrame({"step": np.arange(1, n + 1), "kl": 0.04 * t, "gold": 0.3 - 0.5 * t,
                        "reward": np.full(n, -0.37), "rm_score": 0.1 + 0.2 * t, "grm_score": 0.45 + 0.1 * t})
    drawn = []
    plot = matplotlib.axes.Axes.plot

    def spy(self, *args, **kwargs):
        drawn.append(np.asarray(args[1], float))
        return plot(self, *args, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "plot", spy)
    charts.gold_proxy_against_kl({"committee": log}, name="kl", title="t")
    window = n // 8
    for column in ("gold", "rm_score", "grm_score"):
        expected = log[column].rolling(window, min_periods=1).mean().to_numpy()
        assert any(np.allclose(y, expected) for y in drawn), column
    assert not any(np.allclose(y, -0.37) for y in drawn)  # the flat normalised reward is not the proxy
