"""``reappraisal gold``: the demo world's reading of any text, to probe what its gold rewards.

    reappraisal gold --scenario v01 "Maybe Jordan mixed up the date of your birthday dinner."
    reappraisal gold --scenario-text "My neighbour ..." "Perhaps they ..."

Prints, per text, its gold (the expected latent quality, the scale of
``data/demo/truth/reappraisal_quality.csv``: human mean 0, SD about 1), the
quality each rater profile reads (the gold is their share-weighted mean), every
component of the reading (:mod:`reappraisal.data.demo_quality`) and, for one of
the world's training scenarios, the median gold of that scenario's human
reappraisals. The gold is the demo world's definition only: it says nothing
about real reappraisals.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence

from ..errors import ConfigError
from .demo_generator import OOD_VIGNETTES, TRAIN_VIGNETTES


def cli_main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="reappraisal gold", description=__doc__.split("\n\n")[0])
    which = parser.add_mutually_exclusive_group(required=True)
    known = [v.vignette_id for v in TRAIN_VIGNETTES + OOD_VIGNETTES]
    which.add_argument("--scenario", help=f"one of the world's scenarios ({', '.join(known)})")
    which.add_argument("--scenario-text", help="any scenario text of your own")
    parser.add_argument("--json", action="store_true", help="one JSON object per text instead of a table")
    parser.add_argument("texts", nargs="+", help="the texts to read ('-' reads one text from standard input)")
    args = parser.parse_args(argv)

    from .demo_gold import PROFILES, SHARES, gold_reading, human_gold_quantiles, profile_qualities

    if args.scenario is not None:
        by_id = {v.vignette_id: v for v in TRAIN_VIGNETTES + OOD_VIGNETTES}
        if args.scenario not in by_id:
            raise ConfigError(f"unknown scenario {args.scenario!r}; the world's: {', '.join(known)}", where="--scenario")
        scenario = by_id[args.scenario].text
        human = human_gold_quantiles(args.scenario) if by_id[args.scenario].pool == "train" else None
    else:
        scenario, human = args.scenario_text, None
    texts = [sys.stdin.read() if t == "-" else t for t in args.texts]
    for text in texts:
        reading = gold_reading(text, scenario).as_dict()
        profiles = profile_qualities(text, scenario)
        row = {"text": text, "gold": round(float(profiles @ SHARES), 4),
               "human_median_gold": None if human is None else round(human[0.5], 4),
               **{f"gold_{p}": round(float(q), 4) for p, q in zip(PROFILES, profiles)},
               **{k: round(v, 4) if isinstance(v, float) else v for k, v in reading.items()}}
        if args.json:
            print(json.dumps(row))
            continue
        versus = "" if human is None else f" (this scenario's human median {human[0.5]:+.3f})"
        print(f"gold {row['gold']:+.3f}{versus}: {text[:70]!r}")
        print("  as each rater profile reads it: " + ", ".join(f"{p} {q:+.3f}" for p, q in zip(PROFILES, profiles)))
        print("  " + ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in reading.items()))
    return 0
