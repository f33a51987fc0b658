"""Ask a causal LM for pairwise verdicts, many at once.

:class:`PairwiseModel` wraps a ``from_pretrained`` checkpoint (the GRM, or any chat
causal LM) and answers lists of (scenario, slot A, slot B) prompts:

* ``generate`` mode: all prompts in padded batches of ``batch_size``
  (:func:`reappraisal.batched_generation.generate_token_ids`: left padding,
  longest first to waste little padding), greedy decoding, at most
  ``max_new_tokens`` new tokens; the verdict is parsed from each reply
  (:func:`reappraisal.grm.verdict.parse_verdict`). With ``engine="vllm"`` the
  same prompts go through vLLM's offline ``LLM.generate`` (temperature 0).
* ``logprob`` mode: no reasoning; the prompt is followed by the answer prefix
  (``…ANSWER:``) and the verdict is the more probable of the two letter
  tokens, with P(A) = softmax over the two letters' logits. One padded
  forward pass per batch; any causal LM works (nothing is parsed).

:meth:`PairwiseModel.generate_one_at_a_time` is the slow reference the tests and the
benchmark compare the batched path with.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from reappraisal.batched_generation import generate_token_ids, load_causal_lm, prepare_for_batches

from .prompts import answer_prefix, completion_style, judge_prompt
from .verdict import A, B, parse_verdict

MODES = ("generate", "logprob")
ENGINES = ("hf", "vllm")


@dataclass
class Verdicts:
    """What a judge said about N prompts: letters, raw replies and P(slot A wins)."""

    verdicts: list[str]
    texts: list[str]
    #: P(A) per prompt in logprob mode; 1/0/0.5 (A/B/error) in generate mode.
    p_first: np.ndarray = field(default_factory=lambda: np.zeros(0))


class PairwiseModel:
    """A pairwise judge over one causal LM (see module doc)."""

    def __init__(
        self,
        model,
        tokenizer,
        *,
        max_new_tokens: int,
        batch_size: int = 32,
        mode: str = "generate",
        engine: str = "hf",
        llm=None,
    ):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
        if engine == "vllm" and mode != "generate":
            raise ValueError("the vllm engine supports mode='generate' only")
        if max_new_tokens < 1 or batch_size < 1:
            raise ValueError("max_new_tokens and batch_size must be >= 1")
        prepare_for_batches(tokenizer)  # batched generation and last-position logits need left padding
        self.model, self.tokenizer = model, tokenizer
        self.max_new_tokens, self.batch_size = int(max_new_tokens), int(batch_size)
        self.mode, self.engine, self._llm = mode, engine, llm
        self.style = completion_style(tokenizer)

    @classmethod
    def from_dir(
        cls,
        model_dir: str | Path,
        *,
        max_new_tokens: int,
        batch_size: int = 32,
        mode: str = "generate",
        device=None,
        engine: str = "hf",
    ) -> "PairwiseModel":
        if engine == "vllm":
            from transformers import AutoTokenizer
            from vllm import LLM  # optional dependency (paper preset, GPU)

            tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
            return cls(None, tokenizer, max_new_tokens=max_new_tokens, batch_size=batch_size,
                       mode=mode, engine=engine, llm=LLM(model=str(model_dir), dtype="auto"))
        model, tokenizer = load_causal_lm(model_dir, device)
        return cls(model, tokenizer, max_new_tokens=max_new_tokens, batch_size=batch_size, mode=mode)

    # ------------------------------------------------------------------ prompts
    def prompts(self, scenarios: Sequence[str], firsts: Sequence[str], seconds: Sequence[str]) -> list[str]:
        if not len(scenarios) == len(firsts) == len(seconds):
            raise ValueError("scenarios, firsts and seconds must have equal lengths")
        return [judge_prompt(self.tokenizer, v, a, b) for v, a, b in zip(scenarios, firsts, seconds)]

    def judge(self, scenarios: Sequence[str], firsts: Sequence[str], seconds: Sequence[str]) -> Verdicts:
        """Verdicts on N prompts (slot A = ``firsts[i]``), batched."""
        prompts = self.prompts(scenarios, firsts, seconds)
        if self.mode == "logprob":
            p = self.prob_first(prompts)
            return Verdicts([A if x >= 0.5 else B for x in p], [""] * len(p), p)
        texts = self.generate(prompts)
        return _from_texts(texts)

    def judge_one_at_a_time(self, scenarios, firsts, seconds) -> Verdicts:
        """The unbatched reference for :meth:`judge` (one ``generate`` / forward call per prompt)."""
        prompts = self.prompts(scenarios, firsts, seconds)
        if self.mode == "logprob":
            p = np.concatenate([self.prob_first([q]) for q in prompts]) if prompts else np.zeros(0)
            return Verdicts([A if x >= 0.5 else B for x in p], [""] * len(p), p)
        return _from_texts(self.generate_one_at_a_time(prompts))

    # --------------------------------------------------------------- generation
    def generate(self, prompts: Sequence[str]) -> list[str]:
        """Greedy replies to ``prompts``: padded batches, longest prompts first, order restored."""
        if not prompts:
            return []
        if self.engine == "vllm":
            from vllm import SamplingParams

            outs = self._llm.generate(list(prompts), SamplingParams(temperature=0.0, max_tokens=self.max_new_tokens))
            return [o.outputs[0].text for o in outs]
        return self._decode(generate_token_ids(self.model, self.tokenizer, prompts,
                                               max_new_tokens=self.max_new_tokens, batch_size=self.batch_size))

    def generate_one_at_a_time(self, prompts: Sequence[str]) -> list[str]:
        """The unbatched reference for :meth:`generate` (one ``generate`` call per prompt)."""
        return [self._decode(generate_token_ids(self.model, self.tokenizer, [p], max_new_tokens=self.max_new_tokens,
                                                batch_size=1))[0] for p in prompts]

    def _decode(self, generated) -> list[str]:
        return self.tokenizer.batch_decode([g.ids for g in generated], skip_special_tokens=True)

    # ------------------------------------------------------------------ logprob
    def prob_first(self, prompts: Sequence[str], prefix: str | None = None) -> np.ndarray:
        """P(verdict A) at the answer position for each prompt (softmax over the two letters).

        ``prefix`` is the text between the prompt and the letter (default: this
        GRM's answer prefix); an evaluation judge passes its own prefill.
        """
        import torch

        contexts, letters = [], []
        prefix = answer_prefix(self.style) if prefix is None else prefix
        for p in prompts:
            ctx, a_id, b_id = self._answer_position(p + prefix)
            contexts.append(ctx)
            letters.append((a_id, b_id))
        out = np.zeros(len(prompts))
        for start in range(0, len(prompts), self.batch_size):
            chunk = contexts[start:start + self.batch_size]
            enc = self.tokenizer.pad({"input_ids": chunk}, padding=True, return_tensors="pt")
            enc = {k: v.to(self.model.device) for k, v in enc.items()}
            with torch.inference_mode():
                logits = self.model(**enc).logits[:, -1, :].float()
            ids = torch.tensor(letters[start:start + self.batch_size], device=logits.device)
            pair = torch.gather(logits, 1, ids)
            out[start:start + len(chunk)] = torch.softmax(pair, dim=1)[:, 0].cpu().numpy()
        return out

    def _answer_position(self, text: str) -> tuple[list[int], int, int]:
        """Token ids up to the verdict letter, and the ids of the letters A and B there."""
        ids_a = self.tokenizer(text + " A", add_special_tokens=False)["input_ids"]
        ids_b = self.tokenizer(text + " B", add_special_tokens=False)["input_ids"]
        n = 0
        while n < min(len(ids_a), len(ids_b)) and ids_a[n] == ids_b[n]:
            n += 1
        if n == 0 or n >= min(len(ids_a), len(ids_b)):
            raise ValueError("cannot locate the verdict letter's token after the answer prefix")
        return ids_a[:n], ids_a[n], ids_b[n]


def _from_texts(texts: list[str]) -> Verdicts:
    verdicts = [parse_verdict(t) for t in texts]
    p = np.array([{A: 1.0, B: 0.0}.get(v, 0.5) for v in verdicts])
    return Verdicts(verdicts, texts, p)
