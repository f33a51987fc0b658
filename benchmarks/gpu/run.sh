#!/usr/bin/env bash
# The GPU benchmark's one entry point, for a CUDA machine (Linux x86_64): install the cluster's lock
# (requirements-gpu.lock: PyPI's CUDA torch 2.13.0, vLLM 0.30.0, DeepSpeed, the CPU lock's other pins, for
# the Python its header names) into .venv-gpu, then measure within 8 minutes.
#   bash benchmarks/gpu/run.sh [OUT_DIR]      -> OUT_DIR/gpu_bench.json and gpu_bench.md, and the `measured`
#                                                section of benchmarks/gpu/estimates.yaml (ESTIMATES; commit it)
# What it measures by default (PARTS): the reward ensemble and the GRM (whose models the GRPO steps' committee
# uses; the GRM also decodes one batch with vLLM), one GRPO step at the card's shapes with TRL's vLLM colocate
# mode (the paper preset's policy.vllm), a batch of evaluation answers through the project's vLLM backend (the
# paper preset's answers and best-of-N candidates), then the GRPO step with HF generate, and the estimates drawn
# from them. No part starts after BUDGET_S (default 420) seconds, nor when it would not end before STOP_S (470);
# the whole run is cut at 480 s, and the figures are written after every part. A part that cannot run (no
# vLLM, out of memory, no time left) is reported with its reason; the others still run, and estimates.yaml keeps
# the figures an earlier run measured for it (so PARTS="grpo committee_share cluster_estimate" on a second
# machine completes what the first left out).
# Environments:
#   - PYTHON=/path/to/python of an environment that already holds the lock (a cluster's shared one): used as it
#     is when its torch, transformers, trl and vllm are the lock's.
#   - otherwise .venv-gpu, made once per lock (a stamp of the lock's hash): with python3.13 where there is one,
#     else with uv's own CPython of the lock's version (uv is installed from PyPI into a scratch venv).
#   - a machine without package registries: the pinned wheels its Python lacks carried in .whl/ (benchmarks/
#     README.md, "On a GPU") are installed from there, offline, over what the machine has; the GPU lock cannot
#     be carried that way (its CUDA wheels are gigabytes), so vLLM is there only if the machine has it.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${1:-benchmarks/gpu/results}
BUDGET_S=${BUDGET_S:-420}
STOP_S=${STOP_S:-470}
PARTS=${PARTS:-rm grm grpo_vllm eval_vllm grpo committee_share cluster_estimate}
ESTIMATES=${ESTIMATES:-benchmarks/gpu/estimates.yaml}
LOCK=requirements-gpu.lock
LOCK_PY=$(sed -n 's/^# python: //p' "$LOCK")

# Whether $1 runs the lock's torch, transformers, trl and vllm (with CUDA).
has_lock() {
  "$1" - "$LOCK" <<'EOF' 2>/dev/null
import re, sys
from importlib.metadata import version
pins = dict(re.match(r"([A-Za-z0-9_.-]+)==(\S+)", line).groups() for line in open(sys.argv[1])
            if re.match(r"[A-Za-z0-9]", line))
import torch
assert torch.cuda.is_available(), "no CUDA device"
assert all(version(name).split("+")[0] == pins[name] for name in ("torch", "transformers", "trl", "vllm"))
EOF
}

if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  PY=${PYTHON:-python3}
  echo "installing the carried wheels in .whl/ (offline; not the GPU lock)"
  if "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/gpu-site .whl/*.whl; then
    export PYTHONPATH="/tmp/gpu-site:$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
  else
    echo "installing .whl/ failed"
  fi
  # nothing can be fetched: say what is missing and stop
  "$PY" -c "import torch, transformers, trl, reappraisal; assert torch.cuda.is_available(), 'no CUDA device'" || exit 1
elif [ -n "${PYTHON:-}" ] && has_lock "$PYTHON"; then
  PY=$PYTHON
  echo "using $PY: it holds $LOCK"
else
  PY=.venv-gpu/bin/python
  stamp=.venv-gpu/.installed-$(cat "$LOCK" pyproject.toml | sha256sum | cut -c1-16)
  if [ ! -f "$stamp" ]; then
    echo "installing $LOCK into .venv-gpu (Python $LOCK_PY)"
    boot=$(mktemp -d)
    if ! { python3 -m venv "$boot" && "$boot/bin/pip" install -q uv; }; then
      echo "cannot install uv from PyPI"
      exit 1
    fi
    UV=$boot/bin/uv
    rm -rf .venv-gpu
    if command -v "python$LOCK_PY" >/dev/null; then
      "$UV" venv -q --python "$(command -v "python$LOCK_PY")" .venv-gpu || exit 1
    else
      "$UV" venv -q --python "$LOCK_PY" .venv-gpu || exit 1  # uv fetches its own CPython of that version
    fi
    # The lock is complete (every dependency pinned): nothing else is resolved. DeepSpeed compiles no kernels
    # at install time (they are JIT-built on the GPU).
    DS_BUILD_OPS=0 "$UV" pip install -q --python "$PY" --no-deps -r "$LOCK" || { echo "$LOCK did not install"; exit 1; }
    "$UV" pip install -q --python "$PY" --no-deps -e . || { echo "the package did not install"; exit 1; }
    rm -rf "$boot"
    touch "$stamp"
  fi
  has_lock "$PY" || echo "warning: .venv-gpu does not run the lock's torch/vllm with CUDA; the parts will say what failed"
fi

# shellcheck disable=SC2086  # PARTS is a list of part names, split on purpose
timeout 480 "$PY" benchmarks/gpu/bench_gpu.py --out "$OUT" --budget-s "$BUDGET_S" --stop-s "$STOP_S" \
  --estimates "$ESTIMATES" --only $PARTS
