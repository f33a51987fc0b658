"""Reproducible RLHF pipeline for cognitive reappraisal.

Pure math lives in modules without I/O (``stats``, ``data.normalize``,
``data.split``, ``policy.committee``); framework wiring (transformers, TRL,
HTTP) sits in thin modules that call it; ``cli`` holds the entry points the
Snakemake rules run.

Importing the package pins torch's CPU numerics (:mod:`reappraisal.numerics`)
before anything else runs, so every job computes the same bytes on any
x86-64 CPU with AVX2.
"""

from .numerics import pin_numerics as _pin_numerics

_pin_numerics()

__version__ = "0.1.0"
