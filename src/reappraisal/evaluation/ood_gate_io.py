"""check_ood stage: the OOD pool must be disjoint from everything training and the main evaluation saw.

Writes ``results/evaluation/ood_disjointness.json`` when the gate passes
(:mod:`.ood_gate`); otherwise writes the report beside it as
``ood_disjointness_failed.json`` (never the declared output) and stops with
a message naming the offending pairs (the leakage check's command shape,
:func:`reappraisal.data.gate_command.publish_gate_report`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from ..data.gate_command import gate_arguments, publish_gate_report
from ..settings import Settings
from .ood_gate import ood_disjointness


def cli_main(argv: Sequence[str] | None = None) -> int:
    params, targets, vignettes, out = gate_arguments("reappraisal check-ood", __doc__, argv)
    ood = Settings.from_params(params).evaluation.ood
    report = ood_disjointness(vignettes, targets, n=int(ood.ngram), allow_short=bool(ood.allow_short))

    def failure(failed: Path) -> str:
        hits = report["overlaps"]
        first = "; ".join(f"{h['ood_scenario']} ~ {h['other_kind']} {h['other']} ('{h['example']}')" for h in hits[:3])
        short = f"; too short to check: {report['too_short']}" if report["too_short"] and not report["allow_short"] else ""
        return f"{len(hits)} overlap(s) {first}{short}; full report in {failed}"

    publish_gate_report(report, out, passed=report["passed"], failure=failure, where="check_ood")
    print(f"check_ood: ok ({report['ood_scenarios']} OOD scenarios, {report['ngram']}-grams, "
          f"compared with {report['compared_with']}; too short: {report['too_short'] or 'none'})")
    return 0
