"""Reproducible RLHF pipeline for cognitive reappraisal.

Pure math lives in modules without I/O (``stats``, ``data.normalize``,
``data.split``, ``policy.committee``); framework wiring (transformers, TRL,
HTTP) sits in thin modules that call it; ``cli`` holds the entry points the
Snakemake rules run.
"""

__version__ = "0.1.0"
