#!/usr/bin/env bash
# Install (idempotent), build results/report.html on the offline demo preset and record the build in DVC.
# The same command resumes after any kill (see `reappraisal run --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
exec .venv/bin/python -m reappraisal run results/report.html "$@"
