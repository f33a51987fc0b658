"""Judge backends behind one interface: conversations in, replies out as they arrive.

``backend.replies(conversations)`` yields ``(index, reply)`` for every
conversation it could answer and ``(index, CallFailure)`` for every call
that failed; the caller caches replies the moment they arrive, so a killed
stage keeps what it already paid for. A reply is its text; an endpoint's
reply is a :class:`Reply`, text that also carries the model the response
said served it (``served_model``), which is recorded with its judgment.

- :class:`TransformersBackend`: a local ``from_pretrained`` causal LM, the
  conversations rendered by its chat template, batched greedy (or sampled)
  generation (:func:`reappraisal.evaluation.generation.generate_hf`), or,
  with ``decoding.logprob``, the verdict read from P(A) vs P(B) after the
  prefill in one forward pass.
- :class:`OpenAIBackend`: any OpenAI-compatible ``/v1/chat/completions``
  endpoint (a vLLM server, a hosted API). The API key is read from the
  environment variable the judge YAML names and sent as ``Authorization:
  Bearer``; it is never logged, never put in an error message and never
  written to an artifact: it is removed from every reply (its text and the
  model it names) before the reply is cached, so a server or proxy that
  echoes the request's headers cannot put it in the results. A reply the
  model did not finish (``finish_reason`` ``length``, ...) is kept marked
  (:mod:`.finish_reason`): unparseable, never a verdict. A redirect stops the
  stage naming where it led, unless ``request.follow_redirects`` (each reply
  then records the address that answered). Each attempt has a wall-clock deadline
  (``request.timeout_s``, for the whole attempt: connecting, the headers and
  the body, which is streamed), not only a limit per socket read: when it
  passes, the connection is shut down (:class:`_Deadline`), so a server that
  dribbles its reply cannot hold a call. 429, 408 and 5xx responses,
  connection errors, deadlines, truncated or undecodable bodies, malformed
  responses and any unexpected exception are retried with exponential backoff
  (:mod:`reappraisal.http_retry`), honouring ``Retry-After`` when the server
  sends it (capped at ``request.max_backoff_s``); when every attempt failed the call is a :class:`CallFailure`
  (counted, never cached), and the other calls are still asked. A body larger
  than ``request.max_reply_bytes`` is a failed attempt too (never cached). A
  reply whose ``model`` field names another model than the judge's (or one of
  ``request.accepted_models``) stops the stage, like a refusal. Other 4xx
  responses (401/403: the key was refused; an unknown model) stop the stage
  at once: no retry, the calls in flight are cut and nothing more is asked.
  At most ``request.concurrency`` calls are in flight. Request settings come
  from the validated judge spec (the schema fills their defaults).
"""

from __future__ import annotations

import functools
import json
import os
import socket
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Iterator, Mapping, Sequence

from ..errors import ConfigError, PipelineInputError
from ..http_retry import Backoff, Retryable, call_with_retries, parse_retry_after
from ..data.quoting import quote
from .cache import model_fingerprint
from .finish_reason import mark_unfinished
from .generation import Decoding, generate_hf, load_generator, render_prompts
from .judge_spec import JudgeSpec

Conversation = Sequence[Mapping[str, str]]


class Reply(str):
    """A reply's text, with the model the endpoint's response named (``served_model``; None when it named none)
    and the address that answered when a followed redirect led elsewhere (``url``; None when not redirected)."""

    served_model: str | None
    url: str | None

    def __new__(cls, text: str, served_model: str | None = None, url: str | None = None) -> "Reply":
        reply = super().__new__(cls, text)
        reply.served_model, reply.url = served_model, url
        return reply


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


#: How much of an unexpected exception's text a failure reason keeps.
REASON_CHARS = 200

_CURRENT = threading.local()  # the _Deadline of the attempt this thread is making


def _shutdown(conn, sock=None) -> None:
    """Shut down a connection's socket (both ways), so a read blocked on it returns at once.

    ``sock``: the socket the connection had when it sent the request. A response whose body ends when the
    connection closes (HTTP/1.0, or ``Connection: close`` without a length) takes the socket over: the
    connection then holds none, and only shutting down that socket ends a body that dribbles.
    """
    for s in {id(x): x for x in (getattr(conn, "sock", None), sock) if x is not None}.values():
        try:
            socket.socket.shutdown(s, socket.SHUT_RDWR)  # the plain socket's: an SSL socket's would drop its state
        except OSError:
            pass  # already closed


class _Deadline:
    """One attempt's wall-clock limit: when it passes (or :meth:`cut` is called), its connection is shut down.

    The connection is attached by the pools of :func:`_tracking_pools` when a
    request is sent on it (so slow headers are cut too) and, for any other
    connection (a proxy's), once the headers arrived. A connection remembers
    the deadline that last used it, so a deadline never cuts a connection
    another call took over from the pool.
    """

    def __init__(self, seconds: float):
        self.seconds = seconds
        self.at = time.monotonic() + seconds
        self.passed = False
        self._conn = None
        self._sock = None  # the connection's socket once connected (a close-delimited body keeps reading from it)
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self.cut)
        self._timer.daemon = True

    def attach(self, conn) -> None:
        if conn is None:
            return
        with self._lock:
            self._conn = conn
            conn._judge_deadline = self
            self._sock = getattr(conn, "sock", None) or self._sock
            if self.passed:
                _shutdown(conn, self._sock)

    def connected(self, conn) -> None:
        """``conn`` (attached) opened its socket: remember it, the response may take it over."""
        with self._lock:
            if self._conn is conn:
                self._sock = getattr(conn, "sock", None)
                if self.passed:
                    _shutdown(conn, self._sock)

    def cut(self) -> None:
        with self._lock:
            self.passed = True
            if self._conn is not None and getattr(self._conn, "_judge_deadline", None) is self:
                _shutdown(self._conn, self._sock)

    def __enter__(self) -> "_Deadline":
        _CURRENT.deadline = self
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self._timer.cancel()
        with self._lock:
            self._conn = self._sock = None
        _CURRENT.deadline = None


@functools.cache
def _tracking_pools() -> dict:
    """urllib3 pool classes whose connections attach themselves to the sending thread's :class:`_Deadline`."""
    from urllib3.connection import HTTPConnection, HTTPSConnection
    from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

    class Tracked:
        def request(self, *args, **kwargs):
            deadline = getattr(_CURRENT, "deadline", None)
            if deadline is not None:
                deadline.attach(self)
            return super().request(*args, **kwargs)

        def connect(self):
            super().connect()
            deadline = getattr(self, "_judge_deadline", None)
            if deadline is not None:
                deadline.connected(self)

    class TrackedHTTPConnection(Tracked, HTTPConnection):
        pass

    class TrackedHTTPSConnection(Tracked, HTTPSConnection):
        pass

    class TrackedHTTPPool(HTTPConnectionPool):
        ConnectionCls = TrackedHTTPConnection

    class TrackedHTTPSPool(HTTPSConnectionPool):
        ConnectionCls = TrackedHTTPSConnection

    return {"http": TrackedHTTPPool, "https": TrackedHTTPSPool}


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
        self.max_reply_bytes = int(req["max_reply_bytes"])
        self.accepted_models = {spec.model, *req["accepted_models"]}
        self.follow_redirects = bool(req["follow_redirects"])
        self._headers = {"Content-Type": "application/json"}
        self._key = None
        if spec.api_key_env:
            key = os.environ.get(spec.api_key_env)
            if not key:
                raise ConfigError(f"api_key_env names the environment variable {spec.api_key_env}, which is not set",
                                  where=spec.path)
            self._key = key
            self._headers["Authorization"] = f"Bearer {key}"
        self._session = session or requests.Session()
        adapter = requests.adapters.HTTPAdapter(pool_connections=self.concurrency, pool_maxsize=self.concurrency)
        adapter.poolmanager.pool_classes_by_scheme = _tracking_pools()
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)
        self._stop = threading.Event()  # set when the stage stops: no more attempts, no more waits
        self._active: set[_Deadline] = set()
        self._active_lock = threading.Lock()

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

    def _redact(self, text: str) -> str:
        return text.replace(self._key, "***") if self._key else text

    def _unexpected(self, exc: BaseException) -> str:
        """``exc`` as one short line that never shows the API key."""
        text = " ".join(str(exc).split())
        text = text if len(text) <= REASON_CHARS else text[:REASON_CHARS] + "..."
        return self._redact(f"unexpected {type(exc).__name__}" + (f" ({text})" if text else ""))

    def _refused(self, resp) -> EndpointRefused:
        if resp.status_code in (401, 403):
            key = f"the API key in ${self.spec.api_key_env}" if self.spec.api_key_env else "a request without an API key"
            what = f"it refused {key}; check the key and its access to model {self.spec.model!r}"
        else:
            what = "check the judge's model name, base_url and API key"
        return EndpointRefused(self._redact(f"{self.url} answered HTTP {resp.status_code} ({resp.reason}): {what}"),
                               where=self.spec.path)

    def _redirected(self, resp) -> EndpointRefused:
        """A redirect the judge does not follow (``request.follow_redirects`` false, or a 3xx at its end)."""
        where = resp.headers.get("Location")
        to = f"to {quote(self._redact(where))}" if where else "without a Location"
        fix = ("set base_url to the new address if the endpoint moved, or request.follow_redirects: true to follow "
               "redirects (each reply then records the address that answered)") if not self.follow_redirects else \
            "the redirects led to no endpoint; set base_url to the endpoint's address"
        return EndpointRefused(self._redact(f"{self.url} answered HTTP {resp.status_code}, a redirect {to}; the "
                                            f"judge's requests (and its API key) go nowhere else unasked: {fix}"),
                               where=self.spec.path)

    def _read_body(self, resp, deadline: _Deadline) -> bytes:
        parts, size = [], 0
        for chunk in resp.iter_content(chunk_size=1 << 14):
            size += len(chunk)
            if size > self.max_reply_bytes:
                raise Retryable(f"reply larger than {self.max_reply_bytes} bytes (request.max_reply_bytes)")
            if deadline.passed or time.monotonic() > deadline.at:
                raise Retryable(f"no answer within {self.timeout:g} s (the reply was still arriving)")
            parts.append(chunk)
        return b"".join(parts)

    def _post_once(self, conversation: Conversation, deadline: _Deadline) -> str:
        resp = self._session.post(self.url, json=self.body(conversation), headers=self._headers, timeout=self.timeout,
                                  stream=True, allow_redirects=self.follow_redirects)
        with resp:  # closes the connection unless the body was read to its end
            deadline.attach(getattr(resp.raw, "connection", None))  # a connection not from the tracking pools
            if 300 <= resp.status_code < 400:
                raise self._redirected(resp)
            if resp.status_code in (408, 429) or resp.status_code >= 500:
                raise Retryable(f"HTTP {resp.status_code}", parse_retry_after(resp.headers.get("Retry-After")))
            if resp.status_code >= 400:
                raise self._refused(resp)
            raw = self._read_body(resp, deadline)
        try:
            data = json.loads(raw)
            choice = data["choices"][0]
            content = choice["message"]["content"]
        except UnicodeDecodeError:
            raise Retryable("undecodable response (not UTF-8)") from None
        except (ValueError, KeyError, IndexError, TypeError):
            raise Retryable("malformed response (not a chat completion)") from None
        if not isinstance(content, str):
            raise Retryable("malformed response (message content is not text)")
        served = data.get("model") if isinstance(data, dict) else None
        served = self._redact(served) if isinstance(served, str) else None
        if served is not None and served not in self.accepted_models:
            raise EndpointRefused(
                f"{self.url} answered as model {served!r}, not {self.spec.model!r}: its verdicts would pass for the "
                "calibrated judge's (a proxy routing to another model?); if it is the same model under another name, "
                "list it in request.accepted_models", where=self.spec.path)
        reason = choice.get("finish_reason") if isinstance(choice, dict) else None
        text = mark_unfinished(self._redact(content), None if reason is None else self._redact(str(reason)))
        return Reply(text, served, self._redact(resp.url) if resp.history else None)

    def _as_retryable(self, exc: Exception, deadline: _Deadline) -> Retryable:
        """The failed attempt ``exc`` as a :class:`Retryable` with a one-line reason."""
        import requests
        from urllib3.exceptions import ProtocolError, ReadTimeoutError

        name = type(exc).__name__
        if self._stop.is_set():
            return Retryable("the stage stopped")
        if deadline.passed or isinstance(exc, requests.Timeout) or (
                isinstance(exc, requests.ConnectionError) and exc.args and isinstance(exc.args[0], ReadTimeoutError)):
            return Retryable(f"no answer within {self.timeout:g} s")
        if isinstance(exc, (requests.exceptions.ChunkedEncodingError, requests.exceptions.ContentDecodingError,
                            ProtocolError)):
            return Retryable(f"truncated or undecodable response ({name})")
        if isinstance(exc, requests.ConnectionError):
            return Retryable(f"connection failed ({name})")
        return Retryable(self._unexpected(exc))

    def _attempt(self, conversation: Conversation) -> str:
        """One attempt within its deadline; every failure but a refusal is a :class:`Retryable`."""
        deadline = _Deadline(self.timeout)
        with self._active_lock:
            self._active.add(deadline)
        try:
            if self._stop.is_set():  # checked after registering: stop() either sees this deadline or was first
                raise Retryable("the stage stopped")
            with deadline:
                return self._post_once(conversation, deadline)
        except PipelineInputError:
            raise
        except Exception as exc:  # anything else is one failed attempt, never the stage's traceback
            if isinstance(exc, Retryable) and not deadline.passed and not self._stop.is_set():
                raise
            raise self._as_retryable(exc, deadline) from None  # a cut connection's symptom named by its cause
        finally:
            with self._active_lock:
                self._active.discard(deadline)

    def call(self, conversation: Conversation) -> str | CallFailure:
        """One reply, with retries; a :class:`CallFailure` when every attempt failed."""
        try:
            return call_with_retries(self._attempt, conversation, max_retries=self.max_retries, backoff=self.backoff,
                                     sleep=self._stop.wait)
        except Retryable as last:
            return CallFailure(f"{last.reason} after {self.max_retries + 1} attempt(s)")

    def stop(self) -> None:
        """Stop at once: no new attempt or retry wait, every call in flight cut at its connection."""
        self._stop.set()
        with self._active_lock:
            active = list(self._active)
        for deadline in active:
            deadline.cut()

    def _outcome(self, fut: Future) -> str | CallFailure:
        try:
            return fut.result()
        except PipelineInputError:
            raise
        except Exception as exc:  # a worker that crashed outside its attempts: one failed call, the pool goes on
            return CallFailure(self._unexpected(exc))

    def replies(self, conversations: Sequence[Conversation], progress=None) -> Iterator[tuple[int, str | CallFailure]]:
        self._stop.clear()
        pending = iter(enumerate(conversations))
        pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix=f"judge-{self.spec.name}")
        running: dict[Future, int] = {}

        def submit_next() -> None:
            nxt = next(pending, None)
            if nxt is not None:
                running[pool.submit(self.call, nxt[1])] = nxt[0]

        finished = False
        try:
            for _ in range(self.concurrency):
                submit_next()
            while running:
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in done:
                    i = running.pop(fut)
                    result = self._outcome(fut)  # a refusal (PipelineInputError) stops everything below
                    submit_next()  # before yielding: the pool stays busy while the caller stores the reply
                    if progress is not None:
                        progress(1)
                    yield i, result
            finished = True
        finally:
            if not finished:  # refused, or the caller stopped reading: cut what is in flight, ask nothing more
                self.stop()
            pool.shutdown(wait=finished, cancel_futures=True)


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
