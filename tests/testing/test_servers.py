"""zarrdask.testing.servers: the HTTP semantics of the file server, the proxy,
failures, delay and the request log, spoken to with http.client."""

from __future__ import annotations

import http.client
import os
import time
from urllib.parse import urlsplit

import pytest

from zarrdask.testing.servers import Faults, serve_directory, serve_proxy

pytestmark = pytest.mark.network

DATA = bytes(range(100))


def _ask(server, method, path, headers=None, body=None):
    """``(status, headers, body)`` of one request on a connection of its own."""
    parts = urlsplit(server.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        answer = conn.getresponse()
        return answer.status, dict(answer.getheaders()), answer.read()
    finally:
        conn.close()


@pytest.fixture
def files(tmp_path):
    (tmp_path / "v").write_bytes(DATA)
    with serve_directory(tmp_path) as server:
        yield server


_RANGES = [  # Range header, status, the bytes answered, Content-Range
    (None, 200, DATA, None),
    ("bytes=10-19", 206, DATA[10:20], "bytes 10-19/100"),
    ("bytes=95-200", 206, DATA[95:], "bytes 95-99/100"),
    ("bytes=90-", 206, DATA[90:], "bytes 90-99/100"),
    ("bytes=-5", 206, DATA[-5:], "bytes 95-99/100"),
    ("bytes=-500", 206, DATA, "bytes 0-99/100"),
    ("bytes=100-", 416, b"", "bytes */100"),
    ("bytes=-0", 416, b"", "bytes */100"),
    ("bytes=5-2", 416, b"", "bytes */100"),
    ("bytes=0-1,4-5", 200, DATA, None),  # multiple ranges: ignored
]


@pytest.mark.parametrize(("header", "status", "body", "content_range"),
                         [pytest.param(*case, id=case[0] or "none") for case in _RANGES])
def test_ranges(files, header, status, body, content_range):
    got_status, headers, got = _ask(files, "GET", "/v", {"Range": header} if header else None)
    assert (got_status, got, headers.get("Content-Range")) == (status, body, content_range)


def test_missing_files_escapes_and_methods(files):
    assert _ask(files, "GET", "/nothing")[0] == 404
    assert _ask(files, "GET", "/../v")[0] == 404
    assert _ask(files, "GET", "/")[0] == 404  # a directory
    status, headers, _ = _ask(files, "PUT", "/v", body=b"x")
    assert status == 405 and headers["Allow"] == "GET, HEAD"
    assert (files.root / "v").read_bytes() == DATA


def test_head_etag_and_if_match(files):
    status, headers, body = _ask(files, "HEAD", "/v")
    assert (status, headers["Content-Length"], body) == (200, "100", b"")
    etag = headers["ETag"]
    assert _ask(files, "GET", "/v", {"Range": "bytes=0-1"})[1]["ETag"] == etag
    assert _ask(files, "GET", "/v", {"If-Match": etag, "Range": "bytes=0-1"})[0] == 206
    assert _ask(files, "GET", "/v", {"If-Match": '"other"'})[0] == 412
    assert _ask(files, "GET", "/v", {"If-Match": "*"})[0] == 200
    (files.root / "v").write_bytes(DATA[::-1])
    assert _ask(files, "GET", "/v", {"If-Match": etag})[0] == 412
    files.if_match = False
    assert _ask(files, "GET", "/v", {"If-Match": etag})[0] == 200


@pytest.mark.parametrize("mode", ["content", "stat"])
def test_etags_change_when_a_file_is_replaced(tmp_path, mode):
    (tmp_path / "v").write_bytes(DATA)
    with serve_directory(tmp_path, etags=mode) as server:
        first = _ask(server, "HEAD", "/v")[1]["ETag"]
        assert _ask(server, "HEAD", "/v")[1]["ETag"] == first
        (tmp_path / "new").write_bytes(DATA[::-1])
        os.replace(tmp_path / "new", tmp_path / "v")
        assert _ask(server, "HEAD", "/v")[1]["ETag"] != first
        assert _ask(server, "GET", "/v", {"Range": "bytes=0-1"})[2] == DATA[::-1][:2]


def test_etags_per_request_and_none(files):
    files.etags = "per-request"
    assert _ask(files, "HEAD", "/v")[1]["ETag"] != _ask(files, "HEAD", "/v")[1]["ETag"]
    files.etags = "none"
    assert "ETag" not in _ask(files, "GET", "/v")[1]
    with pytest.raises(ValueError, match="etags"):
        with serve_directory(files.root, etags="weak"):
            pass


def test_the_log_records_every_request_in_arrival_order(files):
    _ask(files, "GET", "/v", {"Range": "bytes=-5"})
    _ask(files, "HEAD", "/v")
    _ask(files, "GET", "/missing")
    first, head, missing = files.log.requests
    assert first[:4] == ("GET", "/v", "bytes=-5", None)
    assert (first.status, first.bytes_sent, first.bytes_received, first.fault) == (206, 5, 0, None)
    assert (head.method, head.status, head.bytes_sent) == ("HEAD", 200, 0)
    assert (missing.status, missing.bytes_sent) == (404, len(b"not found"))
    # one after another: each request starts after the one before it was answered
    assert first.start <= first.end <= head.start <= head.end <= missing.start
    assert files.log.count() == 3 and files.log.count("GET") == 2
    assert files.log.summary() == {"requests": 3, "by_method": {"GET": 2, "HEAD": 1}, "bytes_sent": 14,
                                   "bytes_received": 0}
    files.log.clear()
    assert files.log.requests == [] and files.log.summary()["requests"] == 0


def test_delay_is_added_to_every_request(files):
    files.delay = 0.05
    _ask(files, "GET", "/v")
    _ask(files, "GET", "/missing")
    assert all(r.end - r.start >= 0.05 for r in files.log.requests)


def test_faults_fail_the_next_requests_of_a_method(files):
    files.faults.fail_next(1, "503", methods=("HEAD",))
    files.faults.fail_next(1, "429")
    assert files.faults.pending == 2
    status, _, body = _ask(files, "GET", "/v")  # the HEAD failure waits for a HEAD
    assert status == 429 and b"SlowDown" in body
    assert _ask(files, "HEAD", "/v")[0] == 503
    assert _ask(files, "GET", "/v")[0] == 200
    assert files.faults.pending == 0
    files.faults.fail_next(1, "drop")
    with pytest.raises((http.client.HTTPException, OSError)):
        _ask(files, "GET", "/v")
    assert [(r.status, r.fault) for r in files.log.requests] == [(429, "429"), (503, "503"), (200, None),
                                                                 (None, "drop")]
    files.faults.fail_next(3, "500")
    files.reset()
    assert files.faults.pending == 0 and files.log.requests == []


def test_a_shared_fault_plan(tmp_path):
    faults = Faults()
    with serve_directory(tmp_path, faults=faults) as server:
        assert server.faults is faults
        faults.fail_next(1, "500")
        assert _ask(server, "GET", "/v")[0] == 500


def test_proxy_relays_and_logs(files):
    with serve_proxy(files.url) as proxy:
        status, headers, body = _ask(proxy, "GET", "/v", {"Range": "bytes=1-2"})
        assert (status, body, headers["Content-Range"]) == (206, DATA[1:3], "bytes 1-2/100")
        status, headers, _ = _ask(proxy, "HEAD", "/v")
        assert (status, headers["Content-Length"]) == (200, "100")  # the upstream's length
        assert _ask(proxy, "PUT", "/v", body=b"abc")[0] == 405
        assert [(r.method, r.status, r.bytes_sent, r.bytes_received) for r in proxy.log.requests] == [
            ("GET", 206, 2, 0), ("HEAD", 200, 0, 0), ("PUT", 405, 0, 3)]
        assert files.log.count() == 3  # each forwarded once


def test_proxy_faults_before_and_after_forwarding(files):
    with serve_proxy(files.url) as proxy:
        proxy.faults.fail_next(1, "500")
        assert _ask(proxy, "GET", "/v")[0] == 500
        assert files.log.count() == 0  # failed at the proxy: never forwarded
        proxy.faults.fail_next(1, "drop-after")
        with pytest.raises((http.client.HTTPException, OSError)):
            _ask(proxy, "GET", "/v")
        assert files.log.count() == 1  # forwarded; the client never heard
        assert [(r.status, r.fault) for r in proxy.log.requests] == [(500, "500"), (None, "drop-after")]


def test_proxy_delay(files):
    with serve_proxy(files.url, delay=0.05) as proxy:
        t0 = time.monotonic()
        assert _ask(proxy, "GET", "/v")[0] == 200
        (request,) = proxy.log.requests
        assert request.end - request.start >= 0.05 and request.start >= t0
