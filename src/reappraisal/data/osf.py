"""OSF API v2 client: list a node's OSF Storage files, download them verified.

Contract
--------
* :func:`list_files` walks ``{api}/v2/nodes/{node}/files/osfstorage/``
  (``page[size]=100``), follows ``links.next`` until null and recurses into
  folders through ``relationships.files.links.related.href``. It returns one
  :class:`OsfFile` per file, sorted by ``path``.
* ``path`` is the file's ``materialized_path`` without the leading slash,
  ``/``-separated (``"raw/ratings.csv"``); include/exclude are
  :func:`fnmatch.fnmatchcase` globs over it, and ``*`` also matches ``/``
  (``"*.csv"`` selects CSV files at any depth).
* :func:`download_file` GETs ``links.download`` following redirects (OSF
  answers 302 to a storage server), streams into a temporary file in the
  destination folder, checks the size OSF declared (never Content-Length) and
  the sha256 (md5 when OSF gives no sha256), then renames into place. A file
  that fails verification or whose transfer is cut leaves nothing behind. A
  file already present with the expected hash is not fetched again.
* :func:`fetch_node` does both for a whole node and writes a JSON manifest.

Transport
---------
* A token, read from the environment variable *named* by ``token_env``, is
  sent as ``Authorization: Bearer ...`` only to the API host and its sibling
  hosts (for ``https://api.osf.io``: ``osf.io`` and ``*.osf.io``), never to a
  storage server outside that domain nor over a scheme downgrade. It is never
  logged.
* HTTP 429 waits ``Retry-After`` seconds (capped by
  :attr:`RetryPolicy.retry_after_max_s`); 5xx, connection errors, timeouts and
  downloads cut mid-body are retried with exponential backoff
  (:mod:`reappraisal.http_retry`); any other 4xx raises
  :class:`~reappraisal.errors.DownloadError` at once.
"""

from __future__ import annotations

import datetime as _dt
import fnmatch
import ipaddress
import logging
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Iterable, Iterator, TypeVar
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

import requests

from reappraisal.atomic import atomic_path, write_json
from reappraisal.errors import DownloadError, PipelineInputError
from reappraisal.file_hashes import Digests, file_digests
from reappraisal.http_retry import Backoff, Retryable, call_with_retries, parse_retry_after

log = logging.getLogger(__name__)

DEFAULT_API_URL = "https://api.osf.io"
DEFAULT_TOKEN_ENV = "OSF_TOKEN"
PAGE_SIZE = 100  # OSF's maximum page size
MANIFEST_NAME = "osf_manifest.json"

_REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})
_MAX_REDIRECTS = 10
_TRANSIENT = (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError)
T = TypeVar("T")


@dataclass(frozen=True)
class OsfFile:
    """One file in a node's OSF Storage, as the API describes it.

    ``path`` is relative (materialized path without the leading ``/``);
    ``size`` is in bytes; hashes are lowercase hex, ``None`` when OSF has none.
    """

    osf_id: str
    path: str
    name: str
    size: int | None
    md5: str | None
    sha256: str | None
    date_modified: str | None
    download_url: str


@dataclass(frozen=True)
class DownloadedFile:
    """A file on disk after :func:`download_file`.

    ``sha256`` is computed from the local bytes. ``verified_by`` names the
    OSF hash it was checked against (``"sha256"`` or ``"md5"``), or is
    ``None`` when OSF published no hash (only the size, if known, was
    checked). ``skipped`` is true when an identical file was already there.
    """

    record: OsfFile
    local_path: Path
    size: int
    sha256: str
    verified_by: str | None
    skipped: bool


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try. Waits are in seconds.

    A failed attempt waits ``backoff_base_s * 2**attempt`` (at most
    ``backoff_max_s``); a 429 waits its ``Retry-After`` (at most
    ``retry_after_max_s``). After ``max_retries`` retries the request fails.
    ``timeout_s`` is the connect/read timeout of one request. ``sleep`` is
    called for every wait (inject a recorder in tests).
    """

    max_retries: int = 5
    backoff_base_s: float = 1.0
    backoff_max_s: float = 60.0
    retry_after_max_s: float = 300.0
    timeout_s: float = 60.0
    sleep: Callable[[float], Any] = field(default=time.sleep, compare=False)

    def run(self, fn: Callable[..., T], *args: Any, on_retry: Callable[[Retryable, int, float], Any]) -> T:
        """``fn(*args)`` retried on :class:`~reappraisal.http_retry.Retryable` under this policy."""
        backoff = Backoff(self.backoff_base_s, self.backoff_max_s, self.retry_after_max_s)
        return call_with_retries(fn, *args, max_retries=self.max_retries, backoff=backoff, sleep=self.sleep,
                                 on_retry=on_retry)


def make_session(token_env: str | None = DEFAULT_TOKEN_ENV) -> requests.Session:
    """A session carrying ``Authorization: Bearer <token>`` when ``$token_env`` is set."""
    session = requests.Session()
    session.headers["User-Agent"] = "reappraisal-osf-client"
    token = os.environ.get(token_env, "").strip() if token_env else ""
    if token:
        session.headers["Authorization"] = f"Bearer {token}"
    return session


# --------------------------------------------------------------------------- listing


def list_files(
    node: str,
    *,
    api_url: str = DEFAULT_API_URL,
    session: requests.Session | None = None,
    include: Iterable[str] | str | None = None,
    exclude: Iterable[str] | str | None = None,
    retry: RetryPolicy | None = None,
    token_env: str | None = DEFAULT_TOKEN_ENV,
) -> list[OsfFile]:
    """All files of ``node``'s OSF Storage selected by include/exclude, sorted by path.

    ``session`` defaults to :func:`make_session(token_env) <make_session>`;
    ``token_env`` also names the variable in error messages.
    """
    node_id = _node_id(node)
    include, exclude = _patterns(include, "include"), _patterns(exclude, "exclude")
    http = _Http(session or make_session(token_env), api_url, retry or RetryPolicy(), token_env)

    root = f"{api_url.rstrip('/')}/v2/nodes/{node_id}/files/osfstorage/"
    files: list[OsfFile] = []
    pending: list[tuple[str, str]] = [(root, "")]  # (listing URL, folder path prefix)
    seen: set[str] = set()
    while pending:
        url, prefix = pending.pop()
        if url in seen:
            continue
        seen.add(url)
        for entity in _list_pages(http, _with_page_size(url)):
            attrs = entity.get("attributes") or {}
            path = _entity_path(entity, prefix)
            if attrs.get("kind") == "folder":
                related = _href(
                    (((entity.get("relationships") or {}).get("files") or {}).get("links") or {}).get("related")
                )
                if not related:
                    raise DownloadError(f"OSF folder {path!r} has no files link", where=url)
                pending.append((urljoin(url, related), path + "/"))
            elif attrs.get("kind") == "file":
                files.append(_file_record(entity, path, url))
            else:
                log.warning("skipping OSF entity %r of unknown kind %r", path, attrs.get("kind"))

    selected = [f for f in files if _selected(f.path, include, exclude)]
    log.info("OSF node %s: %d files, %d selected", node_id, len(files), len(selected))
    return sorted(selected, key=lambda f: f.path)


def _list_pages(http: _Http, url: str) -> Iterator[dict]:
    """Entities of one listing, following ``links.next``; checks ``meta.total`` when given."""
    first, count, total = url, 0, None
    next_url: str | None = url
    while next_url:
        payload = http.get_json(next_url)
        data = payload.get("data")
        if not isinstance(data, list):
            raise DownloadError("OSF listing has no 'data' list", where=next_url)
        links = payload.get("links") or {}
        meta = payload.get("meta") or links.get("meta") or {}  # 2.1+: top level; 2.0: in links
        if total is None and isinstance(meta.get("total"), int):
            total = meta["total"]
        count += len(data)
        yield from data
        nxt = _href(links.get("next"))
        next_url = urljoin(next_url, nxt) if nxt else None
    if total is not None and total != count:
        log.warning("OSF listing %s announced %d entries but returned %d", first, total, count)


def _file_record(entity: dict, path: str, where: str) -> OsfFile:
    attrs = entity.get("attributes") or {}
    hashes = (attrs.get("extra") or {}).get("hashes") or {}
    download = _href((entity.get("links") or {}).get("download"))
    if not entity.get("id") or not download:
        raise DownloadError(f"OSF file {path!r} lacks an id or a download link", where=where)
    size = attrs.get("size")
    return OsfFile(
        osf_id=str(entity["id"]),
        path=path,
        name=str(attrs.get("name") or PurePosixPath(path).name),
        size=int(size) if size is not None else None,
        md5=_hex(hashes.get("md5")),
        sha256=_hex(hashes.get("sha256")),
        date_modified=attrs.get("date_modified"),
        download_url=urljoin(where, download),
    )


def _entity_path(entity: dict, prefix: str) -> str:
    attrs = entity.get("attributes") or {}
    materialized = attrs.get("materialized_path")
    path = materialized if materialized else prefix + str(attrs.get("name") or "")
    return path.strip("/")


# --------------------------------------------------------------------------- download


def local_path(record: OsfFile, dest_dir: str | os.PathLike) -> Path:
    """Where ``record`` lands under ``dest_dir``; refuses paths that would leave it."""
    rel = PurePosixPath(record.path)
    bad = (
        not record.path
        or rel.is_absolute()
        or "\\" in record.path
        or any(part in ("", ".", "..") for part in record.path.split("/"))
    )
    root = Path(dest_dir).resolve()
    target = root.joinpath(*rel.parts) if not bad else root
    if bad or not target.resolve().is_relative_to(root):
        raise DownloadError(f"refusing OSF file path {record.path!r}: it escapes {dest_dir}", where=record.osf_id)
    return target


def download_file(
    record: OsfFile,
    dest_dir: str | os.PathLike,
    *,
    api_url: str = DEFAULT_API_URL,
    session: requests.Session | None = None,
    retry: RetryPolicy | None = None,
    token_env: str | None = DEFAULT_TOKEN_ENV,
    chunk_size: int = 1 << 20,
) -> DownloadedFile:
    """Download ``record`` to ``dest_dir/record.path``, verified, atomically.

    ``api_url`` decides which hosts may receive the token. Raises
    :class:`DownloadError` (naming the file) on HTTP errors, a size or hash
    mismatch, or a transfer that keeps being cut; nothing is left on disk then.
    """
    retry = retry or RetryPolicy()
    dest = local_path(record, dest_dir)
    if dest.is_file():
        done = _already_there(record, dest)
        if done is not None:
            log.info("%s: already present with matching %s, not downloading", record.path, done.verified_by)
            return done
    http = _Http(session or make_session(token_env), api_url, retry, token_env)

    def warn(cut: Retryable, _retry: int, wait: float) -> None:
        log.warning("%s: download interrupted (%s); retrying in %.1f s", record.path, cut, wait)

    try:
        return retry.run(_download_once, http, record, dest, chunk_size, on_retry=warn)
    except _Interrupted as cut:
        raise DownloadError(
            f"download of {record.path!r} kept being interrupted ({retry.max_retries + 1} attempts, last: {cut})",
            where=record.download_url,
        ) from cut.__cause__


class _Interrupted(Retryable):
    """The transfer stopped before the whole body arrived (retryable)."""


def _download_once(http: _Http, record: OsfFile, dest: Path, chunk_size: int) -> DownloadedFile:
    digests, received = Digests("sha256", "md5"), 0
    resp = http.get(record.download_url, stream=True)
    with resp, atomic_path(dest, suffix=".part") as tmp:
        with open(tmp, "wb") as fh:
            try:
                for chunk in resp.iter_content(chunk_size):
                    fh.write(chunk)
                    digests.update(chunk)
                    received += len(chunk)
                    if record.size is not None and received > record.size:
                        raise DownloadError(
                            f"size mismatch for {record.path!r}: OSF says {record.size} bytes, "
                            f"server sent more than that",
                            where=record.download_url,
                        )
            except requests.RequestException as exc:
                raise _Interrupted(f"{type(exc).__name__} after {received} bytes") from exc
        if record.size is not None and received < record.size:
            raise _Interrupted(f"got {received} of {record.size} bytes")
        sha256, md5 = digests.hexdigests()
        verified_by = _verify(record, sha256, md5)
    if verified_by is None:
        log.warning("%s: OSF publishes no hash for this file; recorded the computed sha256 %s unverified",
                    record.path, sha256)
    return DownloadedFile(record, dest, received, sha256, verified_by, skipped=False)


def _verify(record: OsfFile, sha256: str, md5: str) -> str | None:
    """Compare with OSF's hash (sha256 first, else md5); raise on mismatch."""
    if record.sha256 is not None:
        expected, got, name = record.sha256, sha256, "sha256"
    elif record.md5 is not None:
        expected, got, name = record.md5, md5, "md5"
    else:
        return None
    if got != expected:
        raise DownloadError(
            f"checksum mismatch for {record.path!r}: OSF {name} {expected}, downloaded {got}; file discarded",
            where=record.download_url,
        )
    return name


def _already_there(record: OsfFile, dest: Path) -> DownloadedFile | None:
    """A DownloadedFile if ``dest`` already holds exactly the remote file."""
    if record.sha256 is None and record.md5 is None:
        return None
    size = dest.stat().st_size
    if record.size is not None and size != record.size:
        return None
    sha256, md5 = file_digests(dest, "sha256", "md5")
    try:
        verified_by = _verify(record, sha256, md5)
    except DownloadError:
        return None
    return DownloadedFile(record, dest, size, sha256, verified_by, skipped=True)


# --------------------------------------------------------------------------- whole node


def fetch_node(
    node: str,
    dest_dir: str | os.PathLike,
    *,
    api_url: str = DEFAULT_API_URL,
    token_env: str | None = DEFAULT_TOKEN_ENV,
    include: Iterable[str] | str | None = None,
    exclude: Iterable[str] | str | None = None,
    manifest_path: str | os.PathLike | None = None,
    session: requests.Session | None = None,
    retry: RetryPolicy | None = None,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Download every selected file of ``node`` under ``dest_dir``; write and return the manifest.

    Files keep their OSF folder structure. The manifest (default
    ``dest_dir/osf_manifest.json``) is written atomically once all files are
    in place; it lists ``node``, ``api_url``, ``fetched_at`` (UTC ISO 8601),
    the patterns, and per file ``path``, ``size`` (bytes), ``sha256`` (of the
    local bytes), ``verified_by``, ``osf_id``, ``date_modified`` and
    ``download_url``. ``progress=None`` shows a bar only on a terminal.
    Raises :class:`DownloadError` when nothing matches or any file fails.
    """
    from tqdm import tqdm

    node_id = _node_id(node)
    dest_dir = Path(dest_dir)
    manifest_path = Path(manifest_path) if manifest_path is not None else dest_dir / MANIFEST_NAME
    session = session or make_session(token_env)
    retry = retry or RetryPolicy()
    include_l, exclude_l = _patterns(include, "include"), _patterns(exclude, "exclude")

    records = list_files(
        node_id, api_url=api_url, session=session, include=include_l, exclude=exclude_l,
        retry=retry, token_env=token_env,
    )  # fmt: skip
    if not records:
        raise DownloadError(
            f"no files selected in OSF node {node_id} (include={include_l}, exclude={exclude_l})", where=api_url
        )
    # Check every destination before downloading anything.
    manifest_target = manifest_path.resolve()
    for rec in records:
        if local_path(rec, dest_dir) == manifest_target:
            raise DownloadError(f"OSF file {rec.path!r} would overwrite the manifest {manifest_path}")

    done: list[DownloadedFile] = []
    bar = tqdm(records, unit="file", desc=f"OSF {node_id}", disable=(not progress) if progress is not None else None)
    for rec in bar:
        done.append(
            download_file(rec, dest_dir, api_url=api_url, session=session, retry=retry, token_env=token_env)
        )
    manifest = {
        "source": "osf",
        "node": node_id,
        "api_url": api_url,
        "fetched_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "include": include_l,
        "exclude": exclude_l,
        "files": [
            {
                "path": d.record.path,
                "size": d.size,
                "sha256": d.sha256,
                "verified_by": d.verified_by,
                "osf_id": d.record.osf_id,
                "date_modified": d.record.date_modified,
                "download_url": d.record.download_url,
            }
            for d in done
        ],
    }
    write_json(manifest, manifest_path)
    n_new = sum(not d.skipped for d in done)
    log.info("OSF node %s: %d files (%d downloaded, %d already present) -> %s", node_id, len(done), n_new,
             len(done) - n_new, dest_dir)  # fmt: skip
    return manifest


# --------------------------------------------------------------------------- HTTP


class _Http:
    """GET with redirects, retries and host-scoped token handling."""

    def __init__(self, session: requests.Session, api_url: str, retry: RetryPolicy, token_env: str | None):
        self.session, self.api_url, self.retry, self.token_env = session, api_url, retry, token_env

    def get_json(self, url: str) -> dict:
        with self.get(url, stream=False) as resp:
            try:
                payload = resp.json()
            except ValueError as exc:
                raise DownloadError("OSF answered with something that is not JSON", where=url) from exc
        if not isinstance(payload, dict):
            raise DownloadError("OSF answered with unexpected JSON", where=url)
        return payload

    def get(self, url: str, *, stream: bool) -> requests.Response:
        """Final 2xx response for ``url``; retries 429/5xx/connection errors, raises on other codes."""

        def warn(error: Retryable, retry: int, wait: float) -> None:
            log.warning("%s from %s; retry %d/%d in %.1f s", error, url, retry, self.retry.max_retries, wait)

        try:
            return self.retry.run(self._get_once, url, stream, on_retry=warn)
        except Retryable as error:
            raise DownloadError(f"giving up after {self.retry.max_retries + 1} attempts: {error}", where=url) from None

    def _get_once(self, url: str, stream: bool) -> requests.Response:
        try:
            resp = self._follow(url, stream)
        except _TRANSIENT as exc:
            raise Retryable(type(exc).__name__) from exc
        if resp.status_code < 300:
            return resp
        with resp:
            if resp.status_code == 429:
                raise Retryable("HTTP 429 Too Many Requests", parse_retry_after(resp.headers.get("Retry-After")))
            if resp.status_code >= 500:
                raise Retryable(f"HTTP {resp.status_code} {resp.reason}")
            raise self._http_error(resp)

    def _follow(self, url: str, stream: bool) -> requests.Response:
        """One GET, following redirects by hand so the token only reaches trusted hosts."""
        for _ in range(_MAX_REDIRECTS + 1):
            headers = None if token_allowed(url, self.api_url) else {"Authorization": None}
            resp = self.session.get(
                url, headers=headers, stream=stream, allow_redirects=False, timeout=self.retry.timeout_s
            )
            if resp.status_code not in _REDIRECT_CODES:
                return resp
            location = resp.headers.get("Location")
            resp.close()
            if not location:
                raise DownloadError(f"HTTP {resp.status_code} redirect without a Location", where=url)
            url = urljoin(url, location)
        raise DownloadError(f"more than {_MAX_REDIRECTS} redirects", where=url)

    def _http_error(self, resp: requests.Response) -> DownloadError:
        code = resp.status_code
        msg = f"HTTP {code} {resp.reason or ''}".rstrip()
        detail = _error_detail(resp)
        if detail:
            msg += f" ({detail})"
        has_token = "Authorization" in self.session.headers
        env = f"${self.token_env}" if self.token_env else "a token environment variable"
        if code in (401, 403):
            if has_token:
                msg += (
                    f": OSF refused the token from {env}; check it is a valid personal access token "
                    "with read access to this node"
                )
            else:
                msg += f": the node or file is private; set {env} to an OSF personal access token"
        elif code == 404:
            msg += ": check the node id (a private node may also need a token)"
        return DownloadError(msg, where=resp.url)


def token_allowed(url: str, api_url: str) -> bool:
    """Whether the token may be sent to ``url``.

    Allowed: the API host itself, and for a named API host with 3+ labels its
    parent domain and that domain's subdomains (``api.osf.io`` → ``osf.io``,
    ``files.us.osf.io``). Never over http when the API is https.
    """
    api, target = urlsplit(api_url), urlsplit(url)
    if api.scheme == "https" and target.scheme != "https":
        return False
    api_host, host = (api.hostname or "").lower(), (target.hostname or "").lower()
    if not host:
        return False
    if host == api_host:
        return True
    labels = api_host.split(".")
    if len(labels) < 3 or _is_ip(api_host):
        return False
    parent = ".".join(labels[1:])
    return host == parent or host.endswith("." + parent)


# --------------------------------------------------------------------------- small helpers


def _node_id(node: str) -> str:
    """The node id from ``"abc12"`` or ``"https://osf.io/abc12/"``."""
    text = str(node).strip()
    if "://" in text:
        parts = [p for p in urlsplit(text).path.split("/") if p]
        text = parts[0] if parts else ""
    if not re.fullmatch(r"[A-Za-z0-9]+", text):
        raise PipelineInputError(f"not an OSF node id: {node!r} (expected e.g. 'abc12')", where="osf node")
    return text


def _patterns(patterns: Iterable[str] | str | None, what: str) -> list[str]:
    if patterns is None:
        return []
    if isinstance(patterns, str):
        patterns = [patterns]
    out = list(patterns)
    if not all(isinstance(p, str) and p for p in out):
        raise PipelineInputError(f"{what} must be a list of non-empty glob strings, got {out!r}", where=f"osf {what}")
    return out


def _selected(path: str, include: list[str], exclude: list[str]) -> bool:
    if include and not any(fnmatch.fnmatchcase(path, p) for p in include):
        return False
    return not any(fnmatch.fnmatchcase(path, p) for p in exclude)


def _with_page_size(url: str) -> str:
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    if not any(k == "page[size]" for k, _ in query):
        query.append(("page[size]", str(PAGE_SIZE)))
    return urlunsplit(parts._replace(query=urlencode(query, safe="[]")))


def _href(link: Any) -> str | None:
    if isinstance(link, dict):
        link = link.get("href")
    return link if isinstance(link, str) and link else None


def _hex(value: Any) -> str | None:
    return value.strip().lower() if isinstance(value, str) and value.strip() else None


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def _error_detail(resp: requests.Response) -> str:
    try:
        errors = resp.json().get("errors") or []
        detail = "; ".join(str(e.get("detail")) for e in errors if isinstance(e, dict) and e.get("detail"))
    except Exception:
        detail = ""
    return detail[:200]
