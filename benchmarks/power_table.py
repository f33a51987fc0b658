"""How large an effect each claim rule can see, at the demo's and the paper's sizes: power at effects 0.02, 0.05, 0.1
and 0.2, the minimum detectable effect (MDE) at 80 % power and the false-hold rate (power at effect 0).

Statistics layer only (``reappraisal.stats.power``; no training). Designs (contests per scenario = answers per
scenario and run x 3 runs; the two orders of a contest are one contest):

- demo: train pool 6 scenarios x 12 contests (4 answers x 3 runs); selection pool 7 x 6 (2 x 3); confirmation
  pool 7 x 12 (4 x 3);
- paper: train pool 6 x 120 (40 x 3, the card's 720 contests); selection and confirmation pools 7 x 30 each
  (10 x 3; the paper's OOD scenario count is the data's, 14 assumed here as in the demo's data).

Rules: ``headline`` (the headline interval's lower end above the bar 0.608; truth = bar + effect),
``head-to-head`` (the same rule against 0.5), ``paired`` (the paired-by-scenario t interval of a difference of
two arms excludes 0; arms share each scenario's difficulty, sd 0.1, and differ by scenario with sd 0.05),
``sign-flip`` (the same differences through the exact sign-flip test), ``unpaired`` (the same data through
Welch's t on the two arms' scenario means, ignoring the pairing),
``confirmation`` (the headline rule on the confirmation pool), ``reversion`` (the selection estimate lies above
the confirmation interval; effect = how far the selected system's truth lies below its selection estimate,
truth 0.6). Between-scenario sd of true rates: 0.056 (the card's table) and 0.1.

``--claims``: the same for every claim of ``claims.yaml`` whose rule has a power model, at the paper's sizes with
the card's spread (the table in ``docs/summary.md``, "What the paper's design can see").

``python benchmarks/power_table.py [--datasets 4000] [--out FILE] [--claims]`` (under a minute on 2 cores).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src")]

import yaml

from reappraisal.summary.claim_power import DIFFERENCE_RULES, RATE_RULES, REVERSION_RULES
from reappraisal.summary.claims import rule_conditions
from reappraisal.stats.power import (
    TABLE_EFFECTS,
    headline_power,
    paired_power,
    reversion_power,
    sign_flip_power,
    unpaired_power,
)

DESIGNS = {
    "demo": {"train": (6, 12), "selection": (7, 6), "confirm": (7, 12)},
    "paper": {"train": (6, 120), "selection": (7, 30), "confirm": (7, 30)},
}
BAR = 0.608
SPREADS = (0.056, 0.1)
SHARED_DIFFICULTY_SD = 0.1
DIFFERENCE_SD = 0.05


def curves(design: dict, spread: float, datasets: int):
    g, m = design["train"]
    within = 0.25 / m  # binomial variance of a scenario mean at a rate of 1/2 (the largest)
    sd_arm = math.sqrt(SHARED_DIFFICULTY_SD**2 + DIFFERENCE_SD**2 / 2 + within)
    correlation = SHARED_DIFFICULTY_SD**2 / sd_arm**2
    gc, mc = design["confirm"]
    yield "headline (vs 0.608)", f"{g} x {m}", headline_power(bar=BAR, scenarios=g, contests_per_scenario=m,
                                                               spread=spread, datasets=datasets)
    yield "head-to-head (vs 0.5)", f"{g} x {m}", headline_power(bar=0.5, scenarios=g, contests_per_scenario=m,
                                                                 spread=spread, datasets=datasets)
    yield "paired difference (the rule)", f"{g} x {m}", paired_power(
        scenarios=g, sd_difference=math.sqrt(DIFFERENCE_SD**2 + 2 * within))
    yield "paired difference, sign-flip test", f"{g} x {m}", sign_flip_power(
        scenarios=g, sd_difference=math.sqrt(DIFFERENCE_SD**2 + 2 * within))
    yield "unpaired difference (pairing ignored)", f"{g} x {m}", unpaired_power(
        scenarios=g, sd_arm=sd_arm, correlation=correlation)
    yield "confirmation (vs 0.608)", f"{gc} x {mc}", headline_power(bar=BAR, scenarios=gc, contests_per_scenario=mc,
                                                                     spread=spread, datasets=datasets)
    yield "selection estimate reverts", f"{gc} x {mc}", reversion_power(truth=0.6, scenarios=gc,
                                                                         contests_per_scenario=mc, spread=spread,
                                                                         datasets=datasets)


def markdown(datasets: int) -> str:
    head = " | ".join(f"power at {e:g}" for e in TABLE_EFFECTS)
    lines = [f"| sizes | rule | scenarios x contests | spread | {head} | MDE (80 %) | false holds |",
             "|---|---|---|---|" + "---|" * len(TABLE_EFFECTS) + "---|---|"]
    for name, design in DESIGNS.items():
        for spread in SPREADS:
            for rule, size, curve in curves(design, spread, datasets):
                if rule.startswith(("paired", "unpaired")) and spread != SPREADS[0]:
                    continue  # the paired rules do not read the rates' spread
                spread_text = "—" if rule.startswith(("paired", "unpaired")) else f"{spread:g}"
                mde = f"{curve.mde:.3f}" if curve.mde is not None else f"none up to {curve.effects[-1]:g}"
                powers = " | ".join(f"{curve.at(e):.2f}" for e in TABLE_EFFECTS)
                lines.append(f"| {name} | {rule} | {size} | {spread_text} | {powers} | {mde} | "
                             f"{curve.false_hold:.3f} |")
    return "\n".join(lines)


def claim_design(cond: dict, design: dict) -> tuple[int, int]:
    pool = cond["where"].get("pool", "train")
    if cond["table"] == "confirmation":
        return design["confirm"]
    return design["selection"] if pool == "ood" else design["train"]


def claims_markdown(datasets: int, sizes: str = "paper", spread: float = SPREADS[0]) -> str:
    """Each claim of claims.yaml with a power model: its rule's MDE at ``sizes`` (its pool's design)."""
    design = DESIGNS[sizes]
    doc = yaml.safe_load((ROOT / "claims.yaml").read_text(encoding="utf-8"))
    lines = ["| claim | rule | scenarios x contests | MDE (80 %) | false holds |", "|---|---|---|---|---|"]
    for claim in doc["claims"]:
        rule = claim["rule"]
        if "card_interval" in rule:
            continue
        worst = None
        for cond in rule_conditions(rule):
            key = (cond["table"], cond["column"])
            g, m = claim_design(cond, design)
            if key in REVERSION_RULES:
                curve = reversion_power(truth=0.6, scenarios=g, contests_per_scenario=m, spread=spread, datasets=datasets)
            elif key in DIFFERENCE_RULES and (cond["table"] != "head_to_head" or cond["where"].get("kind") == "paired"):
                curve = paired_power(scenarios=g, sd_difference=math.sqrt(DIFFERENCE_SD**2 + 2 * 0.25 / m))
            elif key in RATE_RULES and cond["op"] in (">", ">="):
                than = cond["than"]
                bar = BAR if isinstance(than, dict) else float(than)
                curve = headline_power(bar=bar, scenarios=g, contests_per_scenario=m, spread=spread, datasets=datasets)
            else:
                continue
            if worst is None or (curve.mde or math.inf) > (worst[0].mde or math.inf):
                worst = (curve, g, m)
        if worst is None:
            continue
        curve, g, m = worst
        mde = f"{curve.mde:.3f}" if curve.mde is not None else f"none up to {curve.effects[-1]:g}"
        retracted = " (retracted)" if claim.get("retraction") else ""
        lines.append(f"| `{claim['id']}`{retracted} | {curve.rule} | {g} x {m} | {mde} | {curve.false_hold:.3f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", type=int, default=4000, help="simulated datasets per effect")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--claims", action="store_true", help="each claim's MDE at the paper's sizes instead")
    args = ap.parse_args(argv)
    start = time.perf_counter()
    text = claims_markdown(args.datasets) if args.claims else markdown(args.datasets)
    print(text)
    print(f"\n{time.perf_counter() - start:.0f} s")
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
