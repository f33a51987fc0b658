"""Batched scoring with the reward-model ensemble (the committee and the evaluation reuse it).

``EnsembleScorer.from_dirs([seed0, seed1, seed2])`` loads every seed's
``AutoModelForSequenceClassification`` (and tokenizer) from its directory.
For many (scenario, reappraisal) pairs at once it

1. builds the model card's prompt for each pair and tokenizes it once per
   distinct tokenizer (truncation at ``max_length``, as the card's snippet);
2. groups the pairs by scenario: the prompt tokens a group shares (template
   + scenario, found on token ids) run once per seed into a KV cache, and
   only each candidate's own tokens run after it (``share_prefix``; a
   scenario with one candidate is scored whole);
3. sorts by token length and cuts into batches of ``batch_size``, each
   right-padded only to its own longest sequence;
4. runs one forward pass per seed per batch under ``torch.inference_mode``;
5. writes results back in input order.

A seed's score is the mean of its head outputs (one per rating dimension, z
units); the ensemble score is :func:`ensemble_score` (mean over seeds −
λ·std over seeds by default). Right padding keeps every real token at the
position it has when scored alone, and the head pools the last non-pad
token, so the numbers equal the card's one-at-a-time snippet (float32, to
~1e-6; a test holds it to 1e-4).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Sequence

import numpy as np

from reappraisal.errors import PipelineInputError
from reappraisal.training.batches import pad_right

from .penalty import PENALTIES, ensemble_score
from .prompts import encode_prompts, format_prompts, resolve_pad_token_id

__all__ = ["EnsembleScorer", "ensemble_score", "check_model_dir"]

#: Shorter shared prefixes are not worth a separate cache pass.
MIN_SHARED_PREFIX = 8


def check_model_dir(path: str | Path) -> Path:
    """A reward-model directory that exists and holds a ``config.json``; PipelineInputError otherwise."""
    p = Path(path)
    if not p.exists():
        raise PipelineInputError("reward-model directory does not exist", where=str(p))
    if not (p / "config.json").is_file():
        raise PipelineInputError(
            "not a saved model (no config.json); was training interrupted before the final save?",
            where=str(p),
        )
    return p


def _tokenizer_key(path: Path) -> str:
    """Identity of a saved tokenizer (hash of its files) so identical ones tokenize once."""
    h = hashlib.sha256()
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json", "merges.txt"):
        f = path / name
        if f.is_file():
            h.update(name.encode())
            h.update(f.read_bytes())
    return h.hexdigest()


class EnsembleScorer:
    """Score (scenario, reappraisal) pairs with one or more reward-model seeds."""

    def __init__(
        self,
        models: Sequence,
        tokenizers: Sequence,
        *,
        penalty: str = "std",
        lam: float = 0.5,
        batch_size: int = 32,
        max_length: int = 512,
        device: str | None = None,
        tokenizer_keys: Sequence[str] | None = None,
        names: Sequence[str] | None = None,
        share_prefix: bool = True,
    ):
        import torch

        if not models:
            raise ValueError("EnsembleScorer needs at least one model")
        if len(models) != len(tokenizers):
            raise ValueError("one tokenizer per model is required")
        if penalty not in PENALTIES:
            raise ValueError(f"unknown ensemble penalty {penalty!r}; known: {', '.join(PENALTIES)}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        n_labels = {int(m.config.num_labels) for m in models}
        if len(n_labels) != 1:
            raise PipelineInputError(f"the seeds' heads differ in size {sorted(n_labels)}", where="reward-model ensemble")
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.models = [m.to(self.device).eval() for m in models]
        self.tokenizers = list(tokenizers)
        self.penalty = penalty
        self.lam = float(lam)
        self.batch_size = int(batch_size)
        self.max_length = int(max_length)
        self.share_prefix = bool(share_prefix)
        self.n_labels = n_labels.pop()
        self.names = list(names) if names is not None else [f"seed{i}" for i in range(len(models))]
        keys = list(tokenizer_keys) if tokenizer_keys is not None else [str(id(t)) for t in self.tokenizers]
        # seeds sharing a tokenizer are scored from one tokenization
        self._groups: dict[str, list[int]] = {}
        for i, k in enumerate(keys):
            self._groups.setdefault(k, []).append(i)
        self.pad_ids = []
        for m, t in zip(self.models, self.tokenizers):
            try:
                pad = resolve_pad_token_id(t, m.config)
            except ValueError as exc:
                raise PipelineInputError(str(exc), where="reward-model tokenizer") from None
            m.config.pad_token_id = pad
            self.pad_ids.append(pad)

    @classmethod
    def from_dirs(
        cls,
        model_dirs: Sequence[str | Path],
        *,
        penalty: str = "std",
        lam: float = 0.5,
        batch_size: int = 32,
        max_length: int = 512,
        device: str | None = None,
        dtype: str | None = None,
        share_prefix: bool = True,
    ) -> "EnsembleScorer":
        """Load each seed (model + tokenizer) with ``from_pretrained`` from its directory.

        ``dtype`` (e.g. ``"bfloat16"``) defaults to float32.
        ``share_prefix`` runs the prompt tokens that the candidates of one
        scenario share once per seed (KV cache) instead of once per
        candidate. A missing directory, or one without a saved model, is a
        PipelineInputError.
        """
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        dirs = [check_model_dir(d) for d in model_dirs]
        if not dirs:
            raise PipelineInputError("no reward-model directories given", where="reward-model ensemble")
        torch_dtype = getattr(torch, dtype) if dtype else torch.float32
        models, tokenizers, keys = [], [], []
        cache: dict[str, object] = {}
        for d in dirs:
            key = _tokenizer_key(d)
            if key not in cache:
                cache[key] = AutoTokenizer.from_pretrained(d)
            tokenizers.append(cache[key])
            keys.append(key)
            models.append(AutoModelForSequenceClassification.from_pretrained(d, dtype=torch_dtype))
        return cls(
            models,
            tokenizers,
            penalty=penalty,
            lam=lam,
            batch_size=batch_size,
            max_length=max_length,
            device=device,
            tokenizer_keys=keys,
            names=[d.name for d in dirs],
            share_prefix=share_prefix,
        )

    @property
    def n_seeds(self) -> int:
        return len(self.models)

    def head_outputs(self, scenarios: Sequence[str], reappraisals: Sequence[str]) -> np.ndarray:
        """Raw head outputs, shape (n_seeds, n, n_labels), float64, in input order."""
        import torch

        prompts = format_prompts(scenarios, reappraisals)
        n = len(prompts)
        out = np.zeros((self.n_seeds, n, self.n_labels), dtype=np.float64)
        if n == 0:
            return out
        for seed_idx in self._groups.values():
            ids, _ = encode_prompts(self.tokenizers[seed_idx[0]], prompts, self.max_length, count_truncated=False)
            plain = list(range(n))
            with torch.inference_mode():
                if self.share_prefix:
                    plain = []
                    for rows, prefix_len in self._prefix_groups(ids, scenarios):
                        if prefix_len == 0:
                            plain.extend(rows)
                        else:
                            self._score_shared_prefix(ids, rows, prefix_len, seed_idx, out)
                self._score_plain(ids, plain, seed_idx, out)
        return out

    def _prefix_groups(self, ids: list[list[int]], scenarios: Sequence[str]):
        """(rows, shared prefix length) per scenario: the token ids all its prompts share.

        The prefix is found on token ids (no assumption about how the
        tokenizer splits text) and stops one token short of the shortest
        prompt, so every candidate keeps a suffix whose last token the head
        reads. Groups of one, or with a prefix under ``MIN_SHARED_PREFIX``
        tokens, get length 0 (scored the plain way).
        """
        by_scenario: dict[str, list[int]] = {}
        for i, v in enumerate(scenarios):
            by_scenario.setdefault(str(v), []).append(i)
        for rows in by_scenario.values():
            if len(rows) < 2:
                yield rows, 0
                continue
            first = ids[rows[0]]
            limit = min(len(ids[r]) for r in rows) - 1
            k = 0
            while k < limit and all(ids[r][k] == first[k] for r in rows):
                k += 1
            yield rows, (k if k >= MIN_SHARED_PREFIX else 0)

    def _score_plain(self, ids, rows: list[int], seed_idx: list[int], out: np.ndarray) -> None:
        """Length-sorted batches, right-padded per batch; one forward per seed per batch."""
        if not rows:
            return
        rows = sorted(rows, key=lambda r: -len(ids[r]))
        for start in range(0, len(rows), self.batch_size):
            batch_rows = rows[start : start + self.batch_size]
            batch = [ids[r] for r in batch_rows]
            padded: dict[int, tuple] = {}
            for s in seed_idx:
                pad = self.pad_ids[s]
                if pad not in padded:
                    padded[pad] = self._pad(batch, pad, s)
                input_ids, attention = padded[pad]
                logits = self.models[s](input_ids=input_ids, attention_mask=attention).logits
                out[s, batch_rows] = logits.float().cpu().numpy()

    def _score_shared_prefix(self, ids, rows: list[int], prefix_len: int, seed_idx: list[int], out: np.ndarray) -> None:
        """Run the shared prefix once per seed, then only each candidate's suffix against its cache.

        Same arithmetic as the full prompt (the suffix attends to the cached
        keys/values of the prefix at the same positions), a fraction of the
        tokens when many candidates answer one scenario.
        """
        import copy

        import torch
        from transformers import DynamicCache

        prefix = torch.tensor([ids[rows[0]][:prefix_len]], dtype=torch.long, device=self.device)
        rows = sorted(rows, key=lambda r: -len(ids[r]))
        for s in seed_idx:
            model = self.models[s]
            base = getattr(model, model.base_model_prefix)
            cache = base(input_ids=prefix, past_key_values=DynamicCache(config=model.config), use_cache=True).past_key_values
            for start in range(0, len(rows), self.batch_size):
                batch_rows = rows[start : start + self.batch_size]
                suffixes = [ids[r][prefix_len:] for r in batch_rows]
                input_ids, suffix_mask = self._pad(suffixes, self.pad_ids[s], s)
                attention = torch.cat(
                    [torch.ones((len(batch_rows), prefix_len), dtype=torch.long, device=self.device), suffix_mask], dim=1
                )
                batch_cache = copy.deepcopy(cache)
                batch_cache.batch_repeat_interleave(len(batch_rows))
                logits = model(
                    input_ids=input_ids, attention_mask=attention, past_key_values=batch_cache, use_cache=True
                ).logits
                out[s, batch_rows] = logits.float().cpu().numpy()

    def score_per_seed(self, scenarios: Sequence[str], reappraisals: Sequence[str]) -> np.ndarray:
        """Each seed's score (mean of its head outputs), shape (n_seeds, n)."""
        return self.head_outputs(scenarios, reappraisals).mean(axis=-1)

    def score(self, scenarios: Sequence[str], reappraisals: Sequence[str]) -> np.ndarray:
        """Ensemble score per pair, shape (n,): mean over seeds − λ·penalty over seeds."""
        return ensemble_score(self.score_per_seed(scenarios, reappraisals), self.penalty, self.lam)

    def _pad(self, batch: list[list[int]], pad: int, seed: int):
        if any(seq and seq[-1] == pad for seq in batch):
            raise PipelineInputError(
                f"a prompt ends with the pad token (id {pad}), so the head cannot find its last token; "
                "give the tokenizer a pad token that never ends a prompt",
                where=f"reward model {self.names[seed]}",
            )
        padded = pad_right(batch, pad)
        return padded["input_ids"].to(self.device), padded["attention_mask"].to(self.device)
