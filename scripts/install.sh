#!/usr/bin/env bash
# Create .venv and install the pinned environment (idempotent, offline-safe
# apart from package registries) from requirements.lock: torch 2.13.0 is its CPU
# build. A GPU cluster installs requirements-gpu.lock instead (docs/paper.md).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.installed-$(cat requirements.lock pyproject.toml | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  # torch first, alone, so nothing else resolves a different build of it.
  .venv/bin/python -m pip install -q "torch==2.13.0"
  # DeepSpeed compiles no kernels at install time (they are JIT-built on GPU).
  DS_BUILD_OPS=0 .venv/bin/python -m pip install -q -r requirements.lock
  .venv/bin/python -m pip install -q --no-deps -e .
  rm -f .venv/.installed-*
  touch "$stamp"
fi
