"""zarr-python 3 stores (and other mappings) as zarrdask stores.

The store conformance suite over the adapter (zarr-python's MemoryStore,
LocalStore and an FsspecStore on a local moto S3 server) and over a plain
MutableMapping; interoperability both ways through the adapter; zarr-python
Array / Group objects given to zarrdask's API; batching (concurrent gets);
read-only stores; pickling; calls from threads running an event loop.
"""

from __future__ import annotations

import asyncio
import os
import pickle
import subprocess
import sys
from collections.abc import MutableMapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

zarr = pytest.importorskip("zarr")

from zarr.core.buffer import cpu  # noqa: E402
from zarr.core.sync import sync  # noqa: E402
from zarr.storage import FsspecStore as ZarrFsspecStore  # noqa: E402
from zarr.storage import LocalStore as ZarrLocalStore  # noqa: E402
from zarr.storage import MemoryStore as ZarrMemoryStore  # noqa: E402
from zarr.storage import WrapperStore  # noqa: E402

import zarrdask  # noqa: E402
from zarrdask.errors import ReadOnlyError, StoreError  # noqa: E402
from zarrdask.storage import (  # noqa: E402
    MemoryStore,
    OffsetRequest,
    RangeRequest,
    SuffixRequest,
    ZarrPythonStore,
    store_from,
)
from zarrdask.testing.store import StoreConformanceTests  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")


def _buffers(data: dict[str, bytes]) -> dict[str, cpu.Buffer]:
    return {key: cpu.Buffer.from_bytes(value) for key, value in data.items()}


def _fill(zstore, data: dict[str, bytes]) -> None:
    async def put():
        await asyncio.gather(*(zstore.set(k, v) for k, v in _buffers(data).items()))

    sync(put())


class DictMapping(MutableMapping):
    """A MutableMapping that is not a dict (as a zarr-python 2 store is)."""

    def __init__(self, data=None):
        self._d = dict(data or {})

    def __getitem__(self, key):
        return self._d[key]

    def __setitem__(self, key, value):
        self._d[key] = value

    def __delitem__(self, key):
        del self._d[key]

    def __iter__(self):
        return iter(self._d)

    def __len__(self):
        return len(self._d)


class InFlight(WrapperStore):
    """Counts the gets in flight at once; each takes a moment."""

    def __init__(self, store):
        super().__init__(store)
        self.now = 0
        self.peak = 0

    async def get(self, key, prototype, byte_range=None):
        self.now += 1
        self.peak = max(self.peak, self.now)
        try:
            await asyncio.sleep(0.005)
            return await self._store.get(key, prototype, byte_range)
        finally:
            self.now -= 1


class NoConsolidated(WrapperStore):
    """A store with its own consolidation mechanism (as icechunk's is)."""

    supports_consolidated_metadata = False


class RefusesPastEnd(WrapperStore):
    """Raises for byte ranges starting at or past the end (as some object stores do)."""

    async def get(self, key, prototype, byte_range=None):
        value = await self._store.get(key, prototype)
        if value is None or byte_range is None:
            return value
        start = getattr(byte_range, "start", getattr(byte_range, "offset", None))
        if start is not None and start >= len(value):
            raise OSError(f"range not satisfiable for {key}")
        return await self._store.get(key, prototype, byte_range)


# -- conformance ---------------------------------------------------------------------
class TestZarrPythonMemoryStore(StoreConformanceTests):
    @pytest.fixture
    def store(self):
        return ZarrPythonStore(ZarrMemoryStore())

    @pytest.fixture
    def same_data_store(self, store):
        return ZarrPythonStore(ZarrMemoryStore(store.zarr_store._store_dict))

    @pytest.fixture
    def readonly_store_factory(self):
        return lambda data: ZarrPythonStore(ZarrMemoryStore(_buffers(data), read_only=True))


class TestZarrPythonLocalStore(StoreConformanceTests):
    @pytest.fixture
    def store(self, tmp_path):
        return ZarrPythonStore(ZarrLocalStore(tmp_path / "root"))

    @pytest.fixture
    def same_data_store(self, tmp_path):
        return ZarrPythonStore(ZarrLocalStore(tmp_path / "root"))

    @pytest.fixture
    def readonly_store_factory(self, tmp_path):
        def make(data):
            _fill(ZarrLocalStore(tmp_path / "ro"), data)
            return store_from(ZarrLocalStore(tmp_path / "ro"), mode="r")

        return make


@pytest.mark.network
class TestZarrPythonFsspecS3Store(StoreConformanceTests):
    """zarr-python's FsspecStore (s3fs) against a moto S3 server on 127.0.0.1."""

    @pytest.fixture
    def store(self, s3_bucket, s3_storage_options):
        return ZarrPythonStore(
            ZarrFsspecStore.from_url(f"s3://{s3_bucket}/root", storage_options=s3_storage_options)
        )

    @pytest.fixture
    def readonly_store_factory(self, s3_bucket, s3_storage_options):
        def make(data):
            url = f"s3://{s3_bucket}/ro"
            _fill(ZarrFsspecStore.from_url(url, storage_options=s3_storage_options), data)
            return ZarrPythonStore(
                ZarrFsspecStore.from_url(url, storage_options=s3_storage_options, read_only=True)
            )

        return make

    def test_threads(self, store):
        # the suite's version (80 round trips) costs seconds against moto; threads
        # sharing zarr-python's loop and one s3fs client need only a few
        def work(i: int) -> bytes | None:
            store.set(f"t/{i}", bytes([i]))
            return store.get(f"t/{i}")

        with ThreadPoolExecutor(4) as pool:
            assert list(pool.map(work, range(8))) == [bytes([i]) for i in range(8)]


class TestMutableMappingStore(StoreConformanceTests):
    """MemoryStore over a MutableMapping that is not a dict."""

    @pytest.fixture
    def store(self):
        store = store_from(DictMapping(), mode="a")
        assert isinstance(store, MemoryStore)
        return store

    @pytest.fixture
    def readonly_store_factory(self):
        return lambda data: store_from(DictMapping(data), mode="r")


# -- store_from and flags ---------------------------------------------------------------
def test_store_from_recognises_zarr_python_stores():
    zstore = ZarrMemoryStore()
    adapted = store_from(zstore, mode="a")
    assert isinstance(adapted, ZarrPythonStore) and adapted.zarr_store is zstore
    assert adapted.writable and adapted.listable and adapted.supports_partial_reads
    with pytest.raises(ValueError, match="storage_options"):
        store_from(zstore, storage_options={"anon": True})
    with pytest.raises(TypeError, match="zarr-python store"):
        ZarrPythonStore({})


def test_mode_r_is_a_read_only_view():
    zstore = ZarrMemoryStore()
    view = store_from(zstore, mode="r")
    assert not view.writable
    assert view.zarr_store.read_only and not zstore.read_only  # with_read_only(True), not a change
    with pytest.raises(ReadOnlyError, match="'k'"):
        view.set("k", b"v")
    assert store_from(zstore, mode="a").with_read_only().zarr_store.read_only


def test_read_only_zarr_store_is_read_only_in_zarrdask():
    source = ZarrMemoryStore()
    a = zarr.create_array(source, name="x", shape=(4,), chunks=(2,), dtype="i4")
    a[:] = np.arange(4)
    ro = source.with_read_only(True)
    adapted = store_from(ro, mode="a")
    assert not adapted.writable
    for write in (lambda: adapted.set("x/c/0", b""), lambda: adapted.delete("x/zarr.json"),
                  lambda: adapted.set_many({"k": b"v"}), lambda: adapted.delete_prefix("x/")):
        with pytest.raises(ReadOnlyError):
            write()
    array = zarrdask.open_array(zarr.open_array(ro, path="x", mode="r"))
    np.testing.assert_array_equal(array[:], np.arange(4))
    with pytest.raises(ReadOnlyError):
        array[:] = 0
    np.testing.assert_array_equal(a[:], np.arange(4))


def test_supports_consolidated_metadata_comes_from_the_zarr_store():
    assert ZarrPythonStore(ZarrMemoryStore()).supports_consolidated_metadata is True
    custom = ZarrPythonStore(NoConsolidated(ZarrMemoryStore()))
    assert custom.supports_consolidated_metadata is False
    assert custom.with_read_only().supports_consolidated_metadata is False


# -- batching ---------------------------------------------------------------------------
def test_get_many_and_get_ranges_fetch_concurrently():
    inner = ZarrMemoryStore()
    counting = InFlight(inner)
    store = ZarrPythonStore(counting)
    store.set_many({f"c/{i}": bytes([i]) * 8 for i in range(16)})
    keys = [f"c/{i}" for i in range(16)] + ["c/missing"]
    assert store.get_many(keys) == [bytes([i]) * 8 for i in range(16)] + [None]
    assert counting.peak > 1
    counting.peak = 0
    got = store.get_ranges("c/3", [RangeRequest(0, 2), OffsetRequest(6), SuffixRequest(1), RangeRequest(4, 0)])
    assert got == [b"\x03\x03", b"\x03\x03", b"\x03", b""]
    assert counting.peak > 1


def test_in_flight_requests_are_bounded():
    counting = InFlight(ZarrMemoryStore())
    store = ZarrPythonStore(counting, concurrency=3)
    store.set_many({f"k{i}": b"v" for i in range(12)})
    assert store.get_many([f"k{i}" for i in range(12)]) == [b"v"] * 12
    assert 1 < counting.peak <= 3
    with pytest.raises(ValueError, match="concurrency"):
        ZarrPythonStore(ZarrMemoryStore(), concurrency=0)


def test_suffix_longer_than_the_value_is_the_whole_value():
    # zarr-python's MemoryStore returns the wrong bytes for a suffix between one
    # and two times the value's length; the adapter answers the contract
    store = ZarrPythonStore(ZarrMemoryStore())
    value = bytes(range(100))
    store.set("v", value)
    assert store.get_ranges("v", [SuffixRequest(150), SuffixRequest(100), SuffixRequest(30)]) == [
        value, value, value[-30:]
    ]


def test_ranges_the_store_refuses_are_clipped():
    store = ZarrPythonStore(RefusesPastEnd(ZarrMemoryStore()))
    value = bytes(range(10))
    store.set("v", value)
    got = store.get_ranges("v", [RangeRequest(8, 5), RangeRequest(20, 5), OffsetRequest(10), OffsetRequest(3)])
    assert got == [value[8:], b"", b"", value[3:]]
    assert store.get_ranges("missing", [RangeRequest(20, 5)]) is None


def test_errors_name_the_key():
    class Broken(WrapperStore):
        async def get(self, key, prototype, byte_range=None):
            if key == "bad":
                raise PermissionError("access denied")
            return await self._store.get(key, prototype, byte_range)

    store = ZarrPythonStore(Broken(ZarrMemoryStore()))
    store.set("good", b"1")
    with pytest.raises(StoreError, match="'bad'.*PermissionError: access denied"):
        store.get_many(["good", "bad"])
    with pytest.raises(TypeError, match="'good'"):
        store.get_ranges("good", [(0, 1)])


# -- event loops --------------------------------------------------------------------
def test_works_from_a_thread_running_an_event_loop():
    store = ZarrPythonStore(ZarrMemoryStore())

    async def notebook_cell():  # as in Jupyter or pytest-asyncio: a loop runs in this thread
        store.set_many({"a": b"1", "b": b"2"})
        return store.get_many(["a", "b", "c"]), sorted(store.list())

    assert asyncio.run(notebook_cell()) == ([b"1", b"2", None], ["a", "b"])


def test_called_on_zarr_pythons_own_loop_is_a_clear_error():
    store = ZarrPythonStore(ZarrMemoryStore())

    async def on_the_io_loop():
        return store.get("a")

    with pytest.raises(StoreError, match="event loop thread"):
        sync(on_the_io_loop())


# -- pickling ---------------------------------------------------------------------------
def test_pickle_round_trip(tmp_path):
    zstore = ZarrLocalStore(tmp_path / "data")
    a = zarr.create_array(zstore, name="x", shape=(6,), chunks=(4,), dtype="f8")
    a[:] = np.arange(6.0)
    store = ZarrPythonStore(zstore, concurrency=4)
    clone = pickle.loads(pickle.dumps(store))
    assert isinstance(clone.zarr_store, ZarrLocalStore) and clone.zarr_store.root == zstore.root
    assert (clone.writable, clone.concurrency) == (True, 4)
    assert clone.get("x/c/0") == store.get("x/c/0")
    array = pickle.loads(pickle.dumps(zarrdask.open_array(a)))
    np.testing.assert_array_equal(array[:], np.arange(6.0))


# -- interoperability through the adapter ---------------------------------------------
CASES = {
    "v3": dict(zarr_format=3, chunks=(3, 4)),
    "v3-sharded": dict(zarr_format=3, chunks=(2, 2), shards=(4, 4)),
    "v2": dict(zarr_format=2, chunks=(3, 4)),
}


@pytest.fixture(params=["memory", "local"])
def zstore(request, tmp_path):
    return ZarrMemoryStore() if request.param == "memory" else ZarrLocalStore(tmp_path / "z")


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_zarr_python_writes_zarrdask_reads(zstore, case):
    data = np.arange(7 * 9, dtype="i4").reshape(7, 9)
    root = zarr.open_group(zstore, mode="w", zarr_format=CASES[case]["zarr_format"], attributes={"k": 1})
    a = root.create_array("sub/x", shape=data.shape, dtype=data.dtype, fill_value=-1, **_kw(case))
    a[:5] = data[:5]
    expected = data.copy()
    expected[5:] = -1
    group = zarrdask.open_group(zstore, mode="r")
    assert group.attrs["k"] == 1
    np.testing.assert_array_equal(group["sub/x"][...], expected)
    np.testing.assert_array_equal(zarrdask.open_array(zstore, path="sub/x", mode="r")[1:6, 2:7], expected[1:6, 2:7])


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_zarrdask_writes_zarr_python_reads(zstore, case):
    data = np.linspace(0, 1, 7 * 9).reshape(7, 9)
    root = zarrdask.open_group(zstore, mode="w", zarr_format=CASES[case]["zarr_format"])
    root.attrs["title"] = "t"
    array = zarrdask.create_array(zstore, name="y", shape=data.shape, dtype=data.dtype, zarr_format=CASES[case]["zarr_format"], **_kw(case))
    array[:] = data
    array[2:4, 1:3] = 0.5
    data[2:4, 1:3] = 0.5
    got = zarr.open_group(zstore, mode="r")
    assert got.attrs["title"] == "t"
    np.testing.assert_array_equal(got["y"][...], data)


def _kw(case):
    return {k: v for k, v in CASES[case].items() if k != "zarr_format"}


def test_zarr_python_objects_as_the_store_argument():
    zstore = ZarrMemoryStore()
    zgroup = zarr.open_group(zstore, mode="w", attributes={"a": 1})
    sub = zgroup.create_group("sub")
    zarray = sub.create_array("x", shape=(6, 4), chunks=(2, 4), shards=(4, 4), dtype="u2")
    zarray[:] = np.arange(24, dtype="u2").reshape(6, 4)

    array = zarrdask.open_array(zarray)
    assert array.path == "sub/x"
    np.testing.assert_array_equal(array[...], zarray[...])
    assert zarrdask.open(zarray).path == "sub/x"
    assert zarrdask.open_group(zgroup).attrs["a"] == 1
    assert [name for name, _ in zarrdask.open_group(zgroup, path="sub").members()] == ["x"]
    np.testing.assert_array_equal(zarrdask.open_array(zgroup, path="sub/x", mode="r")[...], zarray[...])

    zarrdask.create_array(sub, name="y", shape=(3,), dtype="i8", data=[1, 2, 3])
    np.testing.assert_array_equal(sub["y"][...], [1, 2, 3])
    zarrdask.group(sub, path="inner", attributes={"b": 2})
    assert zarr.open_group(zstore, path="sub/inner", mode="r").attrs["b"] == 2
    from zarr.storage import StorePath

    np.testing.assert_array_equal(zarrdask.open_array(StorePath(zstore, "sub/y"))[...], [1, 2, 3])


def test_from_zarr_and_to_zarr_with_zarr_python_objects():
    da = pytest.importorskip("dask.array")
    zstore = ZarrMemoryStore()
    zgroup = zarr.open_group(zstore, mode="w")
    zarray = zgroup.create_array("x", shape=(8, 6), chunks=(4, 3), dtype="f4")
    zarray[:] = np.arange(48, dtype="f4").reshape(8, 6)

    lazy = zarrdask.from_zarr(zarray)
    assert lazy.chunks == ((4, 4), (3, 3))
    np.testing.assert_array_equal(lazy.compute(), zarray[...])
    np.testing.assert_array_equal(zarrdask.from_zarr(zgroup, path="x").compute(), zarray[...])

    zarrdask.to_zarr(lazy * 2, zgroup, path="doubled")
    np.testing.assert_array_equal(zgroup["doubled"][...], zarray[...] * 2)
    zarrdask.to_zarr(da.zeros((8, 6), chunks=(4, 3), dtype="f4"), zarray, mode="r+")
    assert not zarray[...].any()
    zarrdask.to_zarr(da.ones((8, 6), chunks=(4, 3), dtype="f4"), zarray)  # by default as with mode "r+"
    assert zarray[...].all()
    with pytest.raises(ValueError, match="mode 'a' or 'r\\+'"):
        zarrdask.to_zarr(lazy, zarray, mode="w")


def test_consolidated_zarr_python_group():
    zstore = ZarrMemoryStore()
    g = zarr.open_group(zstore, mode="w", zarr_format=2)
    g.create_array("a", shape=(2,), dtype="i1")
    zarr.consolidate_metadata(zstore)
    group = zarrdask.open_group(zstore, mode="r", consolidated=True)
    assert [name for name, _ in group.members()] == ["a"]


def test_mapping_store_round_trip():
    mapping = DictMapping()
    array = zarrdask.create_array(mapping, name="x", shape=(5,), chunks=(2,), dtype="i2", zarr_format=2)
    array[:] = np.arange(5)
    assert set(mapping) >= {"x/.zarray", "x/0", "x/1", "x/2"}
    np.testing.assert_array_equal(zarrdask.open_array(mapping, path="x", mode="r")[...], np.arange(5))


def test_zarrdask_does_not_import_zarr():
    code = (
        "import sys, zarrdask\n"
        "zarrdask.store_from({}); zarrdask.open_group(zarrdask.MemoryStore())\n"
        "assert 'zarr' not in sys.modules, 'zarr was imported'\n"
    )
    src = str(Path(zarrdask.__file__).parents[1])  # this checkout's zarrdask
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)

