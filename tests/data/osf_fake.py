"""A local imitation of the OSF API v2 (files of one node) on pytest-httpserver.

Serves, with absolute URLs pointing back to the server:

* ``/v2/nodes/{node}/files/osfstorage/`` and ``.../osfstorage/{folder_id}/``:
  JSON:API listings, paginated with ``page`` / ``page[size]`` (the page size
  is capped at ``max_page_size`` so small trees still span several pages);
  ``meta`` sits in ``links`` (API 2.0), at top level (2.1+) or is absent.
* ``/download/{id}/``: 302 to ``{storage_base}/storage/{id}``.
* ``/storage/{id}``: the bytes (or a per-file custom handler).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Callable

from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

_KEEP = object()  # "use the true value"


@dataclass
class FakeFile:
    osf_id: str
    path: str  # materialized path without the leading slash
    content: bytes
    size: int | None
    md5: str | None
    sha256: str | None
    materialized_path: str
    date_modified: str = "2024-05-01T12:00:00.000000Z"
    serve: Callable[[Request], Response] | None = None  # overrides the storage response


@dataclass
class _Folder:
    osf_id: str
    path: str  # "" for the root, else "raw/sub"
    children: list = field(default_factory=list)  # FakeFile | _Folder


class FakeOsf:
    def __init__(
        self,
        server: HTTPServer,
        node: str = "abc12",
        *,
        max_page_size: int = 2,
        meta: str | None = "links",
        storage_host: str | None = None,
    ):
        assert meta in ("links", "top", None)
        self.server, self.node, self.max_page_size, self.meta = server, node, max_page_size, meta
        base = server.url_for("/").rstrip("/")
        self.api_url = base
        self.storage_base = base if storage_host is None else f"http://{storage_host}:{server.port}"
        self.root = _Folder("root", "")
        self.folders = {"root": self.root}
        self.files: dict[str, FakeFile] = {}
        self._n = 0

    # ------------------------------------------------------------------ building the tree
    def add_file(
        self,
        path: str,
        content: bytes,
        *,
        sha256=_KEEP,
        md5=_KEEP,
        size=_KEEP,
        materialized_path: str | None = None,
    ) -> FakeFile:
        """Add a file (folders are created as needed). Hash/size: true value unless given (None = absent)."""
        parent = self._folder(path.rsplit("/", 1)[0] if "/" in path else "")
        self._n += 1
        f = FakeFile(
            osf_id=f"f{self._n:04d}",
            path=path,
            content=content,
            size=len(content) if size is _KEEP else size,
            md5=hashlib.md5(content).hexdigest() if md5 is _KEEP else md5,
            sha256=hashlib.sha256(content).hexdigest() if sha256 is _KEEP else sha256,
            materialized_path=materialized_path or "/" + path,
        )
        parent.children.append(f)
        self.files[f.osf_id] = f
        return f

    def _folder(self, path: str) -> _Folder:
        if not path:
            return self.root
        for folder in self.folders.values():
            if folder.path == path:
                return folder
        parent = self._folder(path.rsplit("/", 1)[0] if "/" in path else "")
        self._n += 1
        folder = _Folder(f"d{self._n:04d}", path)
        parent.children.append(folder)
        self.folders[folder.osf_id] = folder
        return folder

    # ------------------------------------------------------------------ serving
    def install(self) -> FakeOsf:
        prefix = f"/v2/nodes/{self.node}/files/osfstorage/"
        self.server.expect_request(re.compile("^" + re.escape(prefix) + r"([^/]+/)?$")).respond_with_handler(
            self._listing
        )
        self.server.expect_request(re.compile(r"^/download/[^/]+/$")).respond_with_handler(self._download)
        self.server.expect_request(re.compile(r"^/storage/[^/]+$")).respond_with_handler(self._storage)
        return self

    def listing_url(self, folder_id: str = "root") -> str:
        suffix = "" if folder_id == "root" else f"{folder_id}/"
        return self.server.url_for(f"/v2/nodes/{self.node}/files/osfstorage/{suffix}")

    def _listing(self, request: Request) -> Response:
        rest = request.path.rsplit("/osfstorage/", 1)[1].strip("/")
        folder = self.folders.get(rest or "root")
        if folder is None:
            return Response('{"errors": [{"detail": "Not found."}]}', 404, content_type="application/json")
        size = min(int(request.args.get("page[size]", 10)), self.max_page_size)
        page = int(request.args.get("page", 1))
        items = folder.children[(page - 1) * size : page * size]
        n_pages = max(1, -(-len(folder.children) // size))

        def page_url(p: int) -> str:
            return f"{self.listing_url(folder.osf_id)}?page={p}&page[size]={size}"

        links = {
            "first": page_url(1),
            "last": page_url(n_pages),
            "prev": page_url(page - 1) if page > 1 else None,
            "next": page_url(page + 1) if page < n_pages else None,
        }
        body: dict = {"data": [self._entity(c) for c in items], "links": links}
        meta = {"total": len(folder.children), "per_page": size}
        if self.meta == "links":
            links["meta"] = meta
        elif self.meta == "top":
            body["meta"] = meta
        return Response(_json(body), 200, content_type="application/vnd.api+json")

    def _entity(self, item) -> dict:
        if isinstance(item, _Folder):
            return {
                "id": item.osf_id,
                "type": "files",
                "attributes": {
                    "kind": "folder",
                    "name": item.path.rsplit("/", 1)[-1],
                    "path": f"/{item.osf_id}/",
                    "materialized_path": f"/{item.path}/",
                    "size": None,
                    "date_modified": None,
                    "extra": {"hashes": {"md5": None, "sha256": None}},
                },
                "relationships": {
                    "files": {"links": {"related": {"href": self.listing_url(item.osf_id), "meta": {}}}}
                },
                "links": {"info": self.server.url_for(f"/v2/files/{item.osf_id}/")},
            }
        return {
            "id": item.osf_id,
            "type": "files",
            "attributes": {
                "kind": "file",
                "name": item.path.rsplit("/", 1)[-1],
                "path": f"/{item.osf_id}",
                "materialized_path": item.materialized_path,
                "size": item.size,
                "date_modified": item.date_modified,
                "extra": {"hashes": {"md5": item.md5, "sha256": item.sha256}},
            },
            "links": {
                "info": self.server.url_for(f"/v2/files/{item.osf_id}/"),
                "download": self.server.url_for(f"/download/{item.osf_id}/"),
            },
        }

    def _download(self, request: Request) -> Response:
        fid = request.path.strip("/").split("/")[1]
        if fid not in self.files:
            return Response("no such file", 404)
        return Response("", 302, headers={"Location": f"{self.storage_base}/storage/{fid}"})

    def _storage(self, request: Request) -> Response:
        f = self.files.get(request.path.rsplit("/", 1)[1])
        if f is None:
            return Response("no such file", 404)
        if f.serve is not None:
            return f.serve(request)
        return Response(f.content, 200, content_type="application/octet-stream")

    # ------------------------------------------------------------------ inspection
    def requests_to(self, pattern: str) -> list[Request]:
        """Requests the server received whose path matches ``pattern`` (a regex)."""
        return [req for req, _ in self.server.log if re.search(pattern, req.path)]


def _json(obj) -> str:
    import json

    return json.dumps(obj)


def cut_body(content: bytes, *, declare_length: bool) -> Callable[[Request], Response]:
    """A storage handler sending only the first half of ``content`` then closing.

    With ``declare_length`` the headers announce the full length (the client
    sees an incomplete read); without, the body just ends early.
    """

    def serve(request: Request) -> Response:
        def body():
            yield content[: len(content) // 2]

        headers = {"Content-Length": str(len(content))} if declare_length else {}
        resp = Response(body(), 200, headers=headers, content_type="application/octet-stream")
        if not declare_length:
            resp.headers.pop("Content-Length", None)
        return resp

    return serve
