"""check_leakage stage: fail the run when training text overlaps held-out text.

Checks (1) every train/val reappraisal against every held-out evaluation
answer (GPT-4 references, opponent answers) and (2) every out-of-distribution
scenario against the training scenarios and training reappraisals, which the
OOD pool must be disjoint from. On success writes the report; on a leak it
writes the report beside the output as ``leakage_failed.json`` (not the
declared output, so Snakemake never takes it as done) and exits non-zero with
a message naming the offending pairs.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

import pandas as pd

from ..atomic import write_json
from ..params import parse_params
from ..input_tables import read_table
from ..errors import LeakageError
from .leakage import find_overlaps


def run_checks(targets: pd.DataFrame, vignettes: pd.DataFrame, n: int, max_shared: int) -> dict:
    training = targets[targets["split"].isin(["train", "val"])]
    heldout = targets[targets["split"] == "heldout"]
    train_texts = dict(zip(training["reappraisal_id"], training["text"]))
    answers = find_overlaps(train_texts, dict(zip(heldout["reappraisal_id"], heldout["text"])), n=n, max_shared=max_shared)
    train_scen = vignettes[vignettes["pool"] == "train"]
    ood = vignettes[vignettes["pool"] == "ood"]
    seen = {**{f"scenario:{k}": v for k, v in zip(train_scen["vignette_id"], train_scen["text"])}, **train_texts}
    ood_hits = find_overlaps(seen, dict(zip(ood["vignette_id"], ood["text"])), n=n, max_shared=max_shared)
    return {
        "ngram": n,
        "max_shared_ngrams": max_shared,
        "training_texts": len(train_texts),
        "heldout_answers": len(heldout),
        "ood_scenarios": len(ood),
        "answer_leaks": answers,
        "ood_leaks": ood_hits,
        "ok": not answers and not ood_hits,
    }


def cli_main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(prog="reappraisal check-leakage", description=__doc__.splitlines()[0])
    for name in ("targets", "vignettes", "out", "params"):
        ap.add_argument(f"--{name}", required=True)
    args = ap.parse_args(argv)
    cfg = parse_params(args.params)["leakage"]
    report = run_checks(read_table(args.targets), read_table(args.vignettes), cfg["ngram"], cfg["max_shared_ngrams"])
    out = Path(args.out)
    failed = out.with_name("leakage_failed.json")
    if not report["ok"]:
        write_json(report, failed)
        leaks = report["answer_leaks"] + report["ood_leaks"]
        first = "; ".join(f"{h['train_id']} ~ {h['heldout_id']} ({h['shared']} shared {cfg['ngram']}-grams, e.g. '{h['example']}')" for h in leaks[:3])
        more = f" and {len(leaks) - 3} more" if len(leaks) > 3 else ""
        raise LeakageError(f"{len(leaks)} leak(s): {first}{more}; full list in {failed}", where="check_leakage")
    failed.unlink(missing_ok=True)
    write_json(report, out)
    print(f"check_leakage: ok ({report['training_texts']} training texts vs {report['heldout_answers']} held-out answers, {report['ood_scenarios']} OOD scenarios)")
    return 0
