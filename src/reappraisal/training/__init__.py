"""Training plumbing shared by the reward-model, GRM, policy and demo-judge trainers (core layer).

Every trainer here is a ``transformers.Trainer`` (TRL's ``SFTTrainer`` and
``GRPOTrainer`` are ones too) and runs the same way:

* **Work folder.** Checkpoints go to a persistent folder beside the output
  (``<output folder>/.<output name>.work/``, or one the caller names), never
  to a temporary directory, so a killed run keeps what it did. The folder
  carries ``RUN_SPEC.json``, the settings and data fingerprints it was made
  with (:func:`open_work_dir`): a rerun with the same spec resumes, any
  other starts over.
* **Resume.** From the newest *complete* checkpoint (:func:`is_complete_checkpoint`:
  its ``trainer_state.json`` is the last file the Trainer writes, and the
  weights are there); newer, half-written ones (a kill during saving) are
  removed, never fatal. A checkpoint that already reached the end of the
  schedule (``global_step >= max_steps``, or early stopping decided) is not
  trained again: its model is exported as it is (:func:`export_model`), so
  a rerun after the final checkpoint never passes ``max_steps``.
* **Whole-run figures.** The Trainer's ``train_loss`` covers only the steps
  run in this call; :func:`log_at_save_callback` logs at every checkpoint, so the
  loss of the steps before the checkpoint is in its log history, and
  :func:`whole_run_loss` combines both (:func:`run_training` reports it and
  puts it in the log history).
* **One trainer per work folder.** :func:`open_work_dir` takes an exclusive
  ``flock`` on a lock file beside the folder (:func:`work_lock_path`:
  ``<parent>/.<folder name>.lock``, e.g. ``.seed0.work.lock``; beside, not
  inside, since the folder may be emptied) and writes its pid, host and
  start time into it. The caller keeps it for the whole stage (training and
  export: ``with open_work_dir(...) as work:``). A second opener (a rerun
  while a trainer orphaned by a killed pipeline still runs) logs one line
  naming the holder and waits for it, then resumes from what it left, or,
  when the holder finished the same run, takes its outputs
  (:class:`~reappraisal.errors.FinishedElsewhere`: a done marker in the lock file);
  ``wait=False`` (or a number of seconds) refuses instead. A lock file left
  by a dead process holds no lock and never blocks.
* **Segments.** Every ``trainer.train`` call is a segment, recorded in the
  work folder's ``segments.json`` when it starts and at every checkpoint
  (the checkpoint it resumed from, its first and last step, its seconds),
  so a killed segment counts up to its last checkpoint;
  :meth:`RunResult.record` gives ``segments``, ``train_seconds`` (their
  total) and ``resumed_from`` (the last segment's) for a stage's record.
* **Leftovers.** Temporaries of atomic writes that a kill left behind
  (:mod:`reappraisal.atomic` names them ``.<name>.<8 chars>.<suffix>``) are
  removed before a stage writes its outputs again (:func:`remove_stale_temporaries`).

* **Finish.** :func:`~.run.finished_model` exports the model and its tokenizer
  into a folder inside the work folder, lets the trainer write its records
  there, then puts it in place of the output whole and removes the work
  folder; a crash before that leaves the old output and the work folder, so
  a rerun resumes. :func:`~.run.finished_outputs` is the same finish for a stage
  with several output folders (the GRM's two models).

One module per concept: :mod:`.settings` (the precision rule
:func:`use_bf16`, CPU threads :func:`set_cpu_threads`, the shared
``TrainingArguments``), :mod:`.batches` (:func:`pad_right`),
:mod:`.checkpoints`, :mod:`.locks`, :mod:`.work_dir`, :mod:`.segments` and
:mod:`.run` (training, export, the finish). The KL check of every GRPO stage
is :func:`reappraisal.config.check_kl_beta`. Heavy libraries (torch,
transformers) are imported inside the functions.
"""

