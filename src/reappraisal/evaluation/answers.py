"""A system's fresh answers.

One request per answer on its pools, the policy's completions of its own
prompt with the evaluation's decoding, and the generations table they make
(see docs/CONVENTIONS.md, evaluation contract).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import pandas as pd

from ..errors import PipelineInputError
from ..policy.answer import extract_answer
from ..policy.committee import FormatGate
from ..policy.prompts import build_messages
from ..settings import GenerationSettings, PolicySettings, Settings, as_config
from ..table_contracts import GENERATION_COLUMNS
from ..training.settings import set_cpu_threads
from .confirmation_pool import split_pools
from .generation import Decoding, generate_hf, generate_vllm, load_generator, render_prompts
from .seeds import derived_seed
from .systems import system_pools


def requests_for(vignettes: pd.DataFrame, pools: Sequence[str], per_pool: Mapping[str, int]) -> pd.DataFrame:
    """One row per answer to generate: vignette_id, pool, scenario, sample."""
    rows = []
    for v in vignettes[vignettes["pool"].isin(list(pools))].sort_values("vignette_id").itertuples(index=False):
        for k in range(int(per_pool[v.pool])):
            rows.append({"vignette_id": str(v.vignette_id), "pool": str(v.pool), "scenario": str(v.text), "sample": k})
    return pd.DataFrame(rows, columns=["vignette_id", "pool", "scenario", "sample"])


def answers_table(requests: pd.DataFrame, completions, *, system: str, run: int, seed: int,
                  gate: FormatGate) -> pd.DataFrame:
    """The generations table from requests and their completions (pure)."""
    rows = []
    for r, c in zip(requests.itertuples(index=False), completions):
        answer = extract_answer(c.text)
        check = gate.check(answer)
        rows.append({
            "run": run, "arm": system, "vignette_id": r.vignette_id, "pool": r.pool, "sample": r.sample, "seed": seed,
            "answer_id": f"{system}|run{run}|{r.vignette_id}|{r.sample}", "raw_text": c.text, "answer": answer,
            "finish_reason": c.finish_reason, "prompt_tokens": c.prompt_tokens,
            "completion_tokens": c.completion_tokens, "empty": check.reason == "empty",
            "too_long": check.reason == "too_long", "truncated": c.finish_reason == "length",
        })
    return pd.DataFrame(rows, columns=GENERATION_COLUMNS)


def sample_completions(model_dir: str, scenarios, gen: GenerationSettings, *, seed: int, desc: str) -> list:
    """The policy's completions of its own prompt for each scenario text, with the evaluation's decoding
    (``gen``: the ``evaluation.generation`` settings)."""
    decoding = Decoding.from_settings(gen)
    conversations = [build_messages(s) for s in scenarios]
    if gen.backend == "vllm":
        return generate_vllm(model_dir, conversations, decoding, seed=seed, engine_kwargs=dict(gen.vllm))
    from tqdm.auto import tqdm

    model, tokenizer = load_generator(model_dir)
    set_cpu_threads(gen.cpu_threads, use_cpu=model.device.type == "cpu")
    prompts = render_prompts(tokenizer, conversations)
    with tqdm(total=len(prompts), desc=desc, unit="answer", mininterval=2.0) as bar:
        return generate_hf(model, tokenizer, prompts, decoding, batch_size=int(gen.batch_size), seed=seed,
                           progress=bar.update)


def format_gate(policy: PolicySettings) -> FormatGate:
    """The training's format gate, flagging the answers it would refuse (empty, too long)."""
    return FormatGate.from_settings(policy.format_gate)


def generate_answers(system: str, run: int, model_dir: str, vignettes: pd.DataFrame, settings: Settings,
                     pools: Sequence[str] | None = None, per_pool: Mapping[str, int] | None = None) -> pd.DataFrame:
    """One system's answers for one run on its pools (or ``pools``), ``per_pool`` answers per scenario of each
    pool (default ``evaluation.answers_per_scenario``); ``vignettes`` as the data contract has them (the
    confirmation scenarios are split off here, :mod:`.confirmation_pool`)."""
    ev = settings.evaluation
    vignettes = split_pools(vignettes, ev, int(settings.seed))
    requests = requests_for(vignettes, pools or system_pools(settings, system),
                            per_pool if per_pool is not None else as_config(ev.answers_per_scenario))
    seed = derived_seed(settings.seed, "generate", system, run)
    completions = sample_completions(model_dir, requests["scenario"], ev.generation, seed=seed,
                                     desc=f"generate {system} run {run}")
    return answers_table(requests, completions, system=system, run=run, seed=seed, gate=format_gate(settings.policy))


def runs_and_outputs(runs: Sequence[str], outs: Sequence[str]) -> list[tuple[int, str]]:
    """(run, output) pairs of a command given ``--run`` and ``--out`` once per run, in the same order."""
    if len(runs) != len(outs):
        raise PipelineInputError(f"{len(runs)} run(s) but {len(outs)} output(s): give one --out per --run",
                                 where="--out")
    return [(int(r), o) for r, o in zip(runs, outs)]
