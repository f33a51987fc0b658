"""One streaming file hash for the whole package."""

import hashlib

from reappraisal.file_hashes import Digests, file_digests, sha256_file


def test_file_digests_read_once_match_hashlib_in_the_order_asked(tmp_path):
    data = bytes(range(256)) * 5000  # more than one chunk
    path = tmp_path / "blob.bin"
    path.write_bytes(data)
    assert file_digests(path, "sha256", "md5", chunk=4096) == (hashlib.sha256(data).hexdigest(), hashlib.md5(data).hexdigest())
    assert file_digests(path, "md5") == (hashlib.md5(data).hexdigest(),)
    assert file_digests(path) == (sha256_file(path),) == (hashlib.sha256(data).hexdigest(),)


def test_digests_fed_in_chunks_equal_the_whole():
    d = Digests("sha256", "md5")
    for chunk in (b"ab", b"", b"cdef"):
        d.update(chunk)
    assert d.hexdigests() == (hashlib.sha256(b"abcdef").hexdigest(), hashlib.md5(b"abcdef").hexdigest())
