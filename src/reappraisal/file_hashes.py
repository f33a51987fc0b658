"""Digests of bytes read in chunks: a file streamed once, or a download as it arrives.

:class:`Digests` updates several hashes (``hashlib`` names: ``"sha256"``,
``"md5"``, ...) from the same chunks; :func:`file_digests` streams a file
through one, so asking for sha256 and md5 reads the file once. Digests are
lowercase hex.
"""

from __future__ import annotations

import hashlib
import os

CHUNK = 1 << 20


class Digests:
    """Several hashes fed the same bytes: ``update(chunk)`` per chunk, then :meth:`hexdigests`."""

    def __init__(self, *algorithms: str):
        self._hashes = [hashlib.new(name) for name in algorithms or ("sha256",)]

    def update(self, chunk: bytes) -> None:
        for h in self._hashes:
            h.update(chunk)

    def hexdigests(self) -> tuple[str, ...]:
        """The digests, in the order the algorithms were named."""
        return tuple(h.hexdigest() for h in self._hashes)


def file_digests(path: str | os.PathLike, *algorithms: str, chunk: int = CHUNK) -> tuple[str, ...]:
    """The digests of a file's bytes (default: sha256 only), in the order named; the file is read once."""
    digests = Digests(*algorithms)
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digests.update(block)
    return digests.hexdigests()


def sha256_file(path: str | os.PathLike) -> str:
    """The sha256 of a file's bytes."""
    return file_digests(path, "sha256")[0]
