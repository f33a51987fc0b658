"""DVC's commands on a built demo with ruamel.yaml's C parser (``ruamel.yaml.clib``) and without it, side by side.

DVC parses ``dvc.yaml`` and ``dvc.lock`` with ruamel.yaml, many times per command; ruamel.yaml uses its C
parser when ``ruamel.yaml.clib`` is installed (requirements.lock pins it) and its pure-Python parser otherwise.
The baseline hides the C parser (a ``_ruamel_yaml`` module that fails to import, first on ``PYTHONPATH``), so
both arms run the same installed packages on the same build. Copies the built demo (``--demo``: a folder where
`reappraisal run results/report.html` finished, e.g. the suite's `pytest-of-*/pytest-current/demo/repo` or this
repository after `bash scripts/demo.sh`), commits it in the copy, then per round and arm, alternating:

- `dvc status` (every stage's dependencies against dvc.lock),
- `reappraisal record` (the DVC record at the end of every `reappraisal run`),
- `dvc exp run --temp -S ...summary.confidence=<new>` (the README's experiment: the summary's stages rerun in a
  temporary copy; a value not run before, so DVC's run cache cannot skip them).

    python benchmarks/bench_dvc_yaml.py --demo /tmp/pytest-of-root/pytest-current/demo/repo --rounds 2

Prints each timing, then per command the median of each arm and their ratio. Run it with nothing else on the
machine.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PYTHON = REPO / ".venv" / "bin" / "python"
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]


def hide_c_parser(folder: Path) -> Path:
    """A folder whose ``_ruamel_yaml`` fails to import: ruamel.yaml then falls back to its pure-Python parser."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "_ruamel_yaml.py").write_text('raise ImportError("the C parser is hidden for the baseline")\n')
    return folder


def arm_env(hidden: Path | None) -> dict[str, str]:
    env = dict(os.environ, PATH=f"{PYTHON.parent}{os.pathsep}{os.environ['PATH']}")
    env.pop("PYTHONPATH", None)
    if hidden is not None:
        env["PYTHONPATH"] = str(hidden)
    return env


def parser_in_use(env: dict[str, str]) -> str:
    out = subprocess.run([str(PYTHON), "-c", "import ruamel.yaml; print(ruamel.yaml.YAML(typ='safe').Parser.__module__)"],
                         env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed in {cwd}:\n{(proc.stdout + proc.stderr)[-3000:]}")
    return seconds


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--demo", type=Path, required=True, help="a built demo (results/report.html and dvc.lock)")
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args(argv)
    if not (a.demo / "dvc.lock").is_file() or not (a.demo / "results" / "report.html").is_file():
        raise SystemExit(f"{a.demo}: no built demo there (dvc.lock and results/report.html)")
    work = Path(tempfile.mkdtemp(prefix="bench_dvc_yaml_"))
    repo = work / "repo"
    shutil.copytree(a.demo, repo, symlinks=True)
    if not (repo / ".git").exists():
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run([*GIT, "commit", "-qm", "the demo build", "--allow-empty"], cwd=repo, check=True)
    arms = {"C parser": arm_env(None), "pure Python": arm_env(hide_c_parser(work / "hidden"))}
    for name, env in arms.items():
        print(f"{name}: ruamel.yaml's parser is {parser_in_use(env)}")
    commands = {
        "dvc status": lambda n: [str(PYTHON), "-m", "dvc", "status", "-q"],
        "reappraisal record": lambda n: [str(PYTHON), "-m", "reappraisal", "record"],
        "dvc exp run --temp": lambda n: [str(PYTHON), "-m", "dvc", "exp", "run", "--temp", "-n", f"bench{n}", "-S",
                                         f"config.yaml:+presets.demo.summary.confidence={0.9 + n / 1000}"],
    }
    seconds: dict[tuple[str, str], list[float]] = {}
    n = 0
    for r in range(a.rounds):
        order = list(arms) if r % 2 == 0 else list(reversed(arms))
        for command, cmd in commands.items():
            for name in order:
                n += 1
                s = timed(cmd(n), repo, arms[name])
                seconds.setdefault((command, name), []).append(s)
                print(f"round {r + 1}  {command:20s} {name:12s} {s:7.2f} s", flush=True)
    print("\n| command | C parser (median) | pure Python (median) | ratio |\n|---|---|---|---|")
    for command in commands:
        fast, slow = (statistics.median(seconds[(command, arm)]) for arm in arms)
        print(f"| `{command}` | {fast:.2f} s | {slow:.2f} s | {fast / slow:.2f} |")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
