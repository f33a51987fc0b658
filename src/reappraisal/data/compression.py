"""A compressed export, told by its first bytes (not its name): unpacked, or refused by name. Pure.

Survey tools and file hosts hand out exports gzip-compressed, named
``.csv.gz`` or still ``.csv``. Read as text, their bytes would be "not valid
UTF-8" and no declared encoding could fix them, so a raw file is looked at
before it is decoded: gzip, bzip2 and xz streams are unpacked (whatever the
file is named), and archives or compressions the standard library cannot
unpack (zip, 7z, zstd) are refused, naming what the file is and how to unpack
it. A stream that is cut or damaged is refused as such.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import zlib

from ..errors import DataValidationError

#: magic bytes -> (name, unpack)
_STREAMS = ((b"\x1f\x8b", "gzip", gzip.decompress), (b"BZh", "bzip2", bz2.decompress),
            (b"\xfd7zXZ\x00", "xz", lzma.decompress))
#: magic bytes -> (what the file is, how to unpack it)
_REFUSED = ((b"PK\x03\x04", "a zip archive", "unzip it"), (b"7z\xbc\xaf\x27\x1c", "a 7z archive", "unpack it (7z x)"),
            (b"\x28\xb5\x2f\xfd", "zstd-compressed", "decompress it (zstd -d)"))


def unpacked(data: bytes, where: str, key: str) -> tuple[bytes, str | None]:
    """``data`` unpacked when it is a gzip, bzip2 or xz stream, with the compression's name (None: as it was).

    Raises :class:`DataValidationError` (one line, at ``where``, naming config key ``key``) for an archive or compression this cannot
    unpack, and for a stream that is cut or damaged."""
    for magic, what, how in _REFUSED:
        if data.startswith(magic):
            raise DataValidationError(
                f"the file is {what}, not an export: {how} into the raw folder and name the file it holds in "
                f"config key '{key}.files'", where=where)
    for magic, name, unpack in _STREAMS:
        if data.startswith(magic):
            try:
                return unpack(data), name
            except (OSError, EOFError, ValueError, zlib.error, lzma.LZMAError) as exc:
                raise DataValidationError(
                    f"the file is {name}-compressed but cannot be unpacked ({type(exc).__name__}: cut or damaged); "
                    "download or export it again", where=where) from None
    return data, None
