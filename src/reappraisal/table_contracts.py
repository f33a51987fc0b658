"""The columns of the tables one stage writes and later stages read (core layer): each list once.

A writer emits exactly its table's list, in this order; a reader checks for
and selects the columns it needs by these names. The data contract in
``docs/pipeline.md`` points here. Tables read only by the stage that writes
them keep their columns beside that stage.
"""

from __future__ import annotations

# --- data: what the reward models, the GRM and the policy train on --------------------------------------------
#: What every trainer reads of ``data/processed/targets.parquet`` (one row per reappraisal; the table also
#: carries study, ``z_<dim>``, ``n_<dim>`` and n_ratings).
TARGET_COLUMNS = ["reappraisal_id", "vignette_id", "author_type", "text", "split"]
#: What the trainers read of ``data/interim/vignettes.parquet`` (one row per scenario).
VIGNETTE_COLUMNS = ["vignette_id", "text"]
#: What a reward model reads of ``data/processed/pairs.parquet``: two rated reappraisals of one scenario and
#: which one the ratings prefer.
RATED_PAIR_COLUMNS = ["pair_id", "vignette_id", "split", "id_a", "id_b", "preferred"]
#: What the GRM reads of the same pairs: also both texts and the rating margin.
GRM_PAIR_COLUMNS = ["pair_id", "vignette_id", "split", "id_a", "id_b", "text_a", "text_b", "margin", "preferred"]
#: Held-out human pairs a judge is calibrated on (two halves of the raters, z-scored means).
HUMAN_PAIR_COLUMNS = ["pair_id", "vignette_id", "half", "first_id", "second_id", "first", "second", "z_first",
                      "z_second", "margin"]

# --- evaluation: answers, contests, verdicts ----------------------------------------------------------------------
#: ``results/evaluation/run<r>/generations/<system>.parquet``: one row per sampled answer.
GENERATION_COLUMNS = ["run", "arm", "vignette_id", "pool", "sample", "seed", "answer_id", "raw_text", "answer",
                      "finish_reason", "prompt_tokens", "completion_tokens", "empty", "too_long", "truncated"]
#: ``results/confirm/generations.parquet``: a generation stamped with the registration it was drawn under.
CONFIRMATION_GENERATION_COLUMNS = [*GENERATION_COLUMNS, "preregistration_sha256"]
#: ``results/evaluation/run<r>/best_of_n/<system>.parquet``: every sampled candidate, its scorer's score and whether it was kept.
BEST_OF_N_CANDIDATE_COLUMNS = ["run", "system", "vignette_id", "pool", "sample", "candidate", "answer", "passed",
                               "score", "kept", "completion_tokens", "scorer"]
#: One run's drawn contests: an arm's answer against an opponent's on one scenario.
DRAWN_CONTEST_COLUMNS = ["contest_id", "vignette_id", "pool", "model", "opponent", "model_answer_id", "model_answer",
                         "opponent_answer_id", "opponent_answer"]
#: What identifies a contest across runs and judges.
CONTEST_KEYS = ["run", "judge", "contest_id", "vignette_id", "model", "opponent"]
#: ``results/evaluation/run<r>/judgments.parquet``: one row per judged order of a contest.
JUDGMENT_COLUMNS = ["run", "judge", "judge_kind", "contest_id", "vignette_id", "pool", "model", "opponent", "order",
                    "verdict", "raw", "model_answer_id", "opponent_answer_id", "served_model"]
#: The judgment columns scoring reads: a contest's key, the order and its verdict.
VERDICT_COLUMNS = [*CONTEST_KEYS, "order", "verdict"]
#: The answers' lengths in words, kept on each contest for the length-bias tables.
CONTEST_LENGTH_COLUMNS = ["model_words", "opponent_words"]
#: ``results/evaluation/run<r>/contests.parquet``: one row per contest, both orders' verdicts and its score.
CONTEST_COLUMNS = ["run", "judge", "judge_kind", "contest_id", "vignette_id", "pool", "model", "opponent",
                   "verdict_ab", "verdict_ba", "score", "error", *CONTEST_LENGTH_COLUMNS]
#: A scored contest as every rate reads it: the key, the score (1, 0.5, 0; NaN on error) and the error flag.
SCORE_COLUMNS = [*CONTEST_KEYS, "score", "error"]
