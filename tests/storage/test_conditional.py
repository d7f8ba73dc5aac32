"""Exact readers over HTTP and S3: the ETag of the first response, If-Match on
later ranges, and what happens when a value is replaced between two reads
(the defect: a partial shard read applying old offsets to new bytes)."""

from __future__ import annotations

import os
import uuid

import pytest

from zarrdask.errors import ValueChangedError
from zarrdask.storage import FsspecStore, OffsetRequest, RangeRequest, SuffixRequest

pytestmark = pytest.mark.network

OLD = bytes(range(100))
NEW = bytes(range(100, 200))


def _replace(path, data):
    tmp = path.with_name(f".{path.name}.new")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _requests(server, method="GET"):
    return [r for r in server.log.requests if r.method == method]


# -- HTTP --------------------------------------------------------------------
def test_http_value_replaced_between_reads_is_never_mixed(faulty_http):
    path = faulty_http.root / "shard"
    path.write_bytes(OLD)
    store = FsspecStore(faulty_http.url)
    with store.reader("shard") as reader:
        assert reader.read([SuffixRequest(8)]) == [OLD[-8:]]  # "the index"
        _replace(path, NEW)
        with pytest.raises(ValueChangedError) as info:
            reader.read([RangeRequest(0, 8)])  # "the chunks at the index's offsets"
        assert info.value.key == "shard" and "'shard'" in str(info.value)
        assert reader.exact and not reader.unchanged()
    first, later = _requests(faulty_http)[0], _requests(faulty_http)[1]
    assert first.if_match is None and later.if_match.startswith('"')
    # the ETag came with the first bytes; the only HEAD is unchanged()'s
    assert [r.method for r in faulty_http.log.requests] == ["GET", "GET", "HEAD"]


def test_http_reader_clips_with_the_size_of_the_first_response(faulty_http):
    (faulty_http.root / "v").write_bytes(OLD)
    store = FsspecStore(faulty_http.url)
    with store.reader("v") as reader:
        assert reader.read([RangeRequest(10, 5), RangeRequest(500, 5), OffsetRequest(98)]) == [OLD[10:15], b"", OLD[98:]]
        assert reader.read([RangeRequest(95, 50), SuffixRequest(500), RangeRequest(100, 1)]) == [OLD[95:], OLD, b""]
        assert reader.unchanged()
    later = _requests(faulty_http)[3:]
    assert all(r.if_match for r in later)
    assert all(r.range.startswith("bytes=") and not r.range.startswith("bytes=-") for r in later)


def test_http_first_read_past_the_end_and_empty_values(faulty_http):
    (faulty_http.root / "empty").write_bytes(b"")
    (faulty_http.root / "v").write_bytes(OLD)
    store = FsspecStore(faulty_http.url)
    with store.reader("empty") as reader:
        assert reader.read([RangeRequest(0, 4), SuffixRequest(2)]) == [b"", b""]
        assert reader.exact
    with store.reader("v") as reader:
        assert reader.read([RangeRequest(200, 4)]) == [b""]
        assert reader.read([RangeRequest(0, 2)]) == [OLD[:2]]
    with store.reader("v") as reader:
        assert reader.read([RangeRequest(3, 0)]) == [b""]  # asks for nothing: existence still decided
        _replace(faulty_http.root / "v", NEW)
        with pytest.raises(ValueChangedError):
            reader.read([RangeRequest(0, 2)])


def test_http_missing_key_then_created(faulty_http):
    store = FsspecStore(faulty_http.url)
    with store.reader("later") as reader:
        assert reader.read([RangeRequest(0, 2)]) is None
        assert reader.unchanged()
        (faulty_http.root / "later").write_bytes(b"now")
        assert reader.read([RangeRequest(0, 2)]) is None
        assert not reader.unchanged()


def test_http_server_ignoring_if_match_is_caught_by_the_etag(faulty_http):
    faulty_http.if_match = False
    path = faulty_http.root / "shard"
    path.write_bytes(OLD)
    with FsspecStore(faulty_http.url).reader("shard") as reader:
        reader.read([SuffixRequest(8)])
        _replace(path, NEW)
        with pytest.raises(ValueChangedError):
            reader.read([RangeRequest(0, 8)])


def test_http_server_without_etags_gives_a_verifying_reader(faulty_http):
    faulty_http.etags = "none"
    path = faulty_http.root / "shard"
    path.write_bytes(OLD)
    with FsspecStore(faulty_http.url).reader("shard") as reader:
        assert reader.read([SuffixRequest(8)]) == [OLD[-8:]]
        assert reader.exact is False
        assert reader.unchanged()
        _replace(path, NEW)
        assert reader.read([RangeRequest(0, 8)]) == [NEW[:8]]  # no promise: but unchanged() tells
        assert reader.unchanged() is False


def test_http_first_read_from_several_versions_is_retried_then_refused(faulty_http):
    faulty_http.etags = "per-request"  # every answer looks like another version
    (faulty_http.root / "v").write_bytes(OLD)
    with FsspecStore(faulty_http.url).reader("v") as reader:
        with pytest.raises(ValueChangedError, match="kept changing"):
            reader.read([RangeRequest(0, 2), SuffixRequest(2)])
    assert faulty_http.log.count("GET") == 6  # three rounds of two ranges


# -- S3 ----------------------------------------------------------------------
@pytest.fixture
def s3_store(s3_bucket, s3_storage_options, s3_proxy):
    """(store through the logging proxy, store straight to moto, proxy)."""
    proxy, options = s3_proxy
    url = f"s3://{s3_bucket}/{uuid.uuid4().hex[:8]}"
    return FsspecStore(url, storage_options=options), FsspecStore(url, storage_options=s3_storage_options), proxy


def test_s3_value_replaced_between_reads_is_never_mixed(s3_store):
    store, direct, proxy = s3_store
    direct.set("shard", OLD)
    with store.reader("shard") as reader:
        assert reader.read([SuffixRequest(8), RangeRequest(0, 2)]) == [OLD[-8:], OLD[:2]]
        assert reader.read([RangeRequest(50, 4)]) == [OLD[50:54]]
        assert reader.unchanged()
        direct.set("shard", NEW)
        with pytest.raises(ValueChangedError) as info:
            reader.read([RangeRequest(0, 8)])
        assert "'shard'" in str(info.value) or "shard" in str(info.value)
        assert reader.exact and not reader.unchanged()
    gets = _requests(proxy)
    assert all(r.if_match is None for r in gets[:2]) and all(r.if_match for r in gets[2:])
    heads = _requests(proxy, "HEAD")
    assert len(heads) == 2  # only the two unchanged() checks


def test_s3_reader_missing_past_the_end_and_deleted(s3_store):
    store, direct, proxy = s3_store
    with store.reader("missing") as reader:
        assert reader.read([RangeRequest(0, 2)]) is None
        assert reader.unchanged()
    direct.set("v", OLD)
    with store.reader("v") as reader:
        assert reader.read([RangeRequest(500, 2), SuffixRequest(3)]) == [b"", OLD[-3:]]
        assert reader.read([RangeRequest(99, 5)]) == [OLD[99:]]
        direct.delete("v")
        with pytest.raises(ValueChangedError):
            reader.read([RangeRequest(0, 2)])
        assert not reader.unchanged()
