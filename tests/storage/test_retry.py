"""Retries of transient failures: the classification, the backoff, and remote
stores against real servers that fail on request (an HTTP file server, and a
proxy in front of the moto S3 server)."""

from __future__ import annotations

import errno
import uuid

import pytest

import zarrdask
from zarrdask.errors import StoreError
from zarrdask.storage import FsspecStore, RangeRequest, SuffixRequest
from zarrdask.storage.retry import MAX_DELAY, RetriesExhausted, RetryPolicy, is_transient, retry_batch, retry_call


@pytest.fixture(autouse=True)
def quick_backoff():
    with zarrdask.config.set(retry_backoff=0.001):
        yield


# -- classification ----------------------------------------------------------
def _client_response_error(status):
    aiohttp = pytest.importorskip("aiohttp")
    return aiohttp.ClientResponseError(None, (), status=status, message="x")


def _client_error(status, code):
    botocore = pytest.importorskip("botocore.exceptions")
    return botocore.ClientError(
        {"Error": {"Code": code, "Message": "m"}, "ResponseMetadata": {"HTTPStatusCode": status}}, "GetObject"
    )


def _translated(error):
    """An s3fs-style OSError raised from a botocore error."""
    try:
        try:
            raise error
        except Exception as e:
            raise OSError(errno.EIO, "translated") from e
    except OSError as outer:
        return outer


@pytest.mark.parametrize(
    "make, transient",
    [
        (lambda: _client_response_error(500), True),
        (lambda: _client_response_error(503), True),
        (lambda: _client_response_error(429), True),
        (lambda: _client_response_error(404), False),
        (lambda: _client_response_error(403), False),
        (lambda: _client_response_error(401), False),
        (lambda: _client_response_error(416), False),
        (lambda: _client_error(503, "SlowDown"), True),
        (lambda: _client_error(400, "RequestTimeout"), True),
        (lambda: _client_error(403, "AccessDenied"), False),
        (lambda: _client_error(412, "PreconditionFailed"), False),
        (lambda: _translated(_client_error(500, "InternalError")), True),
        (lambda: _translated(_client_error(403, "AccessDenied")), False),
        (lambda: ConnectionResetError(errno.ECONNRESET, "reset"), True),
        (lambda: TimeoutError("timed out"), True),
        (lambda: pytest.importorskip("aiohttp").ServerDisconnectedError(), True),
        (lambda: FileNotFoundError("missing"), False),
        (lambda: PermissionError("denied"), False),
        (lambda: ValueError("bug"), False),
    ],
    ids=lambda x: "" if callable(x) else str(x),
)
def test_transient_classification(make, transient):
    assert is_transient(make()) is transient


def test_backoff_is_bounded_and_jittered():
    policy = RetryPolicy(retries=10, backoff=1.0)
    for retry in range(10):
        ceiling = min(2.0**retry, MAX_DELAY)
        delays = {policy.delay(retry) for _ in range(20)}
        assert all(ceiling / 2 <= d <= ceiling for d in delays)
        assert len(delays) > 1  # jitter
    with zarrdask.config.set(retries=5, retry_backoff=0.25):
        assert RetryPolicy.current() == RetryPolicy(5, 0.25)


def test_retry_call_and_batch_bounds():
    calls = []

    def flaky():
        calls.append(1)
        raise ConnectionResetError("reset")

    with zarrdask.config.set(retries=2):
        with pytest.raises(RetriesExhausted) as info:
            retry_call(flaky)
    assert len(calls) == 3 and info.value.attempts == 3
    assert "gave up after 3 attempts" in str(info.value) and "ConnectionResetError" in str(info.value)

    calls.clear()
    with pytest.raises(PermissionError):
        retry_call(lambda: calls.append(1) or (_ for _ in ()).throw(PermissionError("no")))
    assert len(calls) == 1  # not transient: not retried

    rounds = []

    def run(indices):
        rounds.append(list(indices))
        return [TimeoutError("slow") if i == 1 and len(rounds) < 3 else f"v{i}" for i in indices]

    assert retry_batch(run, 3) == ["v0", "v1", "v2"]
    assert rounds == [[0, 1, 2], [1], [1]]  # only the failed request is retried


# -- HTTP --------------------------------------------------------------------
def _http_store(server, data=b"0123456789" * 10, name="v"):
    (server.root / name).write_bytes(data)
    return FsspecStore(server.url)


@pytest.mark.network
@pytest.mark.parametrize("kind", ["500", "503", "429", "drop"])
def test_http_reads_are_retried(faulty_http, kind):
    store = _http_store(faulty_http)
    faulty_http.faults.fail_next(2, kind)
    assert store.get("v") == b"0123456789" * 10
    faulty_http.faults.fail_next(2, kind)
    assert store.get_ranges("v", [RangeRequest(3, 4), SuffixRequest(2)]) == [b"3456", b"89"]
    faulty_http.faults.fail_next(1, kind)
    assert store.get_many(["v", "missing"]) == [b"0123456789" * 10, None]
    assert faulty_http.faults.pending == 0


@pytest.mark.network
def test_http_gives_up_after_the_retries_naming_key_attempts_and_error(faulty_http):
    store = _http_store(faulty_http)
    faulty_http.faults.fail_next(100, "503")
    with zarrdask.config.set(retries=2):
        with pytest.raises(StoreError) as info:
            store.get("v")
    message = str(info.value)
    assert "'v'" in message and "3 attempts" in message and "503" in message
    assert faulty_http.log.count("GET") == 3


@pytest.mark.network
@pytest.mark.parametrize("kind", ["403", "401", "400"])
def test_http_client_errors_are_not_retried(faulty_http, kind):
    store = _http_store(faulty_http)
    faulty_http.faults.fail_next(5, kind)
    with pytest.raises(StoreError) as info:
        store.get("v")
    assert kind in str(info.value) and "'v'" in str(info.value)
    assert faulty_http.log.count("GET") == 1


@pytest.mark.network
def test_http_missing_key_is_an_answer_not_a_failure(faulty_http):
    store = _http_store(faulty_http)
    assert store.get("nothing/here") is None
    assert faulty_http.log.count("GET") == 1


@pytest.mark.network
def test_retries_setting_zero_disables_retries(faulty_http):
    store = _http_store(faulty_http)
    faulty_http.faults.fail_next(1, "503")
    with zarrdask.config.set(retries=0):
        with pytest.raises(StoreError, match="after 1 attempt"):
            store.get("v")


@pytest.mark.network
def test_http_reader_requests_are_retried(faulty_http):
    store = _http_store(faulty_http)
    faulty_http.faults.fail_next(2, "drop")
    with store.reader("v") as reader:
        assert reader.read([SuffixRequest(3)]) == [b"789"]
        faulty_http.faults.fail_next(2, "503")
        assert reader.read([RangeRequest(0, 2)]) == [b"01"]
        assert reader.exact


@pytest.mark.network
def test_zarr_python_store_retries_transient_failures(faulty_http):
    zarr = pytest.importorskip("zarr")
    from zarrdask.storage import ZarrPythonStore

    (faulty_http.root / "k").write_bytes(b"abcdef")
    store = ZarrPythonStore(zarr.storage.FsspecStore.from_url(faulty_http.url, read_only=True))
    faulty_http.faults.fail_next(2, "503")
    assert store.get_many(["k", "missing"]) == [b"abcdef", None]
    faulty_http.faults.fail_next(2, "drop")
    assert store.get_ranges("k", [RangeRequest(1, 2)]) == [b"bc"]
    faulty_http.faults.fail_next(100, "500")
    with zarrdask.config.set(retries=1):
        with pytest.raises(StoreError) as info:
            store.get("k")
    assert "'k'" in str(info.value) and "2 attempts" in str(info.value)


# -- S3 through a fault-injecting proxy ----------------------------------------
@pytest.fixture
def s3_pair(s3_bucket, s3_storage_options, s3_proxy):
    """(store through the proxy, store straight to moto, proxy)."""
    proxy, options = s3_proxy
    url = f"s3://{s3_bucket}/{uuid.uuid4().hex[:8]}"
    through = FsspecStore(url, storage_options=options)
    through.fs.retries = 1  # s3fs: no retries of its own
    return through, FsspecStore(url, storage_options=s3_storage_options), proxy


@pytest.mark.network
@pytest.mark.parametrize("kind", ["500", "drop", "drop-after"])
def test_s3_writes_are_retried_and_stored(s3_pair, kind):
    store, direct, proxy = s3_pair
    proxy.faults.fail_next(2, kind, methods=("PUT",))
    store.set("a/0", b"first")
    assert direct.get("a/0") == b"first"
    proxy.faults.fail_next(2, kind, methods=("PUT",))
    store.set_many({"a/1": b"x", "a/2": b"y"})
    assert direct.get_many(["a/1", "a/2"]) == [b"x", b"y"]
    assert proxy.faults.pending == 0


@pytest.mark.network
def test_s3_write_failing_every_time_reports_failure(s3_pair):
    store, direct, proxy = s3_pair
    proxy.faults.fail_next(100, "500", methods=("PUT",))
    with zarrdask.config.set(retries=2):
        with pytest.raises(StoreError) as info:
            store.set("never", b"stored")
    assert "'never'" in str(info.value) and "3 attempts" in str(info.value)
    assert proxy.log.count("PUT") == 3
    assert direct.get("never") is None


@pytest.mark.network
def test_s3_reads_and_reader_are_retried(s3_pair):
    store, direct, proxy = s3_pair
    direct.set("shard", bytes(range(64)))
    proxy.faults.fail_next(2, "drop", methods=("GET",))
    assert store.get("shard") == bytes(range(64))
    proxy.faults.fail_next(2, "500", methods=("GET",))
    assert store.get_ranges("shard", [SuffixRequest(4)]) == [bytes(range(60, 64))]
    proxy.faults.fail_next(1, "500", methods=("GET",))
    with store.reader("shard") as reader:
        assert reader.read([SuffixRequest(4)]) == [bytes(range(60, 64))]
        proxy.faults.fail_next(2, "drop", methods=("GET",))
        assert reader.read([RangeRequest(0, 4)]) == [bytes(range(4))]
    assert proxy.faults.pending == 0
