"""On-disk cache of judge replies, one append-only JSONL file per (run, judge).

Each line is one raw reply, keyed by what was sent: sha256 of the canonical
JSON of (what the judge was sent: backend, model, the rendered messages,
prefill, decoding, a panel's settings (:meth:`JudgeSpec.sent`); the model's
fingerprint; the run; the order). Editing a template or a decoding parameter
therefore never reuses an old reply, and a run never reads another run's
replies: each run has its own file AND the run is in the key. How a reply
is read (the verdict pattern and labels) is not in the key: the verdict is
parsed when the reply is read, so fixing a pattern re-reads the cached
replies instead of asking again. (Files written before the key was built
this way simply miss: their calls are asked again.)

A line also holds the model the endpoint said served the reply (``model``,
when it said one), so each judgment records the model it came from, and the
address that answered when the request was redirected there (``url``, only
with the judge's ``request.follow_redirects``).

Only replies the judge actually gave are stored (including replies with no
parseable verdict, which are counted as ``error``); a call that failed
(timeout, HTTP error after its retries, truncated or malformed response) is
never stored, so the next run asks again. Each line is flushed as soon as
its reply arrives, so a killed stage loses at most the calls in flight; a
half-written last line (one without its newline) is ignored on reading and
cut off before the first append (:func:`cut_torn_tail`), so the next reply
starts a line of its own instead of being glued to the torn one.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Iterator, Mapping

from ..atomic import atomic_path, cut_torn_tail


def cache_key(sent: Mapping[str, Any], *, model_fingerprint: str, run: Any, order: str) -> str:
    """The hex sha256 identifying one judge call (see module doc); ``sent`` is what the judge is sent."""
    payload = {
        "sent": sent,
        "model_fingerprint": model_fingerprint,
        "run": str(run),
        "order": order,
    }
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ReplyCache:
    """Replies by key, read from and appended to one JSONL file."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._models: dict[str, str] = {}
        self._urls: dict[str, str] = {}  # the address that answered a redirected request
        self._replies: dict[str, str] = dict(self._read())
        self._handle = None

    def _read(self) -> Iterator[tuple[str, str]]:
        if not self.path.is_file():
            return
        with self.path.open(encoding="utf-8") as fh:
            for line in fh:
                if not line.endswith("\n"):
                    continue  # the last line, cut by a kill (the first put cuts it off): asked again
                try:
                    record = json.loads(line)
                    key, reply = record["key"], record["reply"]
                except (json.JSONDecodeError, KeyError, TypeError):
                    continue  # a line cut by a kill: that call is asked again
                if isinstance(record.get("model"), str):
                    self._models[key] = record["model"]
                else:
                    self._models.pop(key, None)
                if isinstance(record.get("url"), str):
                    self._urls[key] = record["url"]
                else:
                    self._urls.pop(key, None)
                yield key, reply

    def __len__(self) -> int:
        return len(self._replies)

    def __contains__(self, key: str) -> bool:
        return key in self._replies

    def keys(self) -> list[str]:
        return list(self._replies)

    def get(self, key: str) -> str | None:
        return self._replies.get(key)

    def served_model(self, key: str) -> str | None:
        """The model the endpoint said served the reply of ``key`` (None when it said none, or for a local judge)."""
        return self._models.get(key)

    def url(self, key: str) -> str | None:
        """The address that answered the request of ``key`` when it was redirected there, else None."""
        return self._urls.get(key)

    def _line(self, key: str, reply: str) -> str:
        model, url = self._models.get(key), self._urls.get(key)
        record = {"key": key, "reply": str(reply), **({"model": model} if model is not None else {}),
                  **({"url": url} if url is not None else {})}
        return json.dumps(record, ensure_ascii=False) + "\n"

    def put(self, key: str, reply: str, served_model: str | None = None, url: str | None = None) -> None:
        """Store one reply (the model that served it and the address a redirect led to, when known) and flush it
        to disk at once."""
        if self._handle is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            cut_torn_tail(self.path)
            self._handle = self.path.open("a", encoding="utf-8")
        if served_model is None:
            self._models.pop(key, None)
        else:
            self._models[key] = served_model
        if url is None:
            self._urls.pop(key, None)
        else:
            self._urls[key] = url
        self._handle.write(self._line(key, reply))
        self._handle.flush()
        os.fsync(self._handle.fileno())
        self._replies[key] = str(reply)

    def forget(self, keys) -> int:
        """Remove the replies of ``keys`` from the file (rewritten atomically) and from memory; return how many.

        The next run asks those calls again (a reply that did not parse, say)."""
        gone = {k for k in keys if k in self._replies}
        if not gone:
            return 0
        self.close()
        kept = {k: v for k, v in self._replies.items() if k not in gone}
        with atomic_path(self.path, suffix=".jsonl") as tmp:
            Path(tmp).write_text("".join(self._line(k, v) for k, v in kept.items()), encoding="utf-8")
        self._replies = kept
        self._models = {k: m for k, m in self._models.items() if k in kept}
        self._urls = {k: u for k, u in self._urls.items() if k in kept}
        return len(gone)

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def __enter__(self) -> "ReplyCache":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


#: What a training writes about itself beside the model (its wall-clock seconds among them), not what the model
#: computes: left out of the fingerprint, so the same weights trained twice keep their cached replies.
TRAINING_RECORDS = frozenset({"training_summary.json", "trainer_state.json"})


def model_fingerprint(model: str) -> str:
    """A cheap identity of a judge's weights, so a retrained local model never reuses old replies.

    For a local directory: sha256 over each weight/config file's name, size and
    first and last MiB (hashing 140 GB of a 70B checkpoint per run would take
    minutes), the training's own records (:data:`TRAINING_RECORDS`) left out.
    For anything else (a hub id, an endpoint's model name): the name itself.
    """
    path = Path(model)
    if not path.is_dir():
        return f"name:{model}"
    digest = hashlib.sha256()
    files = (p for p in path.rglob("*") if p.is_file() and p.suffix in {".safetensors", ".bin", ".json"})
    for file in sorted(p for p in files if p.name not in TRAINING_RECORDS):
        size = file.stat().st_size
        digest.update(f"{file.relative_to(path)}:{size}".encode())
        with file.open("rb") as fh:
            digest.update(fh.read(1 << 20))
            if size > 2 << 20:
                fh.seek(-(1 << 20), os.SEEK_END)
                digest.update(fh.read())
    return f"files:{digest.hexdigest()}"
