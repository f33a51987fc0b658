"""A local imitation of an OpenAI-compatible ``/v1/chat/completions`` endpoint.

A threaded stdlib HTTP server on 127.0.0.1. Every request is recorded
(headers, JSON body, path). What it answers is decided by ``responder(body,
n)`` (``n`` = 0-based index of the request), which returns a :class:`Reply`:
an HTTP status, extra headers, the message content (wrapped in the
chat-completion JSON the real API returns) or a raw body, and a delay before
answering (to imitate latency or a server that never answers in time). Broken
servers: ``trickle`` announces a chunk of a MiB and sends its bytes one every
``trickle`` seconds (a client reading that chunk never gets it whole; ``framing``
``close`` sends an HTTP/1.0 body that ends only when the connection closes,
``length`` a Content-Length of a MiB); ``trickle_headers`` sends the status line and then the
headers one byte every ``trickle_headers`` seconds, never ending them;
``cut`` sends the first ``cut`` bytes of the body (chunked, or with a
Content-Length promising all of it when ``cut_chunked`` is false) and closes
the connection. Trickles stop when the client hangs up or the server closes.
A reply's ``finish_reason`` is ``stop`` unless the :class:`Reply` names
another (``length``: a reply cut at ``max_tokens``). ``echo_headers`` puts
the request's headers (the ``Authorization`` line included) in the message
content, as a debugging proxy that echoes them would. A :class:`Reply` with
a 3xx ``status`` and a ``Location`` header redirects; the server answers
requests to any path.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable


@dataclass
class Reply:
    content: str | None = None
    status: int = 200
    headers: dict = field(default_factory=dict)
    raw: bytes | None = None
    delay: float = 0.0
    trickle: float | None = None
    trickle_headers: float | None = None
    cut: int | None = None
    cut_chunked: bool = True
    #: How a trickled body is framed: ``chunked`` (HTTP/1.1), ``close`` (HTTP/1.0, no length: the body ends when
    #: the connection closes), ``length`` (HTTP/1.1 with a Content-Length the trickle never reaches).
    framing: str = "chunked"
    #: The ``model`` the reply says answered (default: the one the request asked for, as a real endpoint does).
    model: str | None = None
    #: The choice's ``finish_reason`` (``length``: cut at max_tokens; None: the field is left out).
    finish_reason: str | None = "stop"
    #: Append the request's headers to the content (a proxy echoing them).
    echo_headers: bool = False


def completion_json(content: str, model: str = "fake", finish_reason: str | None = "stop") -> bytes:
    choice = {"index": 0, "message": {"role": "assistant", "content": content}}
    if finish_reason is not None:
        choice["finish_reason"] = finish_reason
    return json.dumps({
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": model,
        "choices": [choice],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }).encode()


_SLOT = re.compile(r"RESPONSE A:\n(.*?)\n\nRESPONSE B:\n(.*?)(?:\n\n|$)", re.S)


def slots(body: dict) -> tuple[str, str]:
    """The two answers in a request built from the demo judge template (RESPONSE A / RESPONSE B)."""
    user = body["messages"][-1]["content"]
    m = _SLOT.search(user)
    if not m:
        raise ValueError("request has no RESPONSE A/B slots")
    return m.group(1), m.group(2)


class FakeOpenAI:
    def __init__(self, responder: Callable[[dict, int], Reply]):
        self.responder = responder
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output quiet
                pass

            def setup(self):
                super().setup()
                # headers and body go out as two writes: without this, Nagle's algorithm and the
                # client's delayed ACK add ~40 ms to every response (inflating any sequential baseline)
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    body = {}
                with fake._lock:
                    n = len(fake.requests)
                    fake.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                reply = fake.responder(body, n)
                if reply.delay:
                    time.sleep(reply.delay)
                served = reply.model or (body.get("model") if isinstance(body.get("model"), str) else "fake")
                content = reply.content or ""
                if reply.echo_headers:
                    content += "\n" + "\n".join(f"{k}: {v}" for k, v in self.headers.items())
                payload = reply.raw if reply.raw is not None else (
                    completion_json(content, model=served, finish_reason=reply.finish_reason) if reply.status == 200
                    else b'{"error": "fake"}')
                try:
                    if reply.trickle_headers is not None:
                        self.close_connection = True
                        self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
                        self._forever(b"X", reply.trickle_headers)
                        return
                    if reply.trickle is not None or reply.cut is not None:
                        self._broken_body(reply, payload)
                        return
                    self.send_response(reply.status)
                    for k, v in reply.headers.items():
                        self.send_header(k, str(v))
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout)

            def _broken_body(self, reply: Reply, payload: bytes) -> None:
                self.close_connection = True
                if reply.trickle is not None and reply.framing == "close":  # HTTP/1.0: no length, no chunks
                    self.wfile.write(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n")
                    self._forever(b" ", reply.trickle)
                    return
                chunked = reply.cut_chunked if reply.trickle is None else reply.framing == "chunked"
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header(*(("Transfer-Encoding", "chunked") if chunked else
                                   ("Content-Length", str(1 << 20 if reply.trickle is not None else len(payload)))))
                self.end_headers()
                if reply.trickle is not None:  # one chunk of a MiB announced, its bytes (JSON whitespace) dribbled
                    if reply.framing == "chunked":
                        self.wfile.write(f"{1 << 20:x}\r\n".encode())
                    self._forever(b" ", reply.trickle)
                elif chunked:  # a chunk that promises the whole payload, then the connection closes
                    self.wfile.write(f"{len(payload):x}\r\n".encode() + payload[: reply.cut])
                else:
                    self.wfile.write(payload[: reply.cut])

            def _forever(self, piece: bytes, every: float) -> None:
                while not fake._closing.wait(every):
                    self.wfile.write(piece)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> "FakeOpenAI":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._closing.set()
        self.server.shutdown()
        self.server.server_close()

    @property
    def count(self) -> int:
        with self._lock:
            return len(self.requests)
