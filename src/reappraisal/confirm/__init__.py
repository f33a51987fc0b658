"""Selection and the pre-registered confirmation.

Every candidate (arm instance, best-of-N system) is compared on the
selection pool (the OOD scenarios the evaluation kept, :mod:`reappraisal.evaluation.confirmation_pool`);
the best is selected and *pre-registered* (``preregister``: the selected
system, the sha256 of its checkpoint files, the metric, the opponent, the
interval method, the bar, the one test and its direction, the date) before
its answers on the fresh confirmation pool are generated
(``generate-confirmation``, which records the pre-registration's sha256) and
judged (``confirm``, which refuses an edited pre-registration or a changed
checkpoint). The summary shows the selection-pool estimate, the expected
selection inflation and the confirmation estimate side by side.
"""
