"""Local servers for tests: a static HTTP file server with byte-range support,
and a forwarding proxy, both able to fail on request.

:func:`serve_directory` serves a directory on ``127.0.0.1`` from a background
thread. It implements what zarr readers need from HTTP (RFC 9110 "Range
Requests", "Conditional Requests"): ``GET`` with a single ``Range:
bytes=a-b``, ``bytes=a-`` or ``bytes=-n`` answered with ``206 Partial
Content`` and ``Content-Range``, ``416`` for an unsatisfiable range, ``404``
for missing files, ``HEAD`` with ``Content-Length``, a strong ``ETag`` (a
digest of the content) on every answer, and ``If-Match`` honoured with
``412 Precondition Failed``.

:func:`serve_proxy` forwards every request to another server (the moto S3
server) and relays the answer.

The file server can be made less helpful: ``server.etags = "none"`` (no
ETag header) or ``"per-request"`` (a new ETag on every answer), and
``server.if_match = False`` (``If-Match`` ignored, as some servers do).

Both take a :class:`Faults` plan: ``faults.fail_next(n, "503")`` makes the
next ``n`` requests fail — with a status (``"500"``, ``"503"``, ``"429"``,
...), by closing the connection without an answer (``"drop"``), or, for the
proxy, by forwarding the request and then closing the connection instead of
relaying the answer (``"drop-after"``: the request took effect, the client
never heard). Real sockets, real HTTP; nothing is mocked.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import re
import threading
from collections import Counter
from contextlib import contextmanager
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator, NamedTuple
from urllib.parse import unquote, urlsplit

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")
_S3_ERRORS = {
    500: ("InternalError", "We encountered an internal error. Please try again."),
    503: ("SlowDown", "Please reduce your request rate."),
    429: ("SlowDown", "Please reduce your request rate."),
}


class Faults:
    """A thread-safe plan of failures, and a count of the requests seen.

    Attributes
    ----------
    seen : collections.Counter
        Requests received per method (including failed ones).
    log : list of (method, path, headers)
        Every request, with its ``Range`` and ``If-Match`` headers.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._plan: list[tuple[str, frozenset[str] | None]] = []
        self.seen: Counter = Counter()
        self.log: list[tuple[str, str, dict[str, str]]] = []

    def fail_next(self, n: int, kind: str = "503", methods: tuple[str, ...] | None = None) -> None:
        """Fail the next ``n`` requests (of ``methods``, default any) with ``kind``."""
        with self._lock:
            self._plan.extend([(kind, frozenset(methods) if methods else None)] * n)

    def clear(self) -> None:
        with self._lock:
            self._plan.clear()
            self.seen.clear()
            self.log.clear()

    @property
    def pending(self) -> int:
        """Failures planned and not yet served."""
        with self._lock:
            return len(self._plan)

    def take(self, method: str, path: str = "", headers: dict[str, str] | None = None) -> str | None:
        """Count a request; the failure it gets, if one is planned for it."""
        with self._lock:
            self.seen[method] += 1
            self.log.append((method, path, dict(headers or {})))
            for i, (kind, methods) in enumerate(self._plan):
                if methods is None or method in methods:
                    del self._plan[i]
                    return kind
            return None


class HttpServer(NamedTuple):
    """A running server: its base URL (no trailing slash), served directory
    (``None`` for a proxy), failure plan and the server object (whose
    ``etags`` and ``if_match`` can be changed)."""

    url: str
    root: Path | None
    faults: Faults
    server: object = None


class _FaultyHandler(BaseHTTPRequestHandler):
    """Applies the server's failure plan before handling a request."""

    protocol_version = "HTTP/1.1"
    server: "_Server"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass  # keep test output quiet

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _drop(self) -> None:
        self.close_connection = True
        self.wfile.flush()
        self.connection.shutdown(2)

    def _fault(self) -> str | None:
        """Serve a planned failure; returns its kind, or None to go on."""
        wanted = {k: v for k, v in self.headers.items() if k.lower() in ("range", "if-match")}
        kind = self.server.faults.take(self.command, self.path, wanted)
        if kind is None or kind == "drop-after":
            return kind
        if kind == "drop":
            self._drop()
            return kind
        status = int(kind)
        code, message = _S3_ERRORS.get(status, ("Error", "injected failure"))
        payload = (
            f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
            f"<Message>{message}</Message></Error>"
        ).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(payload) if self.command != "HEAD" else 0))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)
        return kind


class RangeRequestHandler(_FaultyHandler):
    """Serves files below ``server.root`` with HTTP range and ETag support."""

    def _file(self) -> Path | None:
        path = unquote(urlsplit(self.path).path, encoding="utf-8")
        parts = [p for p in path.split("/") if p]
        if any(p in (".", "..") or "\\" in p or "\x00" in p for p in parts):
            return None
        target = self.server.root.joinpath(*parts) if parts else self.server.root
        return target if target.is_file() else None

    def _reply(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD" and body:
            self.wfile.write(body)

    def _current(self) -> tuple[bytes, str] | None:
        """The file's bytes and strong ETag, or None (404 sent)."""
        target = self._file()
        if target is None:
            self._reply(HTTPStatus.NOT_FOUND, b"not found")
            return None
        try:
            data = target.read_bytes()
        except FileNotFoundError:  # replaced or removed meanwhile
            self._reply(HTTPStatus.NOT_FOUND, b"not found")
            return None
        mode = self.server.etags
        if mode == "per-request":
            self.server.counter += 1
            return data, f'"{self.server.counter}-{hashlib.sha256(data).hexdigest()[:24]}"'
        return data, f'"{hashlib.sha256(data).hexdigest()[:32]}"' if mode == "content" else ""

    def _precondition_failed(self, etag: str) -> bool:
        wanted = self.headers.get("If-Match")
        if wanted is None or wanted.strip() == "*" or not self.server.if_match:
            return False
        if etag in [w.strip() for w in wanted.split(",")]:
            return False
        self._reply(HTTPStatus.PRECONDITION_FAILED, b"", {"ETag": etag} if etag else {})
        return True

    def do_HEAD(self) -> None:
        if self._fault() or (found := self._current()) is None:
            return
        data, etag = found
        if self._precondition_failed(etag):
            return
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Type", "application/octet-stream")
        if etag:
            self.send_header("ETag", etag)
        self.end_headers()

    def do_GET(self) -> None:
        if self._fault() or (found := self._current()) is None:
            return
        data, etag = found
        if self._precondition_failed(etag):
            return
        size = len(data)
        header = self.headers.get("Range")
        base = {"Accept-Ranges": "bytes", "Content-Type": "application/octet-stream"}
        if etag:
            base["ETag"] = etag
        if header is None:
            self._reply(HTTPStatus.OK, data, base)
            return
        match = _RANGE.match(header.strip())
        if match is None or match.group(1) == match.group(2) == "":
            # multiple or malformed ranges: ignore the header, as RFC 9110 allows
            self._reply(HTTPStatus.OK, data, base)
            return
        first, last = match.groups()
        if first == "":  # suffix: the last n bytes
            n = int(last)
            if n == 0 or size == 0:
                self._unsatisfiable(size)
                return
            start, stop = max(size - n, 0), size
        else:
            start = int(first)
            stop = size if last == "" else min(int(last) + 1, size)
            if start >= size or (last != "" and int(last) < start):
                self._unsatisfiable(size)
                return
        headers = dict(base)
        headers["Content-Range"] = f"bytes {start}-{stop - 1}/{size}"
        self._reply(HTTPStatus.PARTIAL_CONTENT, data[start:stop], headers)

    def _unsatisfiable(self, size: int) -> None:
        self._reply(HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE, b"", {"Content-Range": f"bytes */{size}"})


class ProxyHandler(_FaultyHandler):
    """Forwards every request to ``server.target`` (host, port) and relays the answer."""

    def _forward(self) -> None:
        body = self._body()
        kind = self._fault()
        if kind is not None and kind != "drop-after":
            return
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("transfer-encoding", "connection")}
        if body or self.command in ("PUT", "POST"):
            headers["Content-Length"] = str(len(body))
        upstream = http.client.HTTPConnection(*self.server.target, timeout=30)
        try:
            upstream.request(self.command, self.path, body=body, headers=headers)
            answer = upstream.getresponse()
            payload = answer.read()
        finally:
            upstream.close()
        if kind == "drop-after":  # it took effect; the client never hears so
            self._drop()
            return
        self.send_response(answer.status, answer.reason)
        for name, value in answer.getheaders():
            if name.lower() not in ("transfer-encoding", "connection", "content-length", "server", "date"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    root: Path
    faults: Faults
    target: tuple[str, int]
    etags = "content"  # "content", "none", "per-request"
    if_match = True
    counter = 0

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # dropped connections are the point of some tests


@contextmanager
def _serve(handler: type, **attributes: object) -> Iterator[tuple[str, "_Server"]]:
    server = _Server(("127.0.0.1", 0), handler)
    for name, value in attributes.items():
        setattr(server, name, value)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="test-http-server", daemon=True
    )
    thread.start()
    host, port = server.server_address[:2]
    try:
        yield f"http://{host}:{port}", server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@contextmanager
def serve_directory(root: str | os.PathLike, faults: Faults | None = None) -> Iterator[HttpServer]:
    """Serve ``root`` on ``127.0.0.1`` (a free port) while the context is open."""
    faults = faults or Faults()
    with _serve(RangeRequestHandler, root=Path(root), faults=faults) as (url, server):
        yield HttpServer(url, Path(root), faults, server)


@contextmanager
def serve_proxy(target_url: str, faults: Faults | None = None) -> Iterator[HttpServer]:
    """Forward requests to ``target_url`` (``http://host:port``) from ``127.0.0.1``."""
    faults = faults or Faults()
    parts = urlsplit(target_url)
    with _serve(ProxyHandler, target=(parts.hostname, parts.port), faults=faults) as (url, server):
        yield HttpServer(url, None, faults, server)
