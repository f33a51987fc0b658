"""trajectory_truth stage (demo only): gold and the raw proxies along the KL from the start, per checkpoint.

For one trained arm, each checkpoint (step 0: the model GRPO started from, which is also its KL reference;
the kept steps of ``policy.snapshot_steps``; the final model at ``max_steps``) draws fresh answers on the
training scenarios with the evaluation's decoding (``evaluation.truth.trajectory.answers_per_scenario`` each,
a seed of their own per arm and step). On the same answers:

* ``gold``: the world's gold (:mod:`reappraisal.data.demo_gold`), its mean and standard error, and the
  truth against the start: the panel's expected verdict of a checkpoint answer against a start answer
  (:func:`~reappraisal.evaluation.truth.pair_truth`, both sides draws);
* ``kl``: KL(checkpoint ‖ start) per answer, log p_checkpoint(y|x) − log p_start(y|x) of the whole sampled
  completion (reasoning and answer) at temperature 1: an unbiased estimate of the sequence KL from answers
  drawn from the checkpoint (the evaluation's decoding must sample at temperature 1 with top_p 1); its mean,
  standard error and square root, Gao et al.'s x-axis;
* the proxies the arm climbs, raw: the reward ensemble's score (every answer that passes the format gate)
  and the GRM's win rate against the median human (the first ``grm_answers_per_scenario`` passing answers
  of each scenario: a verdict costs a generation), each with the mean, standard deviation and count.

Rows: :data:`TRAJECTORY_COLUMNS`. The summary fits Gao's form and decides overoptimization from them
(:mod:`reappraisal.summary.trajectory`).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import ConfigError, PipelineInputError
from ..settings import Settings

TRAJECTORY_COLUMNS = ["arm", "step", "answers", "passed", "gold_mean", "gold_se", "truth_vs_start", "truth_se",
                      "kl", "kl_se", "sqrt_kl", "ensemble_mean", "ensemble_sd", "ensemble_n", "grm_mean", "grm_sd",
                      "grm_n", "w_rm", "w_grm"]


def checkpoints(start: str | Path, steps_dir: str | Path, final: str | Path, max_steps: int) -> list[tuple[int, Path]]:
    """(step, folder) in step order: the start (0), each kept step, the final model (``max_steps``)."""
    from ..policy.snapshots import snapshots

    kept = {s: p for s, p in snapshots(steps_dir).items() if 0 < s < max_steps}
    return [(0, Path(start)), *sorted(kept.items()), (int(max_steps), Path(final))]


def sequence_logprobs(model, prompt_ids: Sequence[Sequence[int]], completion_ids: Sequence[Sequence[int]], *,
                      batch_size: int = 64) -> np.ndarray:
    """log p(completion | prompt) under ``model`` per row (float64), teacher-forced on right-padded batches; the
    LM head projects only the positions that predict a completion token."""
    import torch

    out = np.zeros(len(prompt_ids), dtype=np.float64)
    order = sorted(range(len(prompt_ids)), key=lambda i: -(len(prompt_ids[i]) + len(completion_ids[i])))
    head = model.get_output_embeddings()
    for start in range(0, len(order), batch_size):
        idx = [i for i in order[start:start + batch_size] if len(completion_ids[i])]
        if not idx:
            continue
        seqs = [list(prompt_ids[i]) + list(completion_ids[i]) for i in idx]
        width = max(len(s) for s in seqs)
        ids = torch.zeros((len(idx), width), dtype=torch.long)
        mask = torch.zeros((len(idx), width), dtype=torch.long)
        rows, cols, targets = [], [], []
        for r, (i, s) in enumerate(zip(idx, seqs)):
            ids[r, :len(s)] = torch.tensor(s)
            mask[r, :len(s)] = 1
            p, c = len(prompt_ids[i]), len(completion_ids[i])
            rows += [r] * c
            cols += range(p - 1, p - 1 + c)  # position t predicts token t + 1
            targets += list(completion_ids[i])
        with torch.no_grad():
            hidden = model.base_model(input_ids=ids.to(model.device), attention_mask=mask.to(model.device))[0]
            logits = head(hidden[torch.tensor(rows), torch.tensor(cols)]).double()
            token_logp = (logits.gather(-1, torch.tensor(targets, device=logits.device)[:, None])[:, 0]
                          - torch.logsumexp(logits, dim=-1)).cpu().numpy()
        np.add.at(out, np.asarray(idx)[np.asarray(rows, dtype=int)], token_logp)
    return out


def _mean_se(values: np.ndarray) -> tuple[float, float]:
    values = np.asarray(values, dtype=float)
    if len(values) == 0:
        return math.nan, math.nan
    se = float(values.std(ddof=1) / math.sqrt(len(values))) if len(values) > 1 else math.nan
    return float(values.mean()), se


def draw_checkpoint(arm: str, step: int, model_dir: Path, reference, vignettes: pd.DataFrame, settings: Settings,
                    *, per_scenario: int) -> pd.DataFrame:
    """The checkpoint's fresh answers on the training scenarios: the generations table's columns plus
    ``logp``/``ref_logp`` of each completion and each answer's gold per rater profile."""
    from ..batched_generation import generate_token_ids
    from ..data.demo_gold import SHARES, profile_qualities_of
    from ..policy.answer import decode_completions
    from ..policy.prompts import build_messages
    from .answers import answers_table, format_gate, requests_for
    from .generation import Completion, Decoding, load_generator, render_prompts
    from .seeds import derived_seed
    from .truth_draws import PROFILE_COLUMNS

    decoding = Decoding.from_settings(settings.evaluation.generation)
    if decoding.temperature != 1.0 or decoding.top_p != 1.0:
        raise ConfigError("the KL along the trajectory reads answers sampled from the policy itself: "
                          "temperature 1 and top_p 1", where="config evaluation.generation")
    requests = requests_for(vignettes, ["train"], {"train": per_scenario})
    seed = derived_seed(settings.seed, "trajectory", arm, step)
    model, tokenizer = load_generator(str(model_dir))
    prompts = render_prompts(tokenizer, [build_messages(s) for s in requests["scenario"]])
    generated = generate_token_ids(model, tokenizer, prompts, max_new_tokens=decoding.max_new_tokens,
                                   batch_size=int(settings.evaluation.generation.batch_size),
                                   temperature=decoding.temperature, top_p=decoding.top_p, seed=seed)
    texts = decode_completions(tokenizer, [g.ids for g in generated])
    completions = [Completion(t, "stop" if g.stopped else "length", g.prompt_tokens, len(g.ids))
                   for g, t in zip(generated, texts)]
    table = answers_table(requests, completions, system=f"{arm}@{step}", run=0, seed=seed, gate=format_gate(settings.policy))
    prompt_ids = tokenizer(prompts, add_special_tokens=False)["input_ids"]
    ids = [g.ids for g in generated]
    if reference is None:  # the start is its own reference: KL 0 by definition, nothing to compute
        table["logp"] = table["ref_logp"] = 0.0
    else:
        table["logp"] = sequence_logprobs(model, prompt_ids, ids)
        table["ref_logp"] = sequence_logprobs(reference, prompt_ids, ids)
    profiles = profile_qualities_of(table["answer"].tolist(), requests["scenario"].tolist())
    table["gold"] = profiles @ SHARES
    for k, column in enumerate(PROFILE_COLUMNS):
        table[column] = profiles[:, k]
    table["scenario"] = requests["scenario"].to_numpy()
    return table


def checkpoint_row(arm: str, step: int, draws: pd.DataFrame, start: pd.DataFrame, panel, scorers,
                   weights: Mapping[str, float], *, grm_per_scenario: int) -> dict[str, Any]:
    """One row of :data:`TRAJECTORY_COLUMNS` from a checkpoint's draws and the start's."""
    from .truth import pair_truth
    from .truth_draws import PROFILE_COLUMNS

    def by_scenario(frame):
        return {str(v): g.sort_values("sample")[PROFILE_COLUMNS].to_numpy(dtype=float)
                for v, g in frame.groupby("vignette_id", sort=True)}

    truth = pair_truth(by_scenario(draws), by_scenario(start), panel, opponent_is_draw=True)
    kl = (draws["logp"] - draws["ref_logp"]).to_numpy(dtype=float)
    kl_mean, kl_se = _mean_se(kl)
    gold_mean, gold_se = _mean_se(draws["gold"].to_numpy())
    passed = draws[~(draws["empty"] | draws["too_long"])]
    rm, grm = scorers
    row = {"arm": arm, "step": int(step), "answers": len(draws), "passed": len(passed), "gold_mean": gold_mean,
           "gold_se": gold_se, "truth_vs_start": truth.value, "truth_se": truth.se, "kl": kl_mean, "kl_se": kl_se,
           "sqrt_kl": math.sqrt(max(kl_mean, 0.0)), "w_rm": float(weights["w_rm"]),
           "w_grm": float(weights["w_grm"])}
    for name, scorer in (("ensemble", rm), ("grm", grm)):
        row.update({f"{name}_mean": math.nan, f"{name}_sd": math.nan, f"{name}_n": 0})
        if scorer is None or passed.empty:
            continue
        sub = passed if name == "ensemble" else passed.sort_values(["vignette_id", "sample"]).groupby(
            "vignette_id", sort=True).head(grm_per_scenario)
        if name == "ensemble":
            values = np.asarray(scorer.score(sub["scenario"].tolist(), sub["answer"].tolist()), dtype=float)
        else:
            values = np.asarray(scorer.score(sub["vignette_id"].astype(str).tolist(), sub["scenario"].tolist(),
                                             sub["answer"].tolist()), dtype=float)
        row.update({f"{name}_mean": float(values.mean()),
                    f"{name}_sd": float(values.std(ddof=1)) if len(values) > 1 else math.nan,
                    f"{name}_n": int(len(values))})
    return row


def trajectory(arm: str, *, start: Path, steps_dir: Path, final: Path, vignettes: pd.DataFrame, targets,
               settings: Settings, rm_dirs: Sequence[str], grm_dir: str | None) -> pd.DataFrame:
    """Every checkpoint's row (see module doc)."""
    from tqdm.auto import tqdm

    from ..policy.arms import arm_instance
    from ..policy.proxy_scorers import build_scorers, judge_settings
    from ..training.settings import set_cpu_threads
    from .generation import load_generator
    from .truth_draws import panel_model

    policy = settings.policy
    instance = arm_instance(policy, arm)
    if not instance.arm.trained:
        raise PipelineInputError(f"arm {arm!r} is not trained here: it has no trajectory",
                                 where="config evaluation.truth.trajectory.arms")
    traj = settings.evaluation.truth.trajectory
    set_cpu_threads(settings.evaluation.generation.cpu_threads, use_cpu=True)
    judges = judge_settings(instance.arm, reward=settings.reward, grm=settings.grm,
                            primary_dimension=settings.data.primary_dimension if settings.data else None,
                            rm_dirs=rm_dirs, grm_dir=grm_dir)
    scorers = build_scorers(judges, targets=targets, vignettes=vignettes, device="cpu")
    panel = panel_model(settings.evaluation)
    reference, _ = load_generator(str(start))
    train = vignettes[vignettes["pool"] == "train"]
    rows, start_draws = [], None
    points = checkpoints(start, steps_dir, final, int(policy.max_steps))
    for step, folder in tqdm(points, desc=f"trajectory {arm}", unit="checkpoint"):
        draws = draw_checkpoint(arm, step, folder, None if step == 0 else reference, train, settings,
                                per_scenario=int(traj.answers_per_scenario))
        start_draws = draws if step == 0 else start_draws
        rows.append(checkpoint_row(arm, step, draws, start_draws, panel, scorers, vars(instance.arm.weights),
                                   grm_per_scenario=int(traj.grm_answers_per_scenario)))
    return pd.DataFrame(rows, columns=TRAJECTORY_COLUMNS)


def cli_main(argv: Sequence[str] | None = None) -> int:
    from ..atomic import atomic_path
    from ..input_tables import read_table
    from ..params import parse_params
    from .truth_draws import check_truth_allowed

    ap = argparse.ArgumentParser(prog="reappraisal trajectory-truth", description=__doc__.splitlines()[0])
    ap.add_argument("--arm", required=True)
    ap.add_argument("--start", required=True, help="the model GRPO started from (the KL reference)")
    ap.add_argument("--steps", required=True, help="results/policy/<arm>/steps")
    ap.add_argument("--final", required=True, help="results/policy/<arm>/model")
    ap.add_argument("--vignettes", required=True)
    ap.add_argument("--targets", required=True, help="for the GRM's reference reappraisals")
    ap.add_argument("--rm-dirs", nargs="*", default=[])
    ap.add_argument("--grm-dir", default=None)
    ap.add_argument("--out", required=True)
    ap.add_argument("--params", default="{}")
    args = ap.parse_args(argv)
    settings = Settings.from_params(parse_params(args.params))
    check_truth_allowed(settings)
    vignettes = read_table(args.vignettes, ["vignette_id", "text", "pool"])
    frame = trajectory(args.arm, start=Path(args.start), steps_dir=Path(args.steps), final=Path(args.final),
                       vignettes=vignettes, targets=read_table(args.targets), settings=settings, rm_dirs=args.rm_dirs,
                       grm_dir=args.grm_dir)
    with atomic_path(args.out, suffix=".parquet") as tmp:
        frame.to_parquet(tmp, index=False)
    print(json.dumps({"arm": args.arm, "steps": frame["step"].tolist(),
                      "sqrt_kl": [round(x, 3) for x in frame["sqrt_kl"]],
                      "truth_vs_start": [round(x, 3) for x in frame["truth_vs_start"]]}))
    return 0
