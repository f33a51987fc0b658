"""Judge backends behind one interface: conversations in, replies out as they arrive.

``backend.replies(conversations)`` yields ``(index, reply)`` for every
conversation it could answer and ``(index, CallFailure)`` for every call
that failed; the caller caches replies the moment they arrive, so a killed
stage keeps what it already paid for.

- :class:`TransformersBackend`: a local ``from_pretrained`` causal LM, the
  conversations rendered by its chat template, batched greedy (or sampled)
  generation (:func:`reappraisal.evaluation.generation.generate_hf`), or,
  with ``decoding.logprob``, the verdict read from P(A) vs P(B) after the
  prefill in one forward pass.
- :class:`OpenAIBackend`: any OpenAI-compatible ``/v1/chat/completions``
  endpoint (a vLLM server, a hosted API). The API key is read from the
  environment variable the judge YAML names and sent as ``Authorization:
  Bearer``; it is never logged, never put in an error message and never
  written to an artifact. Each request has a timeout; 429, 408 and 5xx
  responses, connection errors, timeouts and malformed responses are retried
  with exponential backoff (:mod:`reappraisal.http_retry`), honouring
  ``Retry-After`` when the server sends it; other 4xx responses (a wrong key,
  an unknown model) stop the stage at once. At most ``request.concurrency``
  calls are in flight. Request settings come from the validated judge spec
  (the schema fills their defaults).
"""

from __future__ import annotations

import os
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Iterator, Mapping, Sequence

from ..errors import ConfigError, PipelineInputError
from ..http_retry import Backoff, Retryable, call_with_retries, parse_retry_after
from .cache import model_fingerprint
from .generation import Decoding, generate_hf, load_generator, render_prompts
from .judge_spec import JudgeSpec

Conversation = Sequence[Mapping[str, str]]


@dataclass(frozen=True)
class CallFailure:
    """A call that produced no reply (never cached; asked again on the next run)."""

    reason: str


class EndpointRefused(PipelineInputError):
    """The endpoint refused the request for a reason retrying cannot fix (401, 403, 404, 400, ...)."""


class TransformersBackend:
    """A local causal LM judge (see module doc)."""

    def __init__(self, spec: JudgeSpec, *, model=None, tokenizer=None, device=None):
        if model is None or tokenizer is None:
            model, tokenizer = load_generator(spec.model, device)
        self.spec, self.model, self.tokenizer = spec, model, tokenizer
        self.decoding = Decoding.from_mapping(spec.decoding)

    def replies(self, conversations: Sequence[Conversation], progress=None) -> Iterator[tuple[int, str | CallFailure]]:
        prefill = self.spec.prefill or ""
        if self.spec.decoding["logprob"]:
            yield from self._logprob_replies(render_prompts(self.tokenizer, conversations), prefill, progress)
            return
        prompts = [p + prefill for p in render_prompts(self.tokenizer, conversations)]
        step = max(1, self.spec.batch_size) * 4
        seed = self.spec.decoding["seed"] or 0  # null counts as 0
        for start in range(0, len(prompts), step):
            chunk = prompts[start:start + step]
            outs = generate_hf(self.model, self.tokenizer, chunk, self.decoding, batch_size=self.spec.batch_size,
                               seed=int(seed) + start, progress=progress)
            for offset, out in enumerate(outs):
                yield start + offset, prefill + out.text

    def _logprob_replies(self, prompts: list[str], prefill: str, progress=None):
        """Replies read from P(A) vs P(B) right after the prefill (no generation): ``<prefill> A [P(A)=...]``."""
        from ..grm.pairwise import PairwiseModel

        judge = PairwiseModel(self.model, self.tokenizer, max_new_tokens=1, batch_size=self.spec.batch_size, mode="logprob")
        step = max(1, self.spec.batch_size) * 4
        for start in range(0, len(prompts), step):
            p_first = judge.prob_first(prompts[start:start + step], prefix=prefill)
            for offset, p in enumerate(p_first):
                yield start + offset, f"{prefill} {'A' if p >= 0.5 else 'B'} [P(A)={p:.6f}]"
            if progress is not None:
                progress(len(p_first))


class OpenAIBackend:
    """An OpenAI-compatible chat-completions endpoint (see module doc)."""

    def __init__(self, spec: JudgeSpec, *, session=None):
        import requests

        self.spec = spec
        self.url = spec.base_url.rstrip("/") + "/chat/completions"
        req = spec.request  # validated: the schema filled every default
        self.timeout = float(req["timeout_s"])
        self.max_retries = int(req["max_retries"])
        self.backoff = Backoff(float(req["backoff_s"]), float(req["max_backoff_s"]))
        self.concurrency = int(req["concurrency"])
        self._headers = {"Content-Type": "application/json"}
        if spec.api_key_env:
            key = os.environ.get(spec.api_key_env)
            if not key:
                raise ConfigError(f"api_key_env names the environment variable {spec.api_key_env}, which is not set",
                                  where=spec.path)
            self._headers["Authorization"] = f"Bearer {key}"
        self._session = session or requests.Session()
        adapter = requests.adapters.HTTPAdapter(pool_connections=self.concurrency, pool_maxsize=self.concurrency)
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)

    def body(self, conversation: Conversation) -> dict:
        d = self.spec.decoding
        body = {
            "model": self.spec.model,
            "messages": [dict(m) for m in conversation],
            "max_tokens": int(d["max_new_tokens"]),
            "temperature": float(d["temperature"]),
            "top_p": float(d["top_p"]),
        }
        if d["seed"] is not None:
            body["seed"] = int(d["seed"])
        return body

    def _post_once(self, conversation: Conversation) -> str:
        import requests

        try:
            resp = self._session.post(self.url, json=self.body(conversation), headers=self._headers, timeout=self.timeout)
        except requests.Timeout:
            raise Retryable(f"no answer within {self.timeout:g} s") from None
        except requests.ConnectionError as exc:
            raise Retryable(f"connection failed ({type(exc).__name__})") from None
        if resp.status_code in (408, 429) or resp.status_code >= 500:
            raise Retryable(f"HTTP {resp.status_code}", parse_retry_after(resp.headers.get("Retry-After")))
        if resp.status_code >= 400:
            raise EndpointRefused(f"{self.url} answered HTTP {resp.status_code} ({resp.reason}); check the judge's "
                                  "model name, base_url and API key", where=self.spec.path)
        try:
            content = resp.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise Retryable("malformed response (not a chat completion)") from None
        if not isinstance(content, str):
            raise Retryable("malformed response (message content is not text)")
        return content

    def call(self, conversation: Conversation) -> str | CallFailure:
        """One reply, with retries; a :class:`CallFailure` when every attempt failed."""
        try:
            return call_with_retries(self._post_once, conversation, max_retries=self.max_retries, backoff=self.backoff)
        except Retryable as last:
            return CallFailure(f"{last.reason} after {self.max_retries + 1} attempt(s)")

    def replies(self, conversations: Sequence[Conversation], progress=None) -> Iterator[tuple[int, str | CallFailure]]:
        pending = iter(enumerate(conversations))
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            running = {}
            for i, conv in pending:
                running[pool.submit(self.call, conv)] = i
                if len(running) >= self.concurrency:
                    break
            while running:
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in done:
                    i = running.pop(fut)
                    try:
                        result = fut.result()
                    except EndpointRefused:
                        for other in running:
                            other.cancel()
                        raise
                    if progress is not None:
                        progress(1)
                    yield i, result
                    nxt = next(pending, None)
                    if nxt is not None:
                        running[pool.submit(self.call, nxt[1])] = nxt[0]


def make_backend(spec: JudgeSpec, *, run: object = None, **kwargs):
    """The backend a judge YAML names; ``run`` seeds a panel's raters (other backends ignore it)."""
    if spec.backend == "panel":
        from .panel import PanelBackend

        return PanelBackend(spec, run=run)
    if spec.backend == "transformers":
        return TransformersBackend(spec, **kwargs)
    if spec.backend == "openai":
        return OpenAIBackend(spec, **kwargs)
    raise ConfigError(f"unknown backend {spec.backend!r}", where=spec.path)  # the schema refuses it first


def judge_fingerprint(spec: JudgeSpec) -> str:
    """The identity of what answers for a judge (weights, or a panel's rating model): part of the cache key."""
    if spec.backend == "panel":
        from .panel import panel_fingerprint

        return panel_fingerprint()
    return model_fingerprint(spec.model)
