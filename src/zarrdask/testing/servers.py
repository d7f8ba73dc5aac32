"""Local HTTP servers for tests and benchmarks of remote stores: a static file
server with byte ranges and ETags, and a proxy (in front of moto's S3 server,
say), each with optional added latency and injected failures, and a log of
every request they answered.

* :func:`serve_directory` serves a directory with what zarr readers use from
  HTTP (RFC 9110 "Range Requests", "Conditional Requests"): ``GET`` with one
  ``Range: bytes=a-b``, ``bytes=a-`` or ``bytes=-n`` answered ``206`` with
  ``Content-Range``; ``416`` for an unsatisfiable range; a malformed or
  multiple range ignored (``200``, the whole file); ``404``; ``HEAD``; a
  strong ``ETag`` on every answer and ``If-Match`` answered ``412``.
* :func:`serve_proxy` forwards every request to another server over one
  kept-alive connection per client connection and relays the answer.

Both run on ``127.0.0.1`` (a free port) in a background thread while the
context is open, and yield a :class:`Server`, whose settings may be changed
while it runs:

* ``delay``: seconds slept before answering each request (latency);
* ``faults``: a :class:`Faults` plan; ``server.faults.fail_next(2, "503")``
  makes the next two requests fail with that status (``"500"``, ``"429"``,
  ...), ``"drop"`` closes the connection without an answer, and
  ``"drop-after"`` serves the request (the proxy forwards it) and then closes
  the connection instead of answering (it took effect; the client never heard);
* ``etags`` (file server): ``"content"`` (a digest of the bytes, the
  default), ``"stat"`` (from the file's inode, size and modification time:
  no whole-file read per request, for large files), ``"per-request"`` (a new
  one on every answer) or ``"none"``; ``if_match=False`` ignores
  ``If-Match``, as some servers do;
* ``log``: a :class:`RequestLog` of every request — a :class:`Request` each
  with method, path, ``Range``, ``If-Match``, start and end times, status and
  bytes — with counts and totals, and the round trips a client paid
  (:meth:`RequestLog.waves`: which requests waited for which).

Every socket has ``TCP_NODELAY``: without it, an answer written in two pieces
(headers, body) waits for the client's delayed ACK, about 40 ms on Linux.
Real sockets, real HTTP, the standard library only; nothing is mocked.
"""

from __future__ import annotations

import hashlib
import http.client
import itertools
import os
import re
import socket
import threading
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import BinaryIO, Iterator, NamedTuple
from urllib.parse import unquote, urlsplit

__all__ = ["Faults", "Request", "RequestLog", "Server", "serve_directory", "serve_proxy"]

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")
_S3_ERRORS = {
    500: ("InternalError", "We encountered an internal error. Please try again."),
    503: ("SlowDown", "Please reduce your request rate."),
    429: ("SlowDown", "Please reduce your request rate."),
}
#: hop-by-hop and per-server headers a proxy does not relay
_NOT_RELAYED = ("transfer-encoding", "connection", "content-length", "server", "date")


class Request(NamedTuple):
    """One request a server answered (or failed on purpose).

    ``start`` is when its headers had been read, ``end`` when its answer was
    ready to go (:func:`time.monotonic`, before the first byte of the answer
    is sent, so a client that has its answer finds the request in the log);
    between them lie the added delay and, for the proxy, the upstream round
    trip. ``status`` is ``None`` when the connection was closed instead of
    answered; ``fault`` names the injected failure, if any.
    """

    method: str
    path: str
    range: str | None
    if_match: str | None
    start: float
    end: float
    status: int | None
    bytes_sent: int
    bytes_received: int
    fault: str | None
    #: the ``If-None-Match`` header (a revalidating read), if any
    if_none_match: str | None = None


class RequestLog:
    """Every request a server answered since the last :meth:`clear` (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: list[Request] = []

    def add(self, request: Request) -> None:
        with self._lock:
            self._requests.append(request)

    def clear(self) -> None:
        with self._lock:
            self._requests = []

    @property
    def requests(self) -> list[Request]:
        """The requests in the order they arrived (by ``start``)."""
        with self._lock:
            return sorted(self._requests, key=lambda r: r.start)

    def count(self, method: str | None = None) -> int:
        """How many requests (of ``method``), failed ones included."""
        with self._lock:
            return sum(1 for r in self._requests if method is None or r.method == method)

    def waves(self) -> list[int]:
        """The wave of every request in :attr:`requests` (same order): 1 for a
        request that started before any other had ended, otherwise 1 + the
        highest wave among the requests that had ended before it started.
        A client that waits for an answer before asking again puts its next
        request in a later wave; requests sent together share a wave."""
        done = self.requests
        waves: list[int] = []
        for i, r in enumerate(done):
            before = [w for q, w in zip(done[:i], waves) if q.end <= r.start]
            waves.append(1 + max(before, default=0))
        return waves

    @staticmethod
    def most_in_flight(requests: "list[Request]") -> int:
        """The most of ``requests`` (from :attr:`requests`, filtered as
        wanted) the server was answering at one moment."""
        events = sorted([(r.start, 1) for r in requests] + [(r.end, -1) for r in requests])
        most = now = 0
        for _, step in events:
            now += step
            most = max(most, now)
        return most

    def round_trips(self) -> int:
        """The number of waves (see :meth:`waves`): the round trips the client
        paid, whatever the latency (0 when nothing was asked)."""
        return max(self.waves(), default=0)

    def summary(self) -> dict:
        """``{"requests", "by_method", "bytes_sent", "bytes_received"}``: counts and body bytes."""
        with self._lock:
            done = list(self._requests)
        return {
            "requests": len(done),
            "by_method": dict(Counter(r.method for r in done)),
            "bytes_sent": sum(r.bytes_sent for r in done),
            "bytes_received": sum(r.bytes_received for r in done),
        }


class Faults:
    """A thread-safe plan of failures, served to requests in arrival order."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._plan: list[tuple[str, frozenset[str] | None]] = []

    def fail_next(self, n: int, kind: str = "503", methods: tuple[str, ...] | None = None) -> None:
        """Fail the next ``n`` requests (of ``methods``, default any) with ``kind``."""
        with self._lock:
            self._plan.extend([(kind, frozenset(methods) if methods else None)] * n)

    def clear(self) -> None:
        with self._lock:
            self._plan.clear()

    @property
    def pending(self) -> int:
        """Failures planned and not yet served."""
        with self._lock:
            return len(self._plan)

    def take(self, method: str) -> str | None:
        """The failure planned for a request of ``method``, if any (it is used up)."""
        with self._lock:
            for i, (kind, methods) in enumerate(self._plan):
                if methods is None or method in methods:
                    del self._plan[i]
                    return kind
            return None


@dataclass
class Server:
    """A running server: its base URL (no trailing slash), the directory it
    serves (``None`` for a proxy), and its settings, which may be changed
    while it runs (see the module documentation)."""

    url: str
    root: Path | None
    delay: float = 0.0
    faults: Faults = field(default_factory=Faults)
    log: RequestLog = field(default_factory=RequestLog)
    etags: str = "content"
    if_match: bool = True
    _versions: Iterator[int] = field(default_factory=itertools.count, repr=False)

    def reset(self) -> None:
        """Forget the requests logged and the failures planned."""
        self.log.clear()
        self.faults.clear()


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    settings: Server
    target: tuple[str, int]

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # dropped connections are the point of some tests


class _Handler(BaseHTTPRequestHandler):
    """Reads a request, waits, serves a planned failure or :meth:`_serve`, and
    logs it; every answer goes out through :meth:`_answer` or :meth:`_drop`."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # TCP_NODELAY on the accepted socket
    server: _HTTPServer

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass  # keep test and benchmark output quiet

    def _handle(self) -> None:
        self._start, self._fault, self._logged = time.monotonic(), None, False
        self._received = 0
        settings = self.server.settings
        try:
            body = self._body()
            self._received = len(body)
            if settings.delay:
                time.sleep(settings.delay)
            self._fault = settings.faults.take(self.command)
            if self._fault == "drop":
                self._drop()
            elif self._fault is not None and self._fault != "drop-after":
                self._fail(int(self._fault))
            else:
                self._serve(body)
        finally:
            if not self._logged:  # an exception: no answer
                self._log(None, 0)

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _handle

    def _serve(self, body: bytes) -> None:
        raise NotImplementedError

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

    def _log(self, status: int | None, sent: int) -> None:
        self._logged = True
        self.server.settings.log.add(Request(
            self.command, self.path, self.headers.get("Range"), self.headers.get("If-Match"),
            self._start, time.monotonic(), status, sent, self._received, self._fault,
            self.headers.get("If-None-Match"),
        ))

    def _answer(self, status: int, headers: dict[str, str], body: bytes = b"",
                length: int | None = None, reason: str | None = None) -> None:
        """Send an answer; ``length`` is the ``Content-Length`` of a ``HEAD``."""
        if self._fault == "drop-after":  # it took effect; the client never hears so
            self._drop()
            return
        self.send_response(status, reason)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        sent = 0 if self.command == "HEAD" else len(body)
        self._log(status, sent)
        self.end_headers()
        if sent:
            self.wfile.write(body)

    def _drop(self) -> None:
        self._log(None, 0)
        self.close_connection = True
        self.wfile.flush()
        self.connection.shutdown(socket.SHUT_RDWR)

    def _fail(self, status: int) -> None:
        code, message = _S3_ERRORS.get(status, ("Error", "injected failure"))
        payload = (
            f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
            f"<Message>{message}</Message></Error>"
        ).encode()
        self._answer(status, {"Content-Type": "application/xml"}, payload if self.command != "HEAD" else b"")


class _FileHandler(_Handler):
    """Serves the files below ``settings.root`` with ranges and ETags."""

    def _file(self) -> Path | None:
        parts = [p for p in unquote(urlsplit(self.path).path, encoding="utf-8").split("/") if p]
        if any(p in (".", "..") or "\\" in p or "\x00" in p for p in parts):
            return None
        target = self.server.settings.root.joinpath(*parts)
        return target if target.is_file() else None

    def _serve(self, body: bytes) -> None:
        if self.command not in ("GET", "HEAD"):
            self._answer(405, {"Allow": "GET, HEAD"})
            return
        target = self._file()
        try:
            f = open(target, "rb") if target is not None else None
        except FileNotFoundError:  # replaced or removed meanwhile
            f = None
        if f is None:
            self._answer(404, {}, b"not found")
            return
        with f:  # one version throughout, even if the file is replaced meanwhile
            self._serve_file(f)

    def _serve_file(self, f: BinaryIO) -> None:
        settings = self.server.settings
        st = os.fstat(f.fileno())
        data = f.read() if settings.etags in ("content", "per-request") else None
        size = st.st_size if data is None else len(data)
        etag = _etag(settings, st, data)
        base = {"Accept-Ranges": "bytes", "Content-Type": "application/octet-stream"}
        if etag:
            base["ETag"] = etag
        wanted = self.headers.get("If-Match")
        if (settings.if_match and wanted is not None and wanted.strip() != "*"
                and etag not in [w.strip() for w in wanted.split(",")]):
            self._answer(412, {"ETag": etag} if etag else {})
            return
        if self.command == "HEAD":
            self._answer(200, base, length=size)
            return
        found = self._range(size)
        if found is None:
            self._answer(416, {"Content-Range": f"bytes */{size}"})
            return
        start, stop, status = found
        if status == 206:
            base["Content-Range"] = f"bytes {start}-{stop - 1}/{size}"
        if data is None:
            f.seek(start)
            self._answer(status, base, f.read(stop - start))
        else:
            self._answer(status, base, data[start:stop])

    def _range(self, size: int) -> tuple[int, int, int] | None:
        """``(start, stop, status)`` of the ``Range`` asked for; ``None``: unsatisfiable."""
        header = self.headers.get("Range")
        match = _RANGE.match(header.strip()) if header is not None else None
        if match is None or match.group(1) == match.group(2) == "":
            return 0, size, 200  # none, multiple or malformed: the whole file, as RFC 9110 allows
        first, last = match.groups()
        if first == "":  # suffix: the last n bytes
            if int(last) == 0 or size == 0:
                return None
            return max(size - int(last), 0), size, 206
        start = int(first)
        if start >= size or (last != "" and int(last) < start):
            return None
        return start, size if last == "" else min(int(last) + 1, size), 206


def _etag(settings: Server, st: os.stat_result, data: bytes | None) -> str:
    """The file's ETag (quoted) as ``settings.etags`` makes them, or ``""``."""
    if settings.etags == "content":
        return f'"{hashlib.sha256(data).hexdigest()[:32]}"'
    if settings.etags == "per-request":
        return f'"{next(settings._versions)}-{hashlib.sha256(data).hexdigest()[:24]}"'
    if settings.etags == "stat":
        return f'"{st.st_ino:x}-{st.st_size:x}-{st.st_mtime_ns:x}"'
    return ""


class _ProxyHandler(_Handler):
    """Forwards every request to ``server.target`` and relays the answer."""

    _upstream: http.client.HTTPConnection | None = None

    def _connection(self) -> http.client.HTTPConnection:
        if self._upstream is None:
            conn = http.client.HTTPConnection(*self.server.target, timeout=60)
            conn.connect()
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._upstream = conn
        return self._upstream

    def _serve(self, body: bytes) -> None:
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("transfer-encoding", "connection")}
        if body or self.command in ("PUT", "POST"):
            headers["Content-Length"] = str(len(body))
        for attempt in (0, 1):  # a kept-alive connection the upstream closed: once more on a new one
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
        relayed = {k: v for k, v in answer.getheaders() if k.lower() not in _NOT_RELAYED}
        length = answer.getheader("Content-Length") if self.command == "HEAD" else None
        self._answer(answer.status, relayed, payload, length=None if length is None else int(length),
                     reason=answer.reason)

    def finish(self) -> None:
        super().finish()
        if self._upstream is not None:
            self._upstream.close()


@contextmanager
def _serve(handler: type[_Handler], root: Path | None, target: tuple[str, int] | None,
           **settings: object) -> Iterator[Server]:
    server = _HTTPServer(("127.0.0.1", 0), handler)
    host, port = server.server_address[:2]
    server.settings = Server(f"http://{host}:{port}", root, **settings)
    if target is not None:
        server.target = target
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="zarrdask-http-server", daemon=True
    )
    thread.start()
    try:
        yield server.settings
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@contextmanager
def serve_directory(root: str | os.PathLike, *, delay: float = 0.0, faults: Faults | None = None,
                    etags: str = "content", if_match: bool = True) -> Iterator[Server]:
    """Serve the files below ``root`` on ``127.0.0.1`` while the context is open.

    Parameters
    ----------
    root : path
        The directory served: ``GET {url}/a/b`` answers with ``root/a/b``.
    delay : float
        Seconds slept before answering each request.
    faults : Faults, optional
        A failure plan (default: a new, empty one, ``server.faults``).
    etags : {"content", "stat", "per-request", "none"}
        How ETags are made (see the module documentation).
    if_match : bool
        Whether ``If-Match`` is honoured.
    """
    if etags not in ("content", "stat", "per-request", "none"):
        raise ValueError(f"etags must be 'content', 'stat', 'per-request' or 'none', not {etags!r}")
    with _serve(_FileHandler, Path(root), None, delay=delay, faults=faults or Faults(),
                etags=etags, if_match=if_match) as server:
        yield server


@contextmanager
def serve_proxy(target_url: str, *, delay: float = 0.0, faults: Faults | None = None) -> Iterator[Server]:
    """Forward requests to ``target_url`` (``http://host:port``) from ``127.0.0.1``.

    ``delay`` (seconds before each request is forwarded) and ``faults`` are
    as for :func:`serve_directory`.
    """
    parts = urlsplit(target_url)
    with _serve(_ProxyHandler, None, (parts.hostname, parts.port), delay=delay,
                faults=faults or Faults()) as server:
        yield server
