"""Uncompressed chunks read straight into the output (``LocalStore.read_into``,
the ``in_place_reads`` capability; ``files.preadv_rows``): every layout gives
what numpy gives, and everything else falls back to the usual read — with its
errors. Small windows of uncompressed chunks read only their span (the
``bytes`` codec's partial reads, ``codecs.elements``)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import zarrdask
from zarrdask.errors import CorruptChunkError
from zarrdask.storage import LocalStore
from zarrdask.storage.files import IOV_MAX, preadv_rows
from zarrdask.storage.local import _FileReader


@pytest.fixture
def file_of(tmp_path):
    def make(data: bytes) -> int:
        path = tmp_path / f"f{len(data)}"
        path.write_bytes(data)
        fd = os.open(path, os.O_RDONLY)
        opened.append(fd)
        return fd

    opened: list[int] = []
    yield make
    for fd in opened:
        os.close(fd)


@pytest.mark.parametrize(
    "shape, region",
    [
        ((40, 50), (slice(3, 23), slice(7, 37))),  # rows of a 2-d output
        ((6, 40, 50), (slice(1, 4), slice(0, 40), slice(0, 50))),  # whole planes: merged into one row each
        ((6, 40, 50), (slice(1, 4), slice(5, 25), slice(10, 20))),  # 3-d, rows
        ((3000, 4), (slice(0, 2500), slice(1, 3))),  # more rows than one preadv takes
        ((10,), (slice(2, 9),)),  # contiguous: one read
    ],
)
def test_rows_are_filled_in_c_order(file_of, shape, region):
    out = np.zeros(shape, dtype="<i4")
    view = out[region]
    values = np.arange(view.size, dtype="<i4").reshape(view.shape)
    assert preadv_rows(file_of(values.tobytes() + b"trailing"), view)
    np.testing.assert_array_equal(view, values)
    outside = np.ones(shape, dtype=bool)
    outside[region] = False
    assert (out[outside] == 0).all()  # nothing written outside the view
    if shape == (3000, 4):
        assert view.shape[0] > IOV_MAX


def test_layouts_it_cannot_fill_are_refused(file_of):
    fd = file_of(bytes(4000))
    out = np.zeros((20, 20), dtype="i4")
    assert not preadv_rows(fd, out.T[2:10, 2:10])  # columns are not contiguous
    assert not preadv_rows(fd, out[::-1][2:10])  # rows backwards
    overlapping = np.lib.stride_tricks.as_strided(out, shape=(3, 3, 4), strides=(80, 80, 4))
    assert not preadv_rows(fd, overlapping)  # two indices, one address
    assert not preadv_rows(fd, out.reshape(4, 5, 20).transpose(1, 0, 2)[:, :, 2:6])  # leading axes swapped
    ro = np.zeros(10, dtype="i4")
    ro.flags.writeable = False
    assert not preadv_rows(fd, ro)
    assert not preadv_rows(file_of(bytes(10)), np.zeros((4, 4), "i4")[1:3, 1:3])  # short file


def test_the_store_reads_into_a_view_only_what_has_its_size(tmp_path):
    store = LocalStore(tmp_path)
    store.set("k", np.arange(12, dtype="i4").tobytes())
    out = np.zeros((5, 6), dtype="i4")
    assert store.read_into("k", out[1:4, 1:5]) is True
    np.testing.assert_array_equal(out[1:4, 1:5], np.arange(12).reshape(3, 4))
    assert store.read_into("missing", out[1:4, 1:5]) is False
    assert store.read_into("k", out[1:3, 1:5]) is None  # 48 bytes stored, 32 wanted

    class Counting(LocalStore):
        def get_many(self, keys):
            return super().get_many(keys)

    assert Counting(tmp_path).read_into("k", out[1:4, 1:5]) is None  # reads go through its get_many


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("dtype", ["u1", "<i2", "<f4", "<f8", "c8", "bool", "M8[s]"])
def test_uncompressed_arrays_read_like_numpy(tmp_path, zarr_format, dtype):
    rng = np.random.default_rng(3)
    data = (rng.random((37, 23, 11)) * 100).astype(dtype)
    a = zarrdask.create_array(str(tmp_path / "a.zarr"), shape=data.shape, dtype=dtype, chunks=(8, 10, 11),
                              compressors=None, zarr_format=zarr_format, fill_value=0)
    a[...] = data
    a[:8, :10] = 0  # an all-fill chunk: not stored
    data[:8, :10] = 0
    np.testing.assert_array_equal(a[...], data)
    np.testing.assert_array_equal(a[3:30, 2:21, 1:9], data[3:30, 2:21, 1:9])
    out = np.empty(data.shape, dtype=dtype, order="F")  # not row-major: the usual path
    np.testing.assert_array_equal(a.get_basic_selection(..., out=out), data)


def test_whole_uncompressed_chunks_take_the_direct_read(tmp_path, monkeypatch):
    a = zarrdask.create_array(str(tmp_path / "a.zarr"), shape=(20, 30), dtype="<f4", chunks=(8, 10),
                              compressors=None)
    data = np.arange(600, dtype="<f4").reshape(20, 30)
    a[...] = data
    done = []
    real = LocalStore.read_into

    def spy(self, key, view):
        done.append((key, real(self, key, view)))
        return done[-1][1]

    monkeypatch.setattr(LocalStore, "read_into", spy)
    np.testing.assert_array_equal(a[...], data)
    # the 6 chunks inside the array are read straight into place; the 3 edge
    # chunks (rows 16-19 of 8) are decoded as usual
    assert sorted(k for k, got in done if got) == [f"c/{i}/{j}" for i in (0, 1) for j in (0, 1, 2)]


@pytest.mark.parametrize("kind", ["big-endian", "v2 F order", "transpose"])
def test_chunks_stored_otherwise_are_decoded(tmp_path, kind):
    data = np.arange(30 * 20, dtype="<i4").reshape(30, 20)
    kwargs: dict = {"compressors": None, "fill_value": 0}
    if kind == "big-endian":
        kwargs["serializer"] = {"name": "bytes", "configuration": {"endian": "big"}}
    elif kind == "v2 F order":
        kwargs.update(zarr_format=2, order="F")
    else:
        kwargs["filters"] = [{"name": "transpose", "configuration": {"order": [1, 0]}}]
    a = zarrdask.create_array(str(tmp_path / "a.zarr"), shape=data.shape, dtype="<i4", chunks=(8, 8), **kwargs)
    a[...] = data
    np.testing.assert_array_equal(a[...], data)


def test_a_truncated_chunk_is_still_an_error_naming_it(tmp_path):
    a = zarrdask.create_array(str(tmp_path / "a.zarr"), shape=(16, 16), dtype="<f4", chunks=(8, 8),
                              compressors=None)
    a[...] = 1
    path = tmp_path / "a.zarr" / "c" / "1" / "0"
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(CorruptChunkError, match=r"c/1/0.*256.*100|c/1/0.*100"):
        a[...]


# -- small selections of uncompressed chunks: only their span is read ---------------------
@pytest.mark.parametrize("endian", ["little", "big"])
@pytest.mark.parametrize("zarr_format", [2, 3])
def test_small_windows_read_only_their_span_and_equal_numpy(tmp_path, monkeypatch, endian, zarr_format):
    rng = np.random.default_rng(5)
    data = rng.random((70, 64, 30)).astype("<f8")
    kwargs: dict = {"compressors": None, "fill_value": 0.5, "zarr_format": zarr_format}
    if endian == "big":
        if zarr_format == 3:
            kwargs["serializer"] = {"name": "bytes", "configuration": {"endian": "big"}}
        dtype = ">f8" if zarr_format == 2 else "<f8"
    else:
        dtype = "<f8"
    a = zarrdask.create_array(str(tmp_path / "a.zarr"), shape=data.shape, dtype=dtype, chunks=(32, 32, 30), **kwargs)
    a[...] = data
    a[:32, 32:] = 0.5  # a missing chunk
    data[:32, 32:] = 0.5
    spans = []
    real = _FileReader._read_first

    def spy(self, ranges):
        got = real(self, ranges)
        if len(ranges) == 2:  # the span and the value's last byte
            span, tail = ranges
            ok = got is not None and len(got[1]) == 1
            spans.append((self.key, span.length, tail.offset + 1, ok))
        return got

    monkeypatch.setattr(_FileReader, "_read_first", spy)
    selections = [
        (slice(3, 13), slice(5, 15), slice(2, 12)),
        (5, slice(7, 9), 3),  # integers drop dimensions
        (slice(1, 20, 3), slice(30, 34), slice(None, None, 7)),  # steps, across two chunks
        (slice(60, 70), slice(60, 64), slice(0, 5)),  # edge chunks of a non-multiple shape
        (slice(10, 12), slice(40, 44), slice(0, 30)),  # the missing chunk: fill
        (slice(31, 33), slice(31, 33), slice(29, 30)),  # four chunks, one element row each
    ]
    for sel in selections:
        got = a[sel]
        np.testing.assert_array_equal(got, data[sel])
        assert got.dtype == a.dtype
    chunk_bytes = 32 * 32 * 30 * 8
    read = [length for _, length, size, ok in spans if ok]
    assert read and all(length <= chunk_bytes // 2 for length in read)
    # a 10x10x10 window of a (32, 32, 30) chunk: rows 5..14 of planes 3..12
    assert spans[0][1] == ((12 - 3) * 32 * 30 + (14 - 5) * 30 + 11 - 2 + 1) * 8


def test_a_small_window_of_a_truncated_chunk_is_still_an_error(tmp_path):
    a = zarrdask.create_array(str(tmp_path / "a.zarr"), shape=(64, 64), dtype="<f4", chunks=(64, 64),
                              compressors=None)
    a[...] = 1
    path = tmp_path / "a.zarr" / "c" / "0" / "0"
    path.write_bytes(path.read_bytes() + b"extra")  # too long: a span read would not notice
    with pytest.raises(CorruptChunkError, match="c/0/0"):
        a[2:4, 2:4]
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(CorruptChunkError, match="c/0/0"):
        a[30:32, 30:32]


def test_a_span_is_read_only_of_a_value_of_the_size_given(tmp_path):
    """The bytes codec's partial read: the span and the value's last byte in
    one request; a value of another size is read whole and refused; a missing
    one reads as missing."""
    from zarrdask.codecs.abc import ChunkSpec
    from zarrdask.codecs.bytes_codec import BytesCodec
    from zarrdask.indexing import Indexer
    from zarrdask.storage import CountingStore

    store = CountingStore(LocalStore(tmp_path))
    store.set("k", bytes(range(100)))
    codec = BytesCodec(endian=None)
    spec = ChunkSpec((100,), np.dtype("u1"), 0)

    def window(start, stop, key="k", size=100):
        proj = next(iter(Indexer((slice(start, stop),), (size,), (size,))))
        with store.reader(key) as reader:
            return codec.decode_partial(reader, spec.with_shape((size,)), proj, key)

    store.reset()
    assert bytes(window(10, 15)) == bytes(range(10, 15))
    assert store.counts["get_ranges_calls"] == 1 and store.counts["bytes_read"] == 5 + 1
    with pytest.raises(CorruptChunkError, match="'k'"):
        window(10, 15, size=99)  # 100 bytes stored, 99 expected
    assert window(0, 1, key="missing", size=1) is None


# -- small selections of blosc chunks: only the blocks of their span are decoded ------------
from zarrdask.codecs import blosc_codec  # noqa: E402


def _blosc_array(path, data, zarr_format, shuffle="shuffle", cname="lz4", blocksize=0):
    if zarr_format == 3:
        comp = [{"name": "blosc", "configuration": {"cname": cname, "clevel": 5, "shuffle": shuffle,
                                                    "typesize": data.dtype.itemsize, "blocksize": blocksize}}]
    else:
        comp = {"id": "blosc", "cname": cname, "clevel": 5,
                "shuffle": {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}[shuffle], "blocksize": blocksize}
    a = zarrdask.create_array(str(path), shape=data.shape, dtype=data.dtype, chunks=(64, 128),
                              compressors=comp, zarr_format=zarr_format, fill_value=0)
    a[...] = data
    return a


@pytest.mark.parametrize("zarr_format", [2, 3])
@pytest.mark.parametrize("shuffle", ["noshuffle", "shuffle", "bitshuffle"])
@pytest.mark.parametrize("dtype", ["<f4", "<i8", "u1", "<c16"])
def test_small_blosc_windows_decode_only_their_span(tmp_path, monkeypatch, zarr_format, shuffle, dtype):
    rng = np.random.default_rng(7)
    data = (rng.random((150, 300)) * 50).astype(dtype)
    data[:64, :128] = 0  # an all-fill chunk
    a = _blosc_array(tmp_path / "a.zarr", data, zarr_format, shuffle, blocksize=4096)
    decoded = []
    real = blosc_codec.decode_blosc_range

    def spy(data, start, length, bound):
        got = real(data, start, length, bound)
        decoded.append(got is not None)
        return got

    monkeypatch.setattr(blosc_codec, "decode_blosc_range", spy)
    for sel in [(slice(70, 80), slice(130, 140)), (100, slice(5, 50, 4)), (slice(60, 70), slice(120, 136)),
                (slice(140, 150), slice(290, 300)), (slice(3, 9), slice(3, 9))]:
        np.testing.assert_array_equal(a[sel], data[sel])
    assert decoded and all(decoded)


def test_incompressible_blosc_chunks_and_big_windows_read_right(tmp_path):
    data = np.random.default_rng(8).integers(0, 2**63, size=(128, 256), dtype="<i8")  # stored as copied
    a = _blosc_array(tmp_path / "a.zarr", data, 3)
    np.testing.assert_array_equal(a[10:20, 3:9], data[10:20, 3:9])
    np.testing.assert_array_equal(a[0:60, 0:128], data[0:60, 0:128])  # most of a chunk: decoded whole


def test_a_small_window_of_a_corrupt_blosc_chunk_names_it(tmp_path):
    data = np.arange(128 * 256, dtype="<f4").reshape(128, 256)
    a = _blosc_array(tmp_path / "a.zarr", data, 3)
    path = tmp_path / "a.zarr" / "c" / "1" / "1"
    raw = bytearray(path.read_bytes())
    path.write_bytes(bytes(raw[:-10]))  # truncated: the header's size no longer matches
    with pytest.raises(CorruptChunkError, match="c/1/1"):
        a[70:72, 130:132]
    raw[16:] = bytes(len(raw) - 16)  # block offsets and data zeroed: Blosc refuses, the whole decode reports it
    path.write_bytes(bytes(raw))
    with pytest.raises(CorruptChunkError, match="c/1/1"):
        a[70:72, 130:132]


def test_windows_from_many_threads_at_once(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(9)
    data = (rng.random((512, 512)) * 100).astype("<f4")
    a = _blosc_array(tmp_path / "a.zarr", data, 3, blocksize=8192)
    pos = rng.integers(0, 500, size=(400, 2))

    def window(p):
        i, j = p
        return np.array_equal(a[i : i + 10, j : j + 10], data[i : i + 10, j : j + 10])

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(window, pos))


@pytest.mark.parametrize("inner", ["local", "memory"])
def test_a_window_through_any_store_with_partial_reads_reads_only_its_span(tmp_path, inner):
    """Through a wrapper (here one that counts) or a memory store, the span is
    read with one get_ranges call: the span and the value's last byte."""
    from zarrdask.storage import CountingStore, MemoryStore

    data = np.arange(1024 * 1024, dtype="<f4").reshape(1024, 1024)
    base = LocalStore(tmp_path) if inner == "local" else MemoryStore()
    zarrdask.create_array(base, shape=data.shape, dtype="<f4", chunks=(512, 512), compressors=None)[...] = data
    store = CountingStore(base)
    a = zarrdask.open_array(store, mode="r")
    for sel in [(slice(100, 110), slice(200, 210)), (slice(502, 512), slice(502, 512)), (3, slice(0, 10))]:
        store.reset()
        np.testing.assert_array_equal(a[sel], data[sel])
        assert store.counts["bytes_read"] <= 20 * 1024, store.counts
        assert store.counts["get_ranges_calls"] == 1 and store.counts["get_many_calls"] == 0
    store.reset()
    np.testing.assert_array_equal(a[0:300, 0:10], data[0:300, 0:10])  # over half the chunk: read whole
    assert store.counts["get_ranges_calls"] == 0 and store.counts["bytes_read"] == 512 * 512 * 4
    base.set("c/1/1", base.get("c/1/1")[:-4])  # a chunk 4 bytes short: the whole read reports it
    with pytest.raises(CorruptChunkError, match="c/1/1"):
        a[600:602, 600:602]
