"""The summary stage: evaluation tables, metrics tables and the claims ledger.

Modules, one concept each:

- ``evaluation_tables``: tables built from the pooled contests table
  (headline, per scenario, per run, head-to-head, OOD, reward-path gap,
  ablation), each row computed with :mod:`reappraisal.stats`;
- ``metrics_tables``: tables built from the metrics JSONs (judge
  calibration, reward models, GRM, training health);
- ``summary_table``: the :class:`Table` record (frame, title, caption, estimand, the
  artifacts behind each row);
- ``render``: a table as CSV, Markdown and LaTeX (booktabs);
- ``claims``: the claims ledger (``claims.yaml``): rules over computed
  numbers, verdicts, retractions, flags;
- ``lineage``: sha256 of artifacts and their DVC stage / hash;
- ``texts``: the tables' titles and captions, kept in ``table_texts.yaml``
  beside this package (Jinja2 templates over the bar, the confidence, ...);
- ``summary_io``: the ``summarize`` command (reads, validates, writes).

Everything except ``lineage``, ``texts`` (which reads its YAML) and
``summary_io`` is pure (no I/O).
"""
