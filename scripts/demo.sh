#!/usr/bin/env bash
# Install (idempotent) and build results/report.html on the offline demo preset.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
exec .venv/bin/snakemake --cores all results/report.html "$@"
