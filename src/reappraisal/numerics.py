"""Pinned CPU numerics: the same bytes on every CPU of a vendor with AVX2 (core layer).

Torch's CPU wheel picks its kernels by the machine's instruction set: ATen's
vectorised ops by CPU capability (AVX2 or AVX-512), MKL's GEMM by its own
dispatch, oneDNN's primitives by the widest ISA it finds. Each choice rounds
differently, so the same seeds trained other weights on another CPU, and five
chained trainings, sampling and a noisy judge turned last-bit differences
into other answers, verdicts and selections.

:func:`pin_numerics` sets, in the process environment, the variables that
make every one of those libraries take its AVX2 code path
(:data:`PINNED`). It runs when the package is imported (``reappraisal/__init__``),
which every job's ``python -m reappraisal`` and Snakemake's workflow load do
first, so every job inherits it (the Snakefile's process sets it for its
children); the user's shell is not involved. Each library reads its variable
at its first kernel call, so the pin holds whenever the package is imported
before torch computes anything.

What is guaranteed: the same bytes on x86-64 CPUs with AVX2 of the same
vendor, for the same thread count (the demo's jobs use one thread each:
``cpu_threads``) and the same locked packages. Across vendors it is not: MKL
honours ``MKL_CBWR=AVX2`` on Intel CPUs only and runs its ``AUTO`` branch on
others (its documentation: on non-Intel CPUs only ``AUTO`` and ``COMPATIBLE``
are supported; ``MKL_VERBOSE=1`` prints ``CNR:AUTO`` there), so an AMD machine
trains other weights than an Intel one. No MKL setting closes that gap:
its ``COMPATIBLE`` branch, documented as vendor-neutral, still gave an Intel
and an AMD machine different weights, and no branch forced on Intel gave the
AMD bytes (``benchmarks/README_numerics.md``). Not guaranteed: ARM (other
kernels: the pin is not applied there), GPUs (CUDA kernels are not pinned;
generation with vLLM needs ``VLLM_BATCH_INVARIANT=1`` and the same hardware),
other thread counts.

``REAPPRAISAL_NUMERICS=native`` leaves the machine's own kernels (to measure
what the pin costs, or to show the difference it makes).
"""

from __future__ import annotations

import os
import platform
import sys
from typing import MutableMapping

#: The variables that pin torch's CPU kernels to their AVX2 code paths.
PINNED: dict[str, str] = {
    "ATEN_CPU_CAPABILITY": "avx2",  # ATen's vectorised kernels (softmax, norms, activations, sampling)
    "MKL_CBWR": "AVX2",  # MKL's conditional numerical reproducibility branch (GEMM)
    "ONEDNN_MAX_CPU_ISA": "AVX2",  # oneDNN primitives (no AVX-512 or AMX paths)
    "TOKENIZERS_PARALLELISM": "false",  # no thread pool forked into workers (tokens are the same either way)
}
#: Setting it to ``native`` turns the pin off (benchmarks and the test that shows the pin matters).
SWITCH = "REAPPRAISAL_NUMERICS"
NATIVE = "native"
#: The capability torch reports once pinned.
PINNED_CAPABILITY = "AVX2"


def applies(machine: str | None = None, environ: MutableMapping[str, str] | None = None) -> bool:
    """Whether the pin applies here: an x86-64 machine whose environment did not ask for native kernels."""
    environ = os.environ if environ is None else environ
    machine = (machine or platform.machine()).lower()
    return machine in {"x86_64", "amd64"} and environ.get(SWITCH, "").strip().lower() != NATIVE


def pinned_environment(environ: MutableMapping[str, str], machine: str | None = None) -> dict[str, str]:
    """The variables :func:`pin_numerics` would set in ``environ`` (empty where the pin does not apply)."""
    return dict(PINNED) if applies(machine, environ) else {}


def pin_numerics(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Set :data:`PINNED` in ``environ`` (the process environment by default); returns what it set.

    A value the shell already set is overridden: the guarantee is the
    project's, not the user's. When torch already ran a kernel in this process
    its capability is fixed; :func:`check_pinned` says so.
    """
    environ = os.environ if environ is None else environ
    values = pinned_environment(environ)
    environ.update(values)
    return values


def torch_capability() -> str | None:
    """The CPU capability torch's kernels use in this process (None when torch is not imported)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    return str(torch.backends.cpu.get_cpu_capability())


def check_pinned() -> None:
    """Raise when the pin applies but torch in this process runs other kernels (torch computed before the pin)."""
    if not applies():
        return
    capability = torch_capability()
    if capability is not None and capability != PINNED_CAPABILITY:
        raise RuntimeError(
            f"torch's CPU kernels are {capability}, not {PINNED_CAPABILITY}: torch ran before the reappraisal "
            f"package was imported, so its numerics are this CPU's own (import reappraisal first, or set "
            f"{SWITCH}={NATIVE} to accept that)"
        )
