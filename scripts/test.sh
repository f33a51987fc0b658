#!/usr/bin/env bash
# Install (idempotent) and run the whole test suite; exits non-zero on any failure.
# One pytest-xdist worker per core, each test file on one worker (its module and session fixtures built
# once there); the workers share one demo build (tests/conftest.py). `-n 0` runs in one process.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
exec .venv/bin/python -m pytest -n auto --dist loadfile "$@"
