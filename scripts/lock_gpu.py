"""Resolve ``requirements-gpu.lock``: the cluster's environment (Linux x86_64, CUDA torch, vLLM, DeepSpeed).

    python scripts/lock_gpu.py            # resolve and write requirements-gpu.lock (needs the package index)
    python scripts/lock_gpu.py --check    # resolve again and fail when the committed lock differs

The resolver is uv's (``uv pip compile`` for a target platform: no GPU and no CUDA needed to resolve; ``pip
install uv`` where it is missing). Its input is the package's runtime dependencies (``pyproject.toml``) plus
vLLM in the range TRL 1.16 supports, constrained by every pin of the CPU lock (``requirements.lock``, the
``+cpu`` label dropped: PyPI's Linux x86_64 torch is the CUDA build). So each package the two locks share has
one version in both, or the resolution fails naming the conflict; a difference the cluster needs is declared
in ``DIFFERENCES`` (the package is then resolved freely and the lock's header lists it), never taken silently.
``--exclude-newer`` fixes the index as of ``INDEX_DATE``, so the same command gives the same lock later.

Why Python 3.13 (the CPU lock's is 3.11): vLLM >= 0.27 depends on mistral-common, which caps numpy below 2.4
on Python < 3.13, while the CPU lock pins numpy 2.4.6 (snakemake-executor-plugin-slurm 2.8.0 needs >= 2.4.5).
On 3.11 the resolver has to take numpy 2.3.5 and the SLURM plugin back to 1.4.0 (its 1.5-2.6 releases want
pandas < 3); on 3.13 every shared pin agrees. Why glibc >= 2.31 (``manylinux_2_31``): vLLM's llguidance has
x86_64 wheels for no older glibc, and every package but the pure-Python ``SOURCE_ONLY`` ones must install from
a wheel. ``CONFLICTS`` lists what the resolver refused on the way.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CPU_LOCK = REPO / "requirements.lock"
GPU_LOCK = REPO / "requirements-gpu.lock"
PYTHON = "3.13"
PLATFORM = "x86_64-manylinux_2_31"
INDEX_DATE = "2026-12-05"
#: TRL 1.16's supported range (trl/import_utils.py, is_vllm_available); the resolver picks the newest that fits.
VLLM = "vllm>=0.22,<=0.31"
#: The only packages installed from source (pure Python, no compiler): every other one must have a wheel for
#: the platform, so that a compute node installs the lock without a toolchain.
SOURCE_ONLY = ("antlr4-python3-runtime", "connection-pool", "deepspeed")
#: Packages whose GPU version may differ from the CPU lock's, each with why. Empty: every shared pin agrees.
DIFFERENCES: dict[str, str] = {}
#: What the resolver refused while this lock was made (uv's reasons, shortened), for the lock's header.
CONFLICTS = (
    "vllm 0.31.0 requires transformers>=5.10.4,<5.18 (the locks pin 5.23.0): the resolver takes vllm 0.30.0",
    "vllm 0.22.0-0.26.0 require torch==2.11.0 (the locks pin 2.13.0)",
    "vllm 0.32.0 requires transformers<5.20 and 0.33.0-0.34.0 torch==2.14.0; all are beyond TRL 1.16's 0.22-0.31",
    "on Python 3.11/3.12 mistral-common (vllm>=0.27) requires numpy<2.4 against the pinned 2.4.6, which "
    "snakemake-executor-plugin-slurm 2.8.0 requires (>=2.4.5); hence Python 3.13",
    "llguidance 1.7.x (vllm>=0.26 requires <1.8) has x86_64 wheels for glibc >= 2.31 only: on a manylinux_2_28 "
    "(glibc 2.28, RHEL 8) node it would build from source with Rust; hence manylinux_2_31",
)


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(lines) -> dict[str, str]:
    """``name==version`` lines as {canonical name: version} (comments and markers dropped, local label kept)."""
    out = {}
    for line in lines:
        line = line.split("#", 1)[0].split(";", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            out[canonical(name)] = version.strip()
    return out


def inputs(work: Path) -> tuple[Path, Path]:
    """The requirements (runtime dependencies + vLLM) and the constraints (the CPU lock's pins) files."""
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    relaxed = {canonical(d) for d in DIFFERENCES}
    reqs = [re.split(r"[=<>!~ ]", d, maxsplit=1)[0] if canonical(re.split(r"[=<>!~ ]", d, maxsplit=1)[0]) in relaxed
            else d for d in deps]
    cpu = pins(CPU_LOCK.read_text().splitlines())
    constraints = [f"{name}=={version.split('+', 1)[0]}" for name, version in sorted(cpu.items()) if name not in relaxed]
    (work / "requirements.in").write_text("\n".join([*reqs, VLLM]) + "\n")
    (work / "constraints.txt").write_text("\n".join(constraints) + "\n")
    return work / "requirements.in", work / "constraints.txt"


def uv() -> list[str]:
    if shutil.which("uv"):
        return ["uv"]
    if subprocess.run([sys.executable, "-m", "uv", "--version"], capture_output=True).returncode == 0:
        return [sys.executable, "-m", "uv"]
    raise SystemExit("uv is needed to resolve the GPU lock: pip install uv")


def header(resolved: dict[str, str]) -> str:
    cpu = pins(CPU_LOCK.read_text().splitlines())
    lines = [
        "# The cluster's environment: Linux x86_64 (glibc >= 2.31), CUDA torch (PyPI's build), vLLM, DeepSpeed. Generated by",
        "# scripts/lock_gpu.py (uv pip compile; do not edit by hand):",
        f"#   uv pip compile --python-version {PYTHON} --python-platform {PLATFORM} --exclude-newer {INDEX_DATE}",
        f"#     --only-binary :all: --no-binary {','.join(SOURCE_ONLY)} (pure Python: no compiler needed)",
        "#     (pyproject.toml's dependencies + " + VLLM + ") -c (requirements.lock's pins)",
        f"# python: {PYTHON}",
        f"# platform: {PLATFORM}",
        f"# vllm: {resolved.get('vllm')} (TRL 1.16 supports 0.22-0.31)",
        "# Every package both locks pin has the same version in both, except the differences below;",
        "# torch is PyPI's CUDA build of the same release (requirements.lock pins its +cpu build).",
    ]
    for name, why in sorted(DIFFERENCES.items()):
        lines.append(f"# differs: {name}=={resolved.get(canonical(name))} (requirements.lock: "
                     f"{cpu.get(canonical(name))}): {why}")
    if not DIFFERENCES:
        lines.append("# differs: none")
    lines.append("# Conflicts the resolver refused on the way:")
    lines += [f"#   - {c}" for c in CONFLICTS]
    lines.append("# Install: python3.13 -m venv .venv-gpu && .venv-gpu/bin/pip install --no-deps -r requirements-gpu.lock")
    lines.append("#   && .venv-gpu/bin/pip install --no-deps -e .     (DS_BUILD_OPS=0 for DeepSpeed: its kernels build on the GPU)")
    return "\n".join(lines) + "\n"


def resolve(out: Path) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        reqs, constraints = inputs(Path(tmp))
        body = Path(tmp) / "lock.txt"
        cmd = [*uv(), "pip", "compile", str(reqs), "-c", str(constraints), "--python-version", PYTHON,
               "--python-platform", PLATFORM, "--exclude-newer", INDEX_DATE, "--only-binary", ":all:",
               "--no-binary", ",".join(SOURCE_ONLY), "--no-header", "--no-annotate", "--quiet", "-o", str(body)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            sys.stderr.write(done.stderr)
            raise SystemExit("the GPU lock does not resolve (above); a package the cluster must take at another "
                             "version than requirements.lock goes into DIFFERENCES with its reason")
        text = body.read_text()
    resolved = pins(text.splitlines())
    return header(resolved) + text


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="resolve again and compare with the committed lock")
    args = ap.parse_args(argv)
    text = resolve(GPU_LOCK)
    if args.check:
        if GPU_LOCK.read_text() != text:
            print(f"{GPU_LOCK.name} is not what the resolver gives now: run python scripts/lock_gpu.py", file=sys.stderr)
            return 1
        print(f"{GPU_LOCK.name} is up to date")
        return 0
    GPU_LOCK.write_text(text)
    print(f"wrote {GPU_LOCK.name}: {len(pins(text.splitlines()))} pins, vllm {pins(text.splitlines()).get('vllm')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
