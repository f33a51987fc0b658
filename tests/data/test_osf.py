"""OSF client against a local imitation of the OSF API v2 (tests/data/osf_fake.py)."""

from __future__ import annotations

import hashlib
import json
import logging
import socket

import pytest
from werkzeug import Response

from tests.data.osf_fake import FakeOsf, cut_body
from reappraisal.data import osf
from reappraisal.data.osf import OsfFile, RetryPolicy, download_file, fetch_node, list_files, make_session
from reappraisal.errors import DownloadError, PipelineInputError

NODE = "abc12"
TOKEN_ENV = "REAPPRAISAL_TEST_OSF_TOKEN"


@pytest.fixture(autouse=True)
def _no_token(monkeypatch):
    monkeypatch.delenv(TOKEN_ENV, raising=False)


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
def retry(sleeps) -> RetryPolicy:
    return RetryPolicy(max_retries=3, backoff_base_s=0.5, timeout_s=5.0, sleep=sleeps.append)


def _tree(fake: FakeOsf) -> dict[str, bytes]:
    """Root: 3 files + a folder (4 entries, 2 pages); raw/ with a nested raw/sub/."""
    contents = {
        "README.md": b"# study\n",
        "codebook.csv": b"column,meaning\nid,row id\n",
        "notes.txt": b"free text\n" * 50,
        "raw/ratings.csv": b"id,rating\n1,5\n2,3\n",
        "raw/items.jsonl": b'{"id": 1}\n{"id": 2}\n',
        "raw/sub/extra.csv": b"a,b\n1,2\n",
    }
    for path, data in contents.items():
        fake.add_file(path, data)
    fake.install()
    return contents


def _files_under(path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if p.is_file())


def _fetch(fake, dest, retry, **kw):
    kw.setdefault("token_env", TOKEN_ENV)
    return fetch_node(NODE, dest, api_url=fake.api_url, retry=retry, progress=False, **kw)


# ------------------------------------------------------------------ listing


@pytest.mark.parametrize("meta", ["links", "top", None], ids=["meta-in-links(2.0)", "meta-top-level(2.1)", "no-meta"])
def test_listing_follows_pages_and_nested_folders(httpserver, retry, meta, caplog):
    fake = FakeOsf(httpserver, NODE, max_page_size=2, meta=meta)
    contents = _tree(fake)

    with caplog.at_level(logging.WARNING, logger="reappraisal.data.osf"):
        records = list_files(NODE, api_url=fake.api_url, retry=retry, token_env=TOKEN_ENV)

    assert [r.path for r in records] == sorted(contents)
    by_path = {r.path: r for r in records}
    for path, data in contents.items():
        r = by_path[path]
        assert r.size == len(data)
        assert r.sha256 == hashlib.sha256(data).hexdigest()
        assert r.md5 == hashlib.md5(data).hexdigest()
        assert r.name == path.rsplit("/", 1)[-1]
        assert r.download_url == httpserver.url_for(f"/download/{r.osf_id}/")
        assert r.date_modified
    # Root listing (4 entries at 2 per page) needed a second page; the client asked for 100 per page.
    root_pages = fake.requests_to(r"/osfstorage/$")
    assert [req.args.get("page") for req in root_pages] == [None, "2"]
    assert root_pages[0].args.get("page[size]") == "100"
    # Folder listings were requested through their relationship links.
    folder_listings = fake.requests_to(r"/osfstorage/d\d+/$")
    folder_paths = {fake.listing_url(d)[len(fake.api_url) :] for d in fake.folders if d != "root"}
    assert {req.path for req in folder_listings} == folder_paths
    assert len(folder_listings) == 3  # raw/ holds 3 entries: two pages
    assert "announced" not in caplog.text


def test_meta_total_mismatch_is_reported(httpserver, retry, caplog):
    fake = FakeOsf(httpserver, NODE, meta="top")
    fake.add_file("a.csv", b"1")
    fake.add_file("b.csv", b"2")
    honest = fake._listing

    def lying(request):  # meta claims 5 entries, data holds 2
        body = json.loads(honest(request).get_data())
        body["meta"]["total"] = 5
        return Response(json.dumps(body), 200, content_type="application/json")

    fake._listing = lying
    fake.install()
    with caplog.at_level(logging.WARNING, logger="reappraisal.data.osf"):
        records = list_files(NODE, api_url=fake.api_url, retry=retry, token_env=TOKEN_ENV)
    assert [r.path for r in records] == ["a.csv", "b.csv"]
    assert "announced 5 entries but returned 2" in caplog.text


@pytest.mark.parametrize(
    ("include", "exclude", "expected"),
    [
        (["*.csv"], None, ["codebook.csv", "raw/ratings.csv", "raw/sub/extra.csv"]),
        (["raw/*"], ["raw/sub/*"], ["raw/items.jsonl", "raw/ratings.csv"]),
        (None, ["*.csv", "*.md"], ["notes.txt", "raw/items.jsonl"]),
        ("README.md", None, ["README.md"]),
    ],
)
def test_include_exclude_globs_select_by_path(httpserver, retry, include, exclude, expected, tmp_path):
    fake = FakeOsf(httpserver, NODE)
    _tree(fake)
    records = list_files(NODE, api_url=fake.api_url, retry=retry, include=include, exclude=exclude)
    assert [r.path for r in records] == expected

    manifest = _fetch(fake, tmp_path / "d", retry, include=include, exclude=exclude)
    assert [f["path"] for f in manifest["files"]] == expected
    assert _files_under(tmp_path / "d") == sorted(expected + [osf.MANIFEST_NAME])


def test_nothing_selected_is_an_error(httpserver, retry, tmp_path):
    fake = FakeOsf(httpserver, NODE)
    _tree(fake)
    with pytest.raises(DownloadError, match="no files selected"):
        _fetch(fake, tmp_path, retry, include=["*.parquet"])


# ------------------------------------------------------------------ fetching


def test_fetch_node_follows_redirect_keeps_tree_and_writes_manifest(httpserver, retry, tmp_path):
    fake = FakeOsf(httpserver, NODE)
    contents = _tree(fake)
    dest, manifest_path = tmp_path / "osf", tmp_path / "meta" / "manifest.json"

    returned = _fetch(fake, dest, retry, manifest_path=manifest_path)

    for path, data in contents.items():
        assert (dest / path).read_bytes() == data
    assert _files_under(dest) == sorted(contents)  # no temp files, manifest elsewhere
    # Every download went /download/{id}/ -> 302 -> /storage/{id}.
    downloads = [(req.path, resp.status_code) for req, resp in httpserver.log if req.path.startswith("/download/")]
    assert len(downloads) == len(contents) and all(code == 302 for _, code in downloads)
    assert len(fake.requests_to(r"^/storage/")) == len(contents)

    manifest = json.loads(manifest_path.read_text())
    assert manifest == returned
    assert manifest["source"] == "osf"
    assert manifest["node"] == NODE
    assert manifest["api_url"] == fake.api_url
    assert manifest["fetched_at"].endswith("+00:00")
    by_path = {f["path"]: f for f in manifest["files"]}
    assert sorted(by_path) == sorted(contents)
    records = {f.path: f for f in fake.files.values()}
    for path, data in contents.items():
        entry = by_path[path]
        assert entry["sha256"] == hashlib.sha256((dest / path).read_bytes()).hexdigest()
        assert entry["sha256"] == hashlib.sha256(data).hexdigest()
        assert entry["size"] == len(data)
        assert entry["verified_by"] == "sha256"
        assert entry["osf_id"] == records[path].osf_id
        assert entry["date_modified"] == records[path].date_modified
        assert entry["download_url"] == httpserver.url_for(f"/download/{records[path].osf_id}/")


def test_default_manifest_sits_in_dest_dir(httpserver, retry, tmp_path):
    fake = FakeOsf(httpserver, NODE)
    fake.add_file("x.csv", b"1,2\n")
    fake.install()
    _fetch(fake, tmp_path, retry)
    assert json.loads((tmp_path / osf.MANIFEST_NAME).read_text())["files"][0]["path"] == "x.csv"


def test_present_file_with_right_hash_is_not_downloaded_again(httpserver, retry, tmp_path):
    fake = FakeOsf(httpserver, NODE)
    contents = _tree(fake)
    _fetch(fake, tmp_path, retry)
    (tmp_path / "raw/ratings.csv").write_bytes(b"tampered")
    httpserver.clear_log()

    manifest = _fetch(fake, tmp_path, retry)

    tampered_id = next(f.osf_id for f in fake.files.values() if f.path == "raw/ratings.csv")
    assert [req.path for req in fake.requests_to(r"^/download/")] == [f"/download/{tampered_id}/"]
    assert (tmp_path / "raw/ratings.csv").read_bytes() == contents["raw/ratings.csv"]
    assert {f["path"]: f["sha256"] for f in manifest["files"]} == {
        p: hashlib.sha256(d).hexdigest() for p, d in contents.items()
    }


def test_md5_fallback_and_unhashed_files(httpserver, retry, tmp_path, caplog):
    fake = FakeOsf(httpserver, NODE)
    fake.add_file("md5only.csv", b"m,d\n", sha256=None)
    fake.add_file("nohash.csv", b"n,h\n", sha256=None, md5=None)
    fake.add_file("badmd5.csv", b"b,m\n", sha256=None, md5="0" * 32)
    fake.install()

    with caplog.at_level(logging.WARNING, logger="reappraisal.data.osf"):
        manifest = _fetch(fake, tmp_path, retry, exclude=["badmd5.csv"])
    entries = {f["path"]: f for f in manifest["files"]}
    assert entries["md5only.csv"]["verified_by"] == "md5"
    assert entries["nohash.csv"]["verified_by"] is None
    assert entries["nohash.csv"]["sha256"] == hashlib.sha256(b"n,h\n").hexdigest()
    assert "nohash.csv: OSF publishes no hash" in caplog.text

    with pytest.raises(DownloadError, match=r"checksum mismatch for 'badmd5.csv'.*md5"):
        _fetch(fake, tmp_path, retry, include=["badmd5.csv"])
    assert not (tmp_path / "badmd5.csv").exists()


def test_checksum_mismatch_leaves_no_file(httpserver, retry, sleeps, tmp_path):
    fake = FakeOsf(httpserver, NODE)
    fake.add_file("data/ratings.csv", b"id,rating\n1,5\n", sha256="ab" * 32)
    fake.install()
    dest = tmp_path / "dl"

    with pytest.raises(DownloadError, match=r"checksum mismatch for 'data/ratings.csv'.*sha256"):
        _fetch(fake, dest, retry)

    assert _files_under(tmp_path) == []  # neither final, temp nor manifest
    assert sleeps == []  # a wrong hash is not retried


def test_body_longer_than_declared_size_is_rejected(httpserver, retry, tmp_path):
    fake = FakeOsf(httpserver, NODE)
    fake.add_file("a.bin", b"0123456789", size=4, sha256=None, md5=None)
    fake.install()
    with pytest.raises(DownloadError, match=r"size mismatch for 'a.bin'"):
        _fetch(fake, tmp_path, retry)
    assert _files_under(tmp_path) == []


@pytest.mark.parametrize("declare_length", [True, False], ids=["content-length-too-long", "size-from-osf"])
def test_interrupted_download_leaves_no_partial_file(httpserver, retry, sleeps, tmp_path, declare_length):
    data = bytes(range(256)) * 40
    fake = FakeOsf(httpserver, NODE)
    # No hash, so only the transfer checks can notice the truncation. With a
    # declared Content-Length the record size is unknown too.
    f = fake.add_file("big/blob.bin", data, sha256=None, md5=None, size=None if declare_length else len(data))
    f.serve = cut_body(data, declare_length=declare_length)
    fake.install()

    with pytest.raises(DownloadError, match=r"'big/blob.bin' kept being interrupted"):
        _fetch(fake, tmp_path, retry)

    assert _files_under(tmp_path) == []
    assert len(fake.requests_to(r"^/storage/")) == retry.max_retries + 1
    assert sleeps == [0.5, 1.0, 2.0]


def test_interrupted_download_is_retried(httpserver, retry, sleeps, tmp_path):
    data = b"x" * 5000
    fake = FakeOsf(httpserver, NODE)
    f = fake.add_file("blob.bin", data)
    fake.install()
    httpserver.expect_oneshot_request(f"/storage/{f.osf_id}").respond_with_handler(cut_body(data, declare_length=True))

    manifest = _fetch(fake, tmp_path, retry)

    assert (tmp_path / "blob.bin").read_bytes() == data
    assert manifest["files"][0]["sha256"] == hashlib.sha256(data).hexdigest()
    assert sleeps == [0.5]


# ------------------------------------------------------------------ retries and errors


def test_429_waits_retry_after_then_succeeds(httpserver, retry, sleeps, tmp_path):
    fake = FakeOsf(httpserver, NODE)
    fake.add_file("a.csv", b"1\n")
    fake.install()
    httpserver.expect_oneshot_request(f"/v2/nodes/{NODE}/files/osfstorage/").respond_with_response(
        Response("slow down", 429, headers={"Retry-After": "7"})
    )

    manifest = _fetch(fake, tmp_path, retry)

    assert sleeps == [7.0]
    assert [f["path"] for f in manifest["files"]] == ["a.csv"]
    assert len(fake.requests_to(r"/osfstorage/$")) == 2


def test_retry_after_is_capped(httpserver, sleeps, tmp_path):
    fake = FakeOsf(httpserver, NODE)
    f = fake.add_file("a.csv", b"1\n")
    fake.install()
    httpserver.expect_oneshot_request(f"/storage/{f.osf_id}").respond_with_response(
        Response("slow down", 429, headers={"Retry-After": "3600"})
    )
    capped = RetryPolicy(max_retries=2, retry_after_max_s=30.0, sleep=sleeps.append)
    _fetch(fake, tmp_path, capped)
    assert sleeps == [30.0]
    assert (tmp_path / "a.csv").read_bytes() == b"1\n"


def test_500_then_success_backs_off(httpserver, retry, sleeps, tmp_path):
    fake = FakeOsf(httpserver, NODE)
    f = fake.add_file("raw/a.csv", b"a\n")
    fake.install()
    httpserver.expect_oneshot_request(f"/download/{f.osf_id}/").respond_with_response(Response("oops", 500))
    httpserver.expect_oneshot_request(f"/storage/{f.osf_id}").respond_with_response(Response("oops", 503))

    _fetch(fake, tmp_path, retry)

    assert sleeps == [0.5, 1.0]  # exponential: base, 2 * base
    assert (tmp_path / "raw/a.csv").read_bytes() == b"a\n"


def test_persistent_5xx_gives_up(httpserver, retry, sleeps, tmp_path):
    fake = FakeOsf(httpserver, NODE)
    httpserver.expect_request(f"/v2/nodes/{NODE}/files/osfstorage/").respond_with_response(Response("down", 502))
    with pytest.raises(DownloadError, match=r"giving up after 4 attempts: HTTP 502"):
        _fetch(fake, tmp_path, retry)
    assert sleeps == [0.5, 1.0, 2.0]


def test_connection_errors_are_retried(sleeps, retry, tmp_path):
    with socket.socket() as s:  # a port with nobody listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(DownloadError, match="giving up after 4 attempts: ConnectionError"):
        fetch_node(NODE, tmp_path, api_url=f"http://127.0.0.1:{port}", retry=retry, token_env=TOKEN_ENV, progress=False)
    assert sleeps == [0.5, 1.0, 2.0]


def test_403_fails_at_once_naming_the_token_variable(httpserver, retry, sleeps, tmp_path):
    fake = FakeOsf(httpserver, NODE)
    httpserver.expect_request(f"/v2/nodes/{NODE}/files/osfstorage/").respond_with_json(
        {"errors": [{"detail": "You do not have permission to perform this action."}]}, status=403
    )
    with pytest.raises(DownloadError) as err:
        _fetch(fake, tmp_path, retry)
    msg = str(err.value)
    assert "HTTP 403" in msg and "You do not have permission" in msg
    assert f"${TOKEN_ENV}" in msg and "private" in msg
    assert sleeps == []
    assert len(httpserver.log) == 1


def test_401_with_token_says_the_token_was_refused(httpserver, retry, monkeypatch, tmp_path):
    monkeypatch.setenv(TOKEN_ENV, "bad-token-value")
    fake = FakeOsf(httpserver, NODE)
    httpserver.expect_request(f"/v2/nodes/{NODE}/files/osfstorage/").respond_with_response(Response("", 401))
    with pytest.raises(DownloadError, match=rf"HTTP 401.*refused the token from \${TOKEN_ENV}") as err:
        _fetch(fake, tmp_path, retry)
    assert "bad-token-value" not in str(err.value)


def test_404_is_not_retried(httpserver, retry, sleeps, tmp_path):
    fake = FakeOsf(httpserver, NODE)
    httpserver.expect_request(f"/v2/nodes/{NODE}/files/osfstorage/").respond_with_json(
        {"errors": [{"detail": "Not found."}]}, status=404
    )
    with pytest.raises(DownloadError, match="HTTP 404.*node id"):
        _fetch(fake, tmp_path, retry)
    assert sleeps == []


# ------------------------------------------------------------------ token handling


def test_token_is_sent_as_bearer_and_never_logged(httpserver, retry, monkeypatch, tmp_path, caplog):
    monkeypatch.setenv(TOKEN_ENV, "s3cret-token")
    fake = FakeOsf(httpserver, NODE)
    _tree(fake)
    with caplog.at_level(logging.DEBUG):
        _fetch(fake, tmp_path, retry)
    assert httpserver.log
    for req, _ in httpserver.log:  # listing, nested listings, /download/ and same-host /storage/
        assert req.headers.get("Authorization") == "Bearer s3cret-token", req.path
    assert "s3cret" not in caplog.text


def test_no_token_no_header(httpserver, retry, tmp_path):
    fake = FakeOsf(httpserver, NODE)
    _tree(fake)
    _fetch(fake, tmp_path, retry)
    assert all("Authorization" not in req.headers for req, _ in httpserver.log)


def test_token_is_not_forwarded_to_a_foreign_storage_host(httpserver, retry, monkeypatch, tmp_path):
    if httpserver.host != "localhost" or httpserver.server.server_address[0] != "127.0.0.1":
        pytest.skip("needs the test server on localhost = 127.0.0.1")
    monkeypatch.setenv(TOKEN_ENV, "s3cret-token")
    fake = FakeOsf(httpserver, NODE, storage_host="127.0.0.1")  # API at localhost, bytes at 127.0.0.1
    fake.add_file("a.csv", b"1\n")
    fake.install()
    _fetch(fake, tmp_path, retry)
    (storage,) = fake.requests_to(r"^/storage/")
    assert "Authorization" not in storage.headers
    assert all(req.headers.get("Authorization") for req in fake.requests_to(r"^/(v2|download)/"))
    assert (tmp_path / "a.csv").read_bytes() == b"1\n"


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://api.osf.io/v2/nodes/x/", True),
        ("https://osf.io/download/abc/", True),
        ("https://files.us.osf.io/v1/resources/x", True),
        ("https://storage.googleapis.com/bucket/obj?sig=1", False),
        ("https://osf.io.evil.example/download/abc/", False),
        ("https://evilosf.io/", False),
        ("http://osf.io/download/abc/", False),  # no downgrade to plain http
    ],
)
def test_token_scope(url, allowed):
    assert osf.token_allowed(url, "https://api.osf.io") is allowed


def test_make_session_reads_the_named_variable(monkeypatch):
    assert "Authorization" not in make_session(TOKEN_ENV).headers
    monkeypatch.setenv(TOKEN_ENV, "  tok  ")
    assert make_session(TOKEN_ENV).headers["Authorization"] == "Bearer tok"
    assert "Authorization" not in make_session(None).headers


# ------------------------------------------------------------------ paths and inputs


@pytest.mark.parametrize("bad", ["/../evil.txt", "/raw/../../evil.txt", "/a/./b.txt"])
def test_paths_escaping_dest_dir_are_refused(httpserver, retry, tmp_path, bad):
    fake = FakeOsf(httpserver, NODE)
    fake.add_file("ok.csv", b"fine\n")
    fake.add_file("evil.txt", b"pwned\n", materialized_path=bad)
    fake.install()
    dest = tmp_path / "inner" / "dest"

    with pytest.raises(DownloadError, match="escapes"):
        _fetch(fake, dest, retry)

    assert _files_under(tmp_path) == []  # checked before anything was downloaded
    assert fake.requests_to(r"^/download/") == []


def test_download_file_refuses_escaping_record(tmp_path):
    rec = OsfFile("x", "../x.txt", "x.txt", 1, None, None, None, "http://127.0.0.1:9/download/x/")
    with pytest.raises(DownloadError, match="escapes"):
        download_file(rec, tmp_path)


@pytest.mark.parametrize(
    ("node", "expected"), [("abc12", "abc12"), ("https://osf.io/abc12/", "abc12"), (" k3x9 ", "k3x9")]
)
def test_node_id_forms(node, expected):
    assert osf._node_id(node) == expected


@pytest.mark.parametrize("node", ["", "../x", "abc/def", "https://osf.io/"])
def test_bad_node_id_is_rejected(node):
    with pytest.raises(PipelineInputError, match="not an OSF node id"):
        osf._node_id(node)
