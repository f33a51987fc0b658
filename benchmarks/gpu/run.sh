#!/usr/bin/env bash
# The GPU benchmark's one entry point, for a CUDA machine: install what is missing (pinned; the CUDA build
# of torch from PyPI; vLLM only if it resolves against the pinned torch), then measure within 8 minutes.
#   bash benchmarks/gpu/run.sh [OUT_DIR]      -> OUT_DIR/gpu_bench.json and gpu_bench.md
# A part that cannot run (no vLLM, out of memory) is reported as such; the others still run.
# A machine without package registries: download the pinned wheels that its Python lacks into .whl/
# beforehand (benchmarks/README.md, "On a GPU"); they are installed from there, offline, and nothing
# else is fetched. BUDGET_S (default 420) is the time after which no further part starts.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:-benchmarks/gpu/results}
PY=${PYTHON:-python3}
BUDGET_S=${BUDGET_S:-420}
OFFLINE=""
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  echo "installing the carried wheels in .whl/ (offline)"
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/gpu-site .whl/*.whl \
    && export PYTHONPATH="/tmp/gpu-site:$PWD/src${PYTHONPATH:+:$PYTHONPATH}" || echo "installing .whl/ failed"
  OFFLINE=1
fi
if ! "$PY" -c "import torch, transformers, trl, reappraisal; assert torch.cuda.is_available()" 2>/dev/null; then
  if [ -n "$OFFLINE" ]; then  # nothing can be fetched: say what is missing and stop
    "$PY" -c "import torch, transformers, trl, reappraisal; assert torch.cuda.is_available(), 'no CUDA device'"
    exit 1
  fi
  echo "installing into .venv-gpu (torch 2.13.0 with CUDA, requirements.lock, this package)"
  [ -x .venv-gpu/bin/python ] || "$PY" -m venv .venv-gpu
  PY=.venv-gpu/bin/python
  "$PY" -m pip install -q --upgrade pip
  "$PY" -m pip install -q "torch==2.13.0" || echo "torch install failed: the benchmark needs torch with CUDA"
  DS_BUILD_OPS=0 "$PY" -m pip install -q -r requirements.lock || echo "requirements.lock install failed"
  "$PY" -m pip install -q --no-deps -e . || echo "package install failed"
fi
if [ -z "$OFFLINE" ] && ! "$PY" -c "import vllm" 2>/dev/null; then
  # TRL 1.16 wants vLLM >=0.22,<=0.31; keep the pinned torch or go without vLLM.
  "$PY" -m pip install -q "vllm>=0.22,<=0.31" "torch==2.13.0" \
    || echo "vLLM does not install beside torch 2.13.0 here: its parts will be reported as skipped"
fi
timeout $((BUDGET_S + 60)) "$PY" benchmarks/gpu/bench_gpu.py --out "$OUT" --budget-s "$BUDGET_S"
