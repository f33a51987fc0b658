"""check_ood stage: the OOD pool must be disjoint from everything training and the main evaluation saw.

Writes ``results/evaluation/ood_disjointness.json`` when the gate passes
(:mod:`.ood_gate`); otherwise writes the report beside it as
``ood_disjointness_failed.json`` (never the declared output) and stops with
a message naming the offending pairs.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Sequence

from ..atomic import write_json
from ..errors import LeakageError
from ..params import parse_params
from ..input_tables import read_table
from .ood_gate import ood_disjointness


def cli_main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="reappraisal check-ood", description=__doc__.splitlines()[0])
    for name in ("targets", "vignettes", "out", "params"):
        ap.add_argument(f"--{name}", required=True)
    args = ap.parse_args(argv)
    cfg = parse_params(args.params)["evaluation"]["ood"]
    report = ood_disjointness(read_table(args.vignettes), read_table(args.targets), n=int(cfg["ngram"]),
                              allow_short=bool(cfg["allow_short"]))
    out = Path(args.out)
    failed = out.with_name(out.stem + "_failed.json")
    if not report["passed"]:
        write_json(report, failed)
        hits = report["overlaps"]
        first = "; ".join(f"{h['ood_scenario']} ~ {h['other_kind']} {h['other']} ('{h['example']}')" for h in hits[:3])
        short = f"; too short to check: {report['too_short']}" if report["too_short"] and not report["allow_short"] else ""
        raise LeakageError(f"{len(hits)} overlap(s) {first}{short}; full report in {failed}", where="check_ood")
    failed.unlink(missing_ok=True)
    write_json(report, out)
    print(f"check_ood: ok ({report['ood_scenarios']} OOD scenarios, {report['ngram']}-grams, "
          f"compared with {report['compared_with']}; too short: {report['too_short'] or 'none'})")
    return 0
