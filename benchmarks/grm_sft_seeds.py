"""Does the demo GRM's SFT learn whatever the seed? Held-out accuracy per (seed, learning rate).

In a checkout whose data and base models are built (``reappraisal run results/grm/metrics.json``), trains the
GRM (``train-grm``: SFT then the short GRPO) and evaluates it (``evaluate-grm``) once per seed and learning rate,
with the build's own GRM settings otherwise (read from the ``--params`` files its rules wrote), into a
temporary folder; prints held-out accuracy and position consistency of the SFT and the final model.

    python benchmarks/grm_sft_seeds.py --seeds 20250101 20250102 20250103 --learning-rates 3e-3 1e-3

Each run takes one core for about a minute; two run side by side.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _params(root: Path, keys: set[str]) -> dict:
    """The build's params file whose top-level sections are exactly ``keys`` (plus preset and seed)."""
    for path in sorted((root / ".snakemake" / "params").glob("*.json")):
        doc = json.loads(path.read_text())
        if set(doc) - {"preset", "seed"} == keys:
            return doc
    raise SystemExit(f"no params file with sections {sorted(keys)}: build results/grm/metrics.json first")


def run_one(root: Path, out: Path, seed: int, lr: float) -> dict:
    train = _params(root, {"data", "grm", "training"})
    evaluate = _params(root, {"grm"})
    for doc in (train, evaluate):
        doc["seed"] = seed
        doc["grm"]["sft"]["learning_rate"] = lr
    out.mkdir(parents=True)
    (out / "train.json").write_text(json.dumps(train))
    (out / "eval.json").write_text(json.dumps(evaluate))
    py = [sys.executable, "-m", "reappraisal"]
    data = ["--pairs", "data/processed/pairs.parquet", "--vignettes", "data/interim/vignettes.parquet"]
    subprocess.run([*py, "train-grm", "--base-model", "results/base_models/grm", *data, "--targets", "data/processed/targets.parquet",
                    "--out", str(out / "model"), "--sft-out", str(out / "sft"), "--params", f"@{out / 'train.json'}"],
                   cwd=root, check=True, capture_output=True)
    subprocess.run([*py, "evaluate-grm", "--model", str(out / "model"), "--sft-model", str(out / "sft"), *data,
                    "--out", str(out / "metrics.json"), "--judgments-out", str(out / "verdicts.parquet"),
                    "--params", f"@{out / 'eval.json'}"], cwd=root, check=True, capture_output=True)
    models = json.loads((out / "metrics.json").read_text())["models"]
    return {"seed": seed, "lr": lr, **{f"{m}_{k}": v for m in ("sft", "final") for k, v in (
        ("accuracy", models[m]["accuracy"]["accuracy"]),
        ("consistency", models[m]["position_consistency"]["consistency"]))}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=ROOT, help="a checkout with its GRM inputs built")
    ap.add_argument("--seeds", type=int, nargs="+", default=[20250101, 20250102, 20250103])
    ap.add_argument("--learning-rates", type=float, nargs="+", default=[3e-3, 1e-3])
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        grid = [(s, lr) for lr in a.learning_rates for s in a.seeds]
        with ThreadPoolExecutor(a.jobs) as pool:
            rows = list(pool.map(lambda x: run_one(a.root, Path(tmp) / f"{x[0]}-{x[1]}", *x), grid))
    print("| lr | seed | SFT accuracy | SFT consistency | final accuracy | final consistency |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['lr']:g} | {r['seed']} | {r['sft_accuracy']:.3f} | {r['sft_consistency']:.2f} | "
              f"{r['final_accuracy']:.3f} | {r['final_consistency']:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
