"""The job's side of the warm job server (:mod:`reappraisal.job_server`): hand a command to the server.

A job started by ``reappraisal run`` finds the server's address in :data:`~reappraisal.job_env.SERVER_ENV`; :func:`delegate`
sends the server its arguments, working folder, environment and standard streams (the descriptors
themselves), waits for the forked child's exit status and passes on the signals it receives. Standard
library only: the command line imports this module without importing the server (or any library).
"""

from __future__ import annotations

import array
import json
import os
import signal
import socket
import sys
from typing import Sequence


#: Commands that never go through the server (``run`` starts it).
NOT_FORKED = frozenset({"run"})
_MAX_MESSAGE = 1 << 20


def send(sock: socket.socket, message: dict, fds: Sequence[int] = ()) -> None:
    data = json.dumps(message).encode()
    if fds:
        sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
    else:
        sock.sendall(data)


def receive(sock: socket.socket, n_fds: int = 0) -> tuple[dict | None, list[int]]:
    """One message (None at end of stream) and the descriptors that came with it."""
    data, fds, _, _ = socket.recv_fds(sock, _MAX_MESSAGE, n_fds) if n_fds else (sock.recv(_MAX_MESSAGE), [], 0, None)
    return (json.loads(data) if data else None), list(fds)


def delegate(address: str, name: str, argv: Sequence[str]) -> int | None:
    """Run command ``name`` with ``argv`` in a fork of the server at ``address`` (an abstract socket's name,
    as :data:`~reappraisal.job_env.SERVER_ENV` gives it): the command's exit status, or None
    when the server could not start it (the caller then runs the command itself)."""
    if name in NOT_FORKED:
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        sock.settimeout(10)
        sock.connect("\0" + address)
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        request = {"argv0": sys.argv[0], "argv": [name, *argv], "cwd": os.getcwd(), "env": dict(os.environ),
                   "path": sys.path}
        send(sock, request, [0, 1, 2])
    except OSError:  # no server listening (yet): nothing was started
        sock.close()
        return None
    sock.settimeout(None)  # the child answers with its pid before it runs the command, or dies before it
    try:
        started, _ = receive(sock)
    except OSError:
        started = None
    if not started or "pid" not in started:  # the child died before the command started: run it here
        sock.close()
        return None
    pid = int(started["pid"])

    received: list[int] = []

    def forward(signum, _frame):
        received.append(signum)
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(signum, forward)
    while True:
        try:
            finished, _ = receive(sock)
            break
        except InterruptedError:
            continue
        except OSError:
            finished = None
            break
    sock.close()
    if finished is None or "code" not in finished:  # the command was killed by a signal
        if received:  # the one this process passed on: end as the command's own process would have
            signal.signal(received[-1], signal.SIG_DFL)
            os.kill(os.getpid(), received[-1])
        print(f"error: the command (pid {pid}) ended without an exit status", file=sys.stderr)
        return 1
    return int(finished["code"])
