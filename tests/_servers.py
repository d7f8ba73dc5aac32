"""Local servers for tests: a static HTTP file server with byte-range support.

:func:`serve_directory` serves a directory on ``127.0.0.1`` from a background
thread. It implements what zarr readers need from HTTP (RFC 9110 "Range
Requests"): ``GET`` with a single ``Range: bytes=a-b``, ``bytes=a-`` or
``bytes=-n`` answered with ``206 Partial Content`` and ``Content-Range``,
``416`` for an unsatisfiable range, ``404`` for missing files, and ``HEAD``
with ``Content-Length``.
"""

from __future__ import annotations

import os
import re
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator, NamedTuple
from urllib.parse import unquote, urlsplit
from contextlib import contextmanager

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


class HttpServer(NamedTuple):
    """A running server: its base URL (no trailing slash) and served directory."""

    url: str
    root: Path


class RangeRequestHandler(BaseHTTPRequestHandler):
    """Serves files below ``server.root`` with HTTP range support."""

    protocol_version = "HTTP/1.1"
    server: "_Server"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass  # keep test output quiet

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

    def do_HEAD(self) -> None:
        target = self._file()
        if target is None:
            self._reply(HTTPStatus.NOT_FOUND)
            return
        size = target.stat().st_size
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Length", str(size))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()

    def do_GET(self) -> None:
        target = self._file()
        if target is None:
            self._reply(HTTPStatus.NOT_FOUND, b"not found")
            return
        data = target.read_bytes()
        size = len(data)
        header = self.headers.get("Range")
        base = {"Accept-Ranges": "bytes", "Content-Type": "application/octet-stream"}
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


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    root: Path


@contextmanager
def serve_directory(root: str | os.PathLike) -> Iterator[HttpServer]:
    """Serve ``root`` on ``127.0.0.1`` (a free port) while the context is open."""
    server = _Server(("127.0.0.1", 0), RangeRequestHandler)
    server.root = Path(root)
    thread = threading.Thread(target=server.serve_forever, name="test-http-server", daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    try:
        yield HttpServer(f"http://{host}:{port}", Path(root))
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
