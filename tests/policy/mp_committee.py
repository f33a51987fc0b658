"""Multi-process check of the committee reward, run by tests/policy/test_multiprocess.py.

Launched as ``accelerate launch --multi_gpu --num_processes 2 tests/policy/mp_committee.py ...``
with ``ACCELERATE_USE_CPU=true`` (accelerate's CPU multi-process path, gloo;
``accelerate launch --cpu`` alone starts a single process).

``--mode adapter``: a global batch of 3 groups × 4 completions is split in
process order (6 per process), so the middle group straddles the two
processes; each process calls the TRL adapter on its slice only. Rank 0
writes the gathered rewards.

``--mode trainer``: one real GRPOTrainer step on the tiny policy with 6
completions per process and groups of 4 (again a straddling group). A
recording wrapper gathers each call's (vignette_id, answer, reward); rank 0
writes them so the test can recompute the committee in one process.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from accelerate import PartialState
from accelerate.utils import gather_object

from fakes import FakeGRM, FakeRM, make_vignettes
from reappraisal.policy.committee import CommitteeWeights, FormatGate
from reappraisal.policy.reward_adapter import CommitteeReward

G = 4


def adapter_batch():
    """12 completions: 3 groups of 4 (one straddles the processes), incl. gated answers."""
    vids = ["v01"] * G + ["v02"] * G + ["v03"] * G
    scen = {v: f"scenario {v}" for v in set(vids)}
    answers = [
        "Maybe they forgot.", "Perhaps something came up. Ask them.", "", "It could be stress.",
        "They might be shy.", "One. Two. Three.", "Possibly they were busy.", "You matter to them.",
        "Maybe a hard day.", "They care about you.", "Perhaps they were tired.", "It is not about you.",
    ]
    completions = [f"some thinking</think>\n\n{a}" if a else "thinking that never closes" for a in answers]
    return vids, [scen[v] for v in vids], completions


def run_adapter(out: Path) -> None:
    state = PartialState(cpu=True)
    vids, scens, completions = adapter_batch()
    n = len(completions) // state.num_processes
    sl = slice(state.process_index * n, (state.process_index + 1) * n)
    reward = CommitteeReward(
        weights=CommitteeWeights(0.5, 0.5, 0.5), gate=FormatGate(2, -3.0), num_generations=G,
        rm_scorer=FakeRM(), grm_scorer=FakeGRM(),
    )
    local = reward(prompts=[None] * n, completions=completions[sl], vignette_id=vids[sl], scenario=scens[sl])
    rewards = gather_object(local)
    if state.is_main_process:
        out.write_text(json.dumps({"num_processes": state.num_processes, "rewards": rewards}))


class Recorder:
    """Wraps the adapter; gathers (vignette_id, answer, reward) of every call."""

    __name__ = "committee"

    def __init__(self, inner: CommitteeReward):
        self.inner = inner
        self.calls = []

    def __call__(self, prompts, completions, completion_ids=None, **kw):
        rewards = self.inner(prompts, completions, completion_ids, **kw)
        local = list(zip(kw["vignette_id"], self.inner.last_answers, rewards))
        self.calls.append({"n_local": len(rewards), "records": gather_object(local)})
        return rewards


def run_trainer(out: Path, model_dir: str, work: Path) -> None:
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from reappraisal.policy.prompts import prompt_rows

    args = GRPOConfig(
        output_dir=str(work), learning_rate=1e-4, beta=0.04, num_generations=G, max_completion_length=40,
        per_device_train_batch_size=6, max_steps=1, save_strategy="no", logging_steps=1, report_to="none",
        use_cpu=True, seed=0, remove_unused_columns=False, disable_tqdm=True,
    )
    tok = AutoTokenizer.from_pretrained(model_dir)
    vig = make_vignettes()
    rows = prompt_rows(vig[vig["pool"] == "train"].to_dict("records"))
    rec = Recorder(
        CommitteeReward(
            weights=CommitteeWeights(0.5, 0.5, 0.5), gate=FormatGate(2, -3.0), num_generations=G,
            rm_scorer=FakeRM(), grm_scorer=FakeGRM(), tokenizer=tok,
        )
    )
    trainer = GRPOTrainer(model=model_dir, reward_funcs=[rec], args=args, train_dataset=Dataset.from_list(rows), processing_class=tok)
    trainer.train()
    state = PartialState()
    if state.is_main_process:
        out.write_text(json.dumps({"num_processes": state.num_processes, "calls": rec.calls}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["adapter", "trainer"], required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", default=None)
    ap.add_argument("--work", default=None)
    a = ap.parse_args()
    if a.mode == "adapter":
        run_adapter(Path(a.out))
    else:
        run_trainer(Path(a.out), a.model, Path(a.work))
    # Leave together and close gloo cleanly: a process exiting with the group
    # still open can abort ("terminate called without an active exception").
    PartialState().wait_for_everyone()
    import torch.distributed as dist

    if dist.is_initialized():
        dist.destroy_process_group()
    # Skip the interpreter's teardown: with the result written and the group closed, a worker thread still
    # joinable when C++ statics are destroyed can abort an otherwise finished process (SIGABRT, seen on CI).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
