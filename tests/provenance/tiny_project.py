"""A tiny git + DVC + Snakemake project (two stages) for the run / record / restore tests."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SNAKEFILE = textwrap.dedent('''
    rule all:
        input: "results/total.txt"

    rule double:
        input: "data/in.txt"
        output: "results/double.txt"
        shell: "sleep $(cat data/sleep.txt 2>/dev/null || echo 0); python -c \\"import sys; n = int(open('{input}').read()); open('{output}', 'w').write(str(2 * n))\\""

    rule total:
        input: "results/double.txt"
        output: "results/total.txt"
        shell: "python -c \\"n = int(open('{input}').read()); open('{output}', 'w').write(str(n + 1))\\""
''')

DVC_YAML = textwrap.dedent('''
    stages:
      double:
        cmd: snakemake --cores 1 --allowed-rules double -- results/double.txt
        deps: [data/in.txt]
        params:
        - config.yaml:
          - factor
        outs: [results/double.txt]
      total:
        cmd: snakemake --cores 1 --allowed-rules total -- results/total.txt
        deps: [results/double.txt]
        outs: [results/total.txt]
''')


def make_project(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "Snakefile").write_text(SNAKEFILE)
    (dest / "dvc.yaml").write_text(DVC_YAML)
    (dest / "config.yaml").write_text("factor: 2\n")
    (dest / "data").mkdir()
    (dest / "data" / "in.txt").write_text("20")
    shutil.copytree(REPO / ".dvc", dest / ".dvc", ignore=shutil.ignore_patterns("tmp", "cache", "config.local"))
    subprocess.run(["git", "init", "-q"], cwd=dest, check=True)
    return dest


def reappraisal(cwd: Path, *args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reappraisal", *args], cwd=cwd, capture_output=True, text=True, **kw)


def dvc(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dvc", *args], cwd=cwd, capture_output=True, text=True)
