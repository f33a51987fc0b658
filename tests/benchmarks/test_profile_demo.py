"""The demo profile: a profiled command leaves its profile, and the table reads it back per rule."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_a_profiled_command_is_tabled_under_its_rule(tmp_path):
    sys.path.insert(0, str(REPO / "benchmarks"))
    from profile_demo import markdown, summarize

    env = {"REAPPRAISAL_PROFILE_DIR": str(tmp_path / "profiles"), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-m", "reappraisal", "gold", "--help"], env=env, capture_output=True,
                          text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    unprofiled = subprocess.run([sys.executable, "-m", "reappraisal", "gold", "--help"], capture_output=True,
                                text=True, cwd=REPO, env={"PATH": "/usr/bin:/bin"})
    assert unprofiled.stdout == proc.stdout  # the command's own output is the same either way
    rows = summarize(tmp_path / "profiles", {"gold": 1.5})
    assert [(r["rule"], r["jobs"], r["job_s"]) for r in rows] == [("gold", 1, 1.5)]
    assert rows[0]["wall_s"] > 0 and len(rows[0]["top"]) == 5
    assert "| gold | 1 | 2 |" in markdown(rows, 3.0, "abc1234")
