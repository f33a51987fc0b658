"""check_leakage stage: fail the run when training text overlaps held-out text.

Checks (1) every train/val reappraisal against every held-out evaluation
answer (GPT-4 references, opponent answers), by n-grams and by identical text
(a short answer copied below the n-gram length); (2) every validation
reappraisal against every training reappraisal by identical text (the split
keeps identical texts on one side, so a copy across it means the targets were
not made by the split); and (3) every out-of-distribution scenario against
the training scenarios and training reappraisals, which the OOD pool must be
disjoint from. On success writes the report; on a leak it
writes the report beside the output as ``leakage_failed.json`` (not the
declared output, so Snakemake never takes it as done) and exits non-zero with
a message naming the offending pairs.

The command's shape (inputs, report or ``<out>_failed.json`` and a
:class:`~reappraisal.errors.LeakageError`) is shared with the OOD gate
(``check-ood``, :mod:`reappraisal.evaluation.ood_gate_io`):
:func:`gate_arguments` and :func:`publish_gate_report`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import pandas as pd

from .leakage import TextPools, find_overlaps, identical_texts
from .quoting import quote
from ..settings import Settings
from .gate_command import gate_arguments, publish_gate_report


def run_checks(targets: pd.DataFrame, vignettes: pd.DataFrame, n: int, max_shared: int) -> dict:
    texts = TextPools.from_tables(targets, vignettes)
    answers = find_overlaps(texts.training, texts.heldout, n=n, max_shared=max_shared)
    seen = {**{f"scenario:{k}": v for k, v in texts.training_scenarios.items()}, **texts.training}
    ood_hits = find_overlaps(seen, texts.ood_scenarios, n=n, max_shared=max_shared)
    copied_answers = [
        {"train_id": h["first_id"], "heldout_id": h["second_id"], "text": h["text"]}
        for h in identical_texts(texts.training, texts.heldout)
    ]
    val_copies = [{"val_id": h["first_id"], "train_id": h["second_id"], "text": h["text"]} for h in identical_texts(texts.val, texts.train)]
    return {
        "ngram": n,
        "max_shared_ngrams": max_shared,
        "training_texts": len(texts.training),
        "train_texts": len(texts.train),
        "val_texts": len(texts.val),
        "heldout_answers": len(texts.heldout),
        "ood_scenarios": len(texts.ood_scenarios),
        "answer_leaks": answers,
        "answer_copies": copied_answers,
        "val_train_copies": val_copies,
        "ood_leaks": ood_hits,
        "ok": not (answers or copied_answers or val_copies or ood_hits),
    }


def leak_lines(report: dict) -> list[str]:
    """One short phrase per leak of a :func:`run_checks` report, the n-gram leaks first."""
    ngram = report["ngram"]
    return (
        [f"{h['train_id']} ~ {h['heldout_id']} ({h['shared']} shared {ngram}-grams, e.g. '{h['example']}')"
         for h in report["answer_leaks"] + report["ood_leaks"]]
        + [f"{h['train_id']} = held-out {h['heldout_id']} (identical text {quote(h['text'])})" for h in report["answer_copies"]]
        + [f"validation {h['val_id']} = training {h['train_id']} (identical text {quote(h['text'])})" for h in report["val_train_copies"]]
    )


def cli_main(argv: Sequence[str]) -> int:
    params, targets, vignettes, out = gate_arguments("reappraisal check-leakage", __doc__, argv)
    leakage = Settings.from_params(params).leakage
    report = run_checks(targets, vignettes, leakage.ngram, leakage.max_shared_ngrams)
    leaks = leak_lines(report)

    def failure(failed: Path) -> str:
        more = f" and {len(leaks) - 3} more" if len(leaks) > 3 else ""
        return f"{len(leaks)} leak(s): {'; '.join(leaks[:3])}{more}; full list in {failed}"

    publish_gate_report(report, out, passed=report["ok"], failure=failure, where="check_leakage")
    print(
        f"check_leakage: ok ({report['training_texts']} training texts vs {report['heldout_answers']} held-out answers, "
        f"{report['val_texts']} validation texts vs {report['train_texts']} training texts, {report['ood_scenarios']} OOD scenarios)"
    )
    return 0
