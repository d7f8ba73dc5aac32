"""Servers for the remote benchmark: latency is added on the server side, and
every request and every body byte sent is counted.

* :func:`serve_files` — a static HTTP server for a directory with what zarr
  readers use (RFC 9110): ``GET`` with one ``Range`` (``a-b``, ``a-``,
  ``-n``), ``206`` + ``Content-Range``, ``416``, ``HEAD``, strong ``ETag``,
  ``If-Match`` (``412``). Files are read with ``seek``, not whole.
* :func:`serve_proxy` — forwards every request to another server (moto's S3
  server) over a kept-alive connection per client connection.

Both sleep ``delay`` seconds before answering each request, and set
``TCP_NODELAY`` on every socket: without it, a reply written in two pieces
(headers, then body) waits for the client's delayed ACK, which adds about
40 ms on Linux by itself.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import re
import socket
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator
from urllib.parse import unquote, urlsplit

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


class Stats:
    """Requests per method and body bytes sent, since the last :meth:`reset`."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self.lock:
            self.requests: dict[str, int] = {}
            self.bytes_sent = 0
            self.bytes_received = 0

    def add(self, method: str, sent: int, received: int = 0) -> None:
        with self.lock:
            self.requests[method] = self.requests.get(method, 0) + 1
            self.bytes_sent += sent
            self.bytes_received += received

    def snapshot(self) -> dict:
        with self.lock:
            return {"requests": sum(self.requests.values()), "by_method": dict(self.requests),
                    "bytes_sent": self.bytes_sent, "bytes_received": self.bytes_received}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    delay = 0.0
    stats: Stats
    root: Path
    target: tuple[str, int]

    def handle_error(self, request: object, client_address: object) -> None:
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # TCP_NODELAY on the accepted socket
    server: _Server

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass

    def _wait(self) -> None:
        if self.server.delay:
            time.sleep(self.server.delay)


class _FileHandler(_Handler):
    def _reply(self, status: int, body: bytes = b"", headers: dict | None = None) -> None:
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD" and body:
            self.wfile.write(body)
        self.server.stats.add(self.command, len(body) if self.command != "HEAD" else 0)

    def _file(self) -> tuple[Path, int, str] | None:
        parts = [p for p in unquote(urlsplit(self.path).path).split("/") if p]
        if any(p in (".", "..") for p in parts):
            return None
        target = self.server.root.joinpath(*parts)
        try:
            st = target.stat()
        except OSError:
            return None
        if not target.is_file():
            return None
        tag = hashlib.sha1(f"{target}:{st.st_size}:{st.st_mtime_ns}".encode()).hexdigest()[:24]
        return target, st.st_size, f'"{tag}"'

    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:
        self._wait()
        found = self._file()
        if found is None:
            self._reply(404, b"not found")
            return
        path, size, etag = found
        wanted = self.headers.get("If-Match")
        if wanted is not None and wanted.strip() != "*" and etag not in [w.strip() for w in wanted.split(",")]:
            self._reply(412, b"", {"ETag": etag})
            return
        base = {"Accept-Ranges": "bytes", "ETag": etag, "Content-Type": "application/octet-stream"}
        header = self.headers.get("Range")
        match = _RANGE.match(header.strip()) if header else None
        if match is None or match.group(1) == match.group(2) == "":
            start, stop, status = 0, size, 200
        else:
            first, last = match.groups()
            if first == "":
                start, stop = max(size - int(last), 0), size
            else:
                start = int(first)
                stop = size if last == "" else min(int(last) + 1, size)
            if start >= stop:
                self._reply(416, b"", {"Content-Range": f"bytes */{size}"})
                return
            status = 206
            base["Content-Range"] = f"bytes {start}-{stop - 1}/{size}"
        if self.command == "HEAD":
            self.send_response(200)
            for k, v in base.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(size))
            self.end_headers()
            self.server.stats.add("HEAD", 0)
            return
        with open(path, "rb") as f:
            f.seek(start)
            body = f.read(stop - start)
        self._reply(status, body, base)


class _ProxyHandler(_Handler):
    _upstream: http.client.HTTPConnection | None = None

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts = []
            while True:
                n = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if n == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                parts.append(self.rfile.read(n))
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _connection(self) -> http.client.HTTPConnection:
        if self._upstream is None:
            conn = http.client.HTTPConnection(*self.server.target, timeout=60)
            conn.connect()
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._upstream = conn
        return self._upstream

    def _forward(self) -> None:
        body = self._body()
        self._wait()
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("transfer-encoding", "connection")}
        if body or self.command in ("PUT", "POST"):
            headers["Content-Length"] = str(len(body))
        for attempt in (0, 1):
            conn = self._connection()
            try:
                conn.request(self.command, self.path, body=body, headers=headers)
                answer = conn.getresponse()
                payload = answer.read()
                break
            except (http.client.HTTPException, OSError):
                conn.close()
                self._upstream = None
                if attempt:
                    raise
        self.send_response(answer.status, answer.reason)
        for name, value in answer.getheaders():
            if name.lower() not in ("transfer-encoding", "connection", "content-length", "server", "date"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)
        self.server.stats.add(self.command, len(payload) if self.command != "HEAD" else 0, len(body))

    def finish(self) -> None:
        super().finish()
        if self._upstream is not None:
            self._upstream.close()

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward


@contextmanager
def _serve(handler: type, **attrs: object) -> Iterator[_Server]:
    server = _Server(("127.0.0.1", 0), handler)
    server.stats = Stats()
    for k, v in attrs.items():
        setattr(server, k, v)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def url_of(server: _Server) -> str:
    host, port = server.server_address[:2]
    return f"http://{host}:{port}"


@contextmanager
def serve_files(root: str | os.PathLike, delay: float = 0.0) -> Iterator[_Server]:
    """Serve ``root`` on 127.0.0.1, ``delay`` seconds added to every request."""
    with _serve(_FileHandler, root=Path(root), delay=delay) as server:
        yield server


@contextmanager
def serve_proxy(target_url: str, delay: float = 0.0) -> Iterator[_Server]:
    """Forward requests to ``target_url``, ``delay`` seconds added to every request."""
    parts = urlsplit(target_url)
    with _serve(_ProxyHandler, target=(parts.hostname, parts.port), delay=delay) as server:
        yield server
