"""Every held-out judgment's recorded verdict must be what its raw reply parses to.

The judgments table keeps, per (contest, order), the judge's raw reply
(``raw``) and the verdict the judge stage parsed from it (``verdict``) with
the judge's ``verdict.pattern`` and ``verdict.labels``
(:meth:`~reappraisal.evaluation.judge_spec.JudgeSpec.parse`). The file
records the judge by name only, not its spec, so the reply is re-parsed with
``<evaluation.judges_dir>/<judge>.yaml``: the file the judge rule lists as
an input, so a judgments table is remade whenever it changes. A verdict that
does not follow from its reply was edited after judging (or parsed with
another pattern than the configured one); either way the scores built on it
are not the judge's, and summarize stops.

Checked: rows of held-out judges (``judge_kind`` ``heldout``). Not checked:
``consensus`` rows (their raw text lists the members' verdicts, each checked
in its own row) and ``reward_path`` rows (scores or the GRM's reply, read by
the reward path's own code, not by a judge YAML). Pure apart from reading the
judge YAMLs; one regex pass per distinct reply.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from reappraisal.errors import ConfigError, PipelineInputError
from reappraisal.evaluation.judge_spec import load_judge

REPLY_COLUMNS = ["judge", "judge_kind", "contest_id", "order", "verdict", "raw"]
CHECKED_KINDS = ("heldout",)


def check_replies(judgments: pd.DataFrame, judgments_path: Path, judges_dir: str | Path) -> None:
    """Raise :class:`PipelineInputError` (one line: the file, the first bad row, both verdicts) unless every
    held-out judgment's ``verdict`` is what its ``raw`` reply parses to with its judge's YAML."""
    where = str(judgments_path)
    missing = [c for c in REPLY_COLUMNS if c not in judgments.columns]
    if missing:
        raise PipelineInputError(f"judgments table lacks column(s) {missing}; its verdicts cannot be checked "
                                 "against the judges' replies", where=where)
    checked = judgments["judge_kind"].astype(str).isin(CHECKED_KINDS).to_numpy()
    judges = judgments["judge"].astype(str).to_numpy()
    for judge in sorted(set(judges[checked])):
        try:
            spec = load_judge(judge, judges_dir)
        except ConfigError as exc:
            raise PipelineInputError(f"the replies of judge {judge!r} cannot be re-parsed: {exc}",
                                     where=where) from None
        rows = np.flatnonzero(checked & (judges == judge))
        parsed: dict = {}
        bad = []
        for i, raw, recorded in zip(rows, judgments["raw"].to_numpy()[rows], judgments["verdict"].to_numpy()[rows]):
            text = raw if isinstance(raw, str) else None
            if text not in parsed:
                parsed[text] = spec.parse(text)
            if parsed[text] != str(recorded):
                bad.append((i, parsed[text], recorded))
        if bad:
            i, reparsed, recorded = bad[0]
            row = judgments.iloc[i]
            raise PipelineInputError(
                f"{len(bad)} of {len(rows)} verdict(s) of judge {judge!r} differ from what their raw reply parses "
                f"to, e.g. row {i} (from 0; contest {row['contest_id']!r}, order {row['order']}): recorded "
                f"{str(recorded)!r}, the reply parses to {reparsed!r} with verdict.pattern {spec.pattern!r} of "
                f"{spec.path}; the verdicts were edited or parsed with another pattern: rerun the judge stage",
                where=where)
