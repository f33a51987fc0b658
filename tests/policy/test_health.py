"""Per-step training log and health verdict."""

import math

from reappraisal.policy.health import health_verdict, training_log_rows
from reappraisal.settings import HealthSettings


def _row(step, **kw):
    base = dict(step=step, reward=0.0, reward_std=0.8, kl=0.01, entropy=1.0, frac_reward_zero_std=0.0,
                clipped_ratio=0.05, gate_pass_rate=0.9)
    base.update(kw)
    return base


T = HealthSettings(kl_max=0.5, entropy_min_ratio=0.3, reward_std_min=0.05, frac_zero_std_max=0.5,
                     clipped_ratio_max=0.2, gate_pass_min=0.5, window=2)


def test_healthy_run():
    v = health_verdict([_row(s) for s in range(1, 6)], T)
    assert v["verdict"] == "healthy" and v["failed"] == []


def test_each_failure_is_named():
    rows = [_row(1), _row(2), _row(3, kl=0.9), _row(4, entropy=0.1, reward_std=0.0, frac_reward_zero_std=1.0,
                                                   clipped_ratio=0.5, gate_pass_rate=0.2),
            _row(5, entropy=0.1, reward_std=0.0, frac_reward_zero_std=1.0, clipped_ratio=0.5, gate_pass_rate=0.2)]
    v = health_verdict(rows, T)
    assert v["verdict"] == "unhealthy"
    assert v["failed"] == ["entropy_alive", "format_ok", "kl_bounded", "reward_std_alive", "truncation_low"]
    assert v["checks"]["kl_bounded"]["value"] == 0.9


def test_missing_metric_fails_and_no_data():
    v = health_verdict([_row(1, kl=math.nan), _row(2, kl=math.nan)], T)
    assert "kl_bounded" in v["failed"]
    assert health_verdict([], T)["verdict"] == "no_data"


def test_log_rows_from_trl_history():
    hist = [
        {"step": 1, "reward": 0.1, "reward_std": 0.5, "kl": 0.0, "entropy": 1.2, "completions/clipped_ratio": 0.25,
         "committee/gate_pass_rate": 0.75, "frac_reward_zero_std": 0.0},
        {"step": 1, "train_runtime": 3.0},  # summary entries are skipped
        {"step": 2, "reward": 0.3, "reward_std": 0.4},
        {"step": 2, "reward": 0.4, "reward_std": 0.4},  # a resumed run re-logs a step: latest wins
    ]
    rows = training_log_rows(hist)
    assert [r["step"] for r in rows] == [1, 2]
    assert rows[0]["clipped_ratio"] == 0.25 and rows[0]["gate_pass_rate"] == 0.75
    assert rows[1]["reward"] == 0.4 and math.isnan(rows[1]["kl"])


def test_thresholds_from_config():
    t = HealthSettings.from_config({"kl_max": 2.0, "window": 5})
    assert t.kl_max == 2.0 and t.window == 5 and t.entropy_min_ratio == HealthSettings().entropy_min_ratio == 0.3
