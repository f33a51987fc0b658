"""Provenance (core layer): what DVC records for every stage, and a claim's trace to its roots.

* :mod:`.dvc_state`: each DVC stage's dependencies, config values and
  outputs, hashed now the way DVC hashes them (DVC's own code), so a claim
  carries in the same run the hashes ``dvc commit`` will write to ``dvc.lock``.
* :mod:`.stage_graph`: which stage writes which path, and the stages
  upstream of a set of paths (pure).
* :mod:`.claim_trace`: a claim's trace (stages, raw data, config values,
  code, with hashes) and what changed since it was computed (pure).
* :mod:`.trace_io`: the ``trace`` command.
* :mod:`.missing_outputs`: outputs a workspace lacks that Snakemake would not
  rebuild (pure), which ``run`` forces.
* :mod:`.run_io`, :mod:`.record_io`, :mod:`.restore_io`: the ``run``,
  ``record`` and ``restore`` commands (Snakemake with kill recovery, then the
  DVC record; restoring the last recorded results).
"""
