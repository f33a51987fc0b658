"""``results/evaluation/judge_calibration.json`` read back: the one reader the summary and the report share.

The file is written by ``calibrate_judge`` (:mod:`.calibration_io`, numbers
from :mod:`.calibration`; layout in docs/CONVENTIONS.md). The reader checks
that the keys its readers use are there and refuses a file without them,
naming the file and the key, so the readers index the document directly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..errors import DataValidationError

#: Keys the readers use: of the document, of its ``decision``, of each judge's numbers and of their parts.
TOP_KEYS = ("judges", "decision", "delta")
DECISION_KEYS = ("selected", "min_agreement", "agreement_counted", "verdicts", "failed", "accepted_weak")
JUDGE_KEYS = ("agreement", "n_separated_pairs", "n_undecided", "n_errors", "kappa", "by_margin", "position",
              "first_slot_bias")
PART_KEYS = {
    "agreement": ("strict", "half", "dropped"),
    "position": ("consistency", "flip_rate", "tie_rate", "n_flips", "n_with_tie"),
    "first_slot_bias": ("n_first_slot_both", "n_second_slot_both", "p_value"),
}
MARGIN_BIN_KEYS = ("low", "high", "agreement_half", "n_pairs")


def read_judge_calibration(path: str | Path) -> dict[str, Any]:
    """The calibration document, checked to hold every key above (and a verdict for every judge)."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataValidationError("the judge calibration file is missing", where=str(path)) from None
    except json.JSONDecodeError as exc:
        raise DataValidationError(f"not valid JSON ({exc.msg}, line {exc.lineno})", where=str(path)) from None
    _require(doc, TOP_KEYS, path, None)
    _require(doc["decision"], DECISION_KEYS, path, "decision")
    for name, judge in doc["judges"].items():
        _require(judge, JUDGE_KEYS, path, f"judges.{name}")
        for part, keys in PART_KEYS.items():
            _require(judge[part], keys, path, f"judges.{name}.{part}")
        for i, row in enumerate(judge["by_margin"]):
            _require(row, MARGIN_BIN_KEYS, path, f"judges.{name}.by_margin[{i}]")
    _require(doc["decision"]["verdicts"], doc["judges"], path, "decision.verdicts")
    return doc


def _require(node: Any, keys: Iterable[str], path: Path, where: str | None) -> None:
    here = f"{path}: {where}" if where else str(path)
    if not isinstance(node, Mapping):
        raise DataValidationError("not a JSON object", where=here)
    missing = [k for k in keys if k not in node]
    if missing:
        raise DataValidationError(f"missing key(s) {missing}", where=here)
