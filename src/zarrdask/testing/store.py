"""A conformance suite for :class:`~zarrdask.storage.abc.Store` implementations.

Subclass :class:`StoreConformanceTests` in a test module (the subclass name
must start with ``Test``) and provide a ``store`` fixture returning a fresh,
empty, writable store; pytest then runs every test of the suite against it.
It checks the contract of ``zarrdask.storage.abc`` (zarr-specs v3 core,
"Abstract store interface"; Zarr v2 spec "Storage"): batched reads in order
with ``None`` for missing keys, byte-range requests with HTTP-style clipping
(``v3-codecs-sharding-indexed`` reads its index and chunks this way),
listing, deletion, read-only behaviour, key validation and pickling; and the
reliability contract: readers (``Store.reader``) that keep to the version of a
value their first read saw or say that it changed, and exclusive key locks
(``Store.locked``) for read-modify-write. Every optional capability the store
declares (``store.capabilities``: in-place reads, streaming, background
uploads, exact readers, cross-process locks; :mod:`zarrdask.storage.capabilities`)
is checked too (:mod:`zarrdask.testing.store_capabilities`); a store that
declares none needs only the required interface.

Optional hooks:

``readonly_store_factory`` fixture
    Returns a callable ``factory(data: dict[str, bytes]) -> Store`` that builds
    a *read-only* store holding ``data``. Enables the read-only tests; for a
    store that cannot be written at all (``store_is_writable = False``, e.g.
    HTTP) every read test uses it.
``store_is_writable`` (class attribute, default True)
    False for stores that cannot be written; the write tests are skipped.
``validates_keys`` (default True)
    Whether invalid keys (absolute, ``..``, empty segments, ...) must raise
    :class:`~zarrdask.errors.InvalidKeyError`.
``picklable`` (default True)
    Whether the store must survive a pickle round trip.
``same_data_store`` fixture
    Returns a second store object over the same data as ``store`` (e.g. a
    new ``LocalStore`` on the same root), or None (the default) to skip the
    check that locks are shared between store objects over the same data.

Example
-------
.. code-block:: python

    import pytest
    from zarrdask.storage import MemoryStore
    from zarrdask.testing.store import StoreConformanceTests

    class TestMyStore(StoreConformanceTests):
        @pytest.fixture
        def store(self):
            return MemoryStore()

        @pytest.fixture
        def readonly_store_factory(self):
            return lambda data: MemoryStore(dict(data), read_only=True)

For detailed assertion messages, call
``pytest.register_assert_rewrite("zarrdask.testing")`` in your ``conftest.py``
before this module is imported.
"""

from __future__ import annotations

import pickle
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import pytest

from ..errors import InvalidKeyError, ReadOnlyError, StoreError, ValueChangedError
from ..storage.abc import Store
from ..storage.byte_range import OffsetRequest, RangeRequest, SuffixRequest
from .store_capabilities import CapabilityConformanceTests

__all__ = ["StoreConformanceTests", "SAMPLE", "INVALID_KEYS"]

#: a small hierarchy exercising nested keys, dot-files and a prefix clash ("a" / "ab")
SAMPLE: dict[str, bytes] = {
    "zarr.json": b'{"node_type": "group"}',
    ".zgroup": b'{"zarr_format": 2}',
    "a/zarr.json": b"{}",
    "a/.zattrs": b'{"x": 1}',
    "a/b/c/0": b"\x00\x01\x02",
    "a/b/c/1": b"\xff" * 17,
    "a/b/d": b"d",
    "a/e": b"",
    "ab/x": b"ab",
    "f": b"0123456789",
}

#: keys every validating store must reject
INVALID_KEYS = [
    "",
    "/abs",
    "/",
    "a//b",
    "a/",
    "..",
    "../x",
    "a/../b",
    "./a",
    "a/.",
    "a\\b",
    "a\x00b",
    "C:/x",
]


def _b(value: object) -> bytes | None:
    return None if value is None else bytes(value)  # type: ignore[arg-type]


class StoreConformanceTests(CapabilityConformanceTests):
    """Tests every :class:`~zarrdask.storage.abc.Store` must pass.

    See the module documentation for the fixtures and flags a subclass sets.
    """

    store_is_writable: bool = True
    validates_keys: bool = True
    picklable: bool = True

    # -- fixtures a subclass provides --------------------------------------
    @pytest.fixture
    def store(self) -> Store:
        """A fresh, empty, writable store (override in the subclass)."""
        if not self.store_is_writable:
            pytest.skip(f"{type(self).__name__}: the store is not writable")
        pytest.fail(f"{type(self).__name__} must define a 'store' fixture returning a fresh empty store")

    @pytest.fixture
    def readonly_store_factory(self) -> Callable[[dict[str, bytes]], Store] | None:
        """``factory(data) -> read-only store holding data``; None if unsupported."""
        return None

    @pytest.fixture
    def same_data_store(self, store) -> Store | None:
        """Another store object over the same data as ``store``; None if unsupported."""
        return None

    @pytest.fixture
    def make_store(self, request, readonly_store_factory) -> Callable[[dict[str, bytes]], Store]:
        """A store holding given data: the writable store filled, or a read-only one."""

        def make(data: dict[str, bytes]) -> Store:
            if self.store_is_writable:
                store = request.getfixturevalue("store")
                for key, value in data.items():
                    store.set(key, value)
                return store
            if readonly_store_factory is None:
                pytest.skip(f"{type(self).__name__}: no writable store and no readonly_store_factory")
            return readonly_store_factory(data)

        return make

    # -- reads -------------------------------------------------------------
    def test_get(self, make_store):
        store = make_store(SAMPLE)
        for key, value in SAMPLE.items():
            assert _b(store.get(key)) == value, key

    def test_get_missing_is_none(self, make_store):
        store = make_store(SAMPLE)
        assert store.get("missing") is None
        assert store.get("a/b") is None  # a "directory" is not a key
        assert store.get("a/b/c/0/deeper") is None  # below a key
        assert store.get("zarr.json/x") is None

    def test_get_many_order_and_missing(self, make_store):
        store = make_store(SAMPLE)
        keys = ["f", "missing", "a/b/d", "a/e", "f", "nope/x", "zarr.json"]
        got = store.get_many(keys)
        assert isinstance(got, list)
        assert [_b(v) for v in got] == [SAMPLE.get(k) for k in keys]
        assert store.get_many([]) == []

    def test_binary_values(self, make_store):
        data = {
            "bin/all": bytes(range(256)) * 4,
            "bin/empty": b"",
            "bin/nul": b"\x00" * 1000,
            "bin/big": bytes((i * 7919) % 251 for i in range(300_000)),
        }
        store = make_store(data)
        assert [_b(v) for v in store.get_many(list(data))] == list(data.values())
        for key, value in data.items():
            assert store.getsize(key) == len(value), key
            assert store.exists(key), key
        assert store.get("bin/empty") == b""  # empty is not missing

    def test_exists_and_getsize(self, make_store):
        store = make_store(SAMPLE)
        assert store.exists("f")
        assert store.getsize("f") == 10
        assert store.getsize("a/e") == 0
        assert not store.exists("missing")
        assert store.getsize("missing") is None
        assert not store.exists("a/b")  # a prefix is not a key
        assert store.getsize("a/b") is None

    def test_get_ranges(self, make_store):
        value = bytes(range(100))
        store = make_store({"r/v": value})
        requests = [
            RangeRequest(0, 10),
            RangeRequest(95, 10),  # clipped at the end
            RangeRequest(200, 5),  # entirely past the end
            RangeRequest(10, 0),
            OffsetRequest(90),
            OffsetRequest(0),
            OffsetRequest(100),
            OffsetRequest(1000),
            SuffixRequest(5),
            SuffixRequest(1000),  # longer than the value: all of it
            SuffixRequest(0),
            RangeRequest(0, 10),  # repeated
        ]
        expected = [
            value[0:10],
            value[95:],
            b"",
            b"",
            value[90:],
            value,
            b"",
            b"",
            value[-5:],
            value,
            b"",
            value[0:10],
        ]
        got = store.get_ranges("r/v", requests)
        assert [_b(v) for v in got] == expected

    @pytest.mark.parametrize(
        "request_, expected",
        [
            (RangeRequest(3, 4), slice(3, 7)),
            (RangeRequest(98, 4), slice(98, 100)),
            (RangeRequest(500, 4), slice(0, 0)),
            (OffsetRequest(42), slice(42, None)),
            (OffsetRequest(500), slice(0, 0)),
            (SuffixRequest(7), slice(93, None)),
            (SuffixRequest(500), slice(None)),
            (SuffixRequest(0), slice(0, 0)),
            (RangeRequest(0, 0), slice(0, 0)),
        ],
        ids=repr,
    )
    def test_get_ranges_single(self, make_store, request_, expected):
        value = bytes(range(100))
        store = make_store({"v": value})
        assert [_b(v) for v in store.get_ranges("v", [request_])] == [value[expected]]

    def test_get_ranges_missing_key(self, make_store):
        store = make_store(SAMPLE)
        assert store.get_ranges("missing", [RangeRequest(0, 1), SuffixRequest(2)]) is None
        assert store.get_ranges("missing", [SuffixRequest(0)]) is None
        assert store.get_ranges("missing", []) is None

    def test_get_ranges_empty_value(self, make_store):
        store = make_store({"empty": b""})
        got = store.get_ranges("empty", [RangeRequest(0, 5), OffsetRequest(0), SuffixRequest(3)])
        assert [_b(v) for v in got] == [b"", b"", b""]
        assert store.get_ranges("empty", []) == []

    # -- listing -----------------------------------------------------------
    def test_listing(self, make_store):
        store = make_store(SAMPLE)
        if not store.listable:
            with pytest.raises(StoreError):
                list(store.list())
            with pytest.raises(StoreError):
                list(store.list_prefix("a/"))
            with pytest.raises(StoreError):
                store.list_dir("")
            return
        everything = set(SAMPLE)
        assert sorted(store.list()) == sorted(everything)
        assert sorted(store.list_prefix("")) == sorted(everything)
        under_a = {k for k in everything if k.startswith("a/")}
        assert set(store.list_prefix("a/")) == under_a
        assert set(store.list_prefix("a")) == under_a | {"ab/x"}
        assert set(store.list_prefix("a/b/c/")) == {"a/b/c/0", "a/b/c/1"}
        assert set(store.list_prefix("a/b")) == {"a/b/c/0", "a/b/c/1", "a/b/d"}
        assert set(store.list_prefix("nope/")) == set()
        assert set(store.list_prefix("f")) == {"f"}

    def test_list_dir(self, make_store):
        store = make_store(SAMPLE)
        if not store.listable:
            pytest.skip("store is not listable")
        assert store.list_dir("") == [".zgroup", "a", "ab", "f", "zarr.json"]
        assert store.list_dir("a") == [".zattrs", "b", "e", "zarr.json"]
        assert store.list_dir("a/") == store.list_dir("a")
        assert store.list_dir("a/b") == ["c", "d"]
        assert store.list_dir("a/b/c/") == ["0", "1"]
        assert store.list_dir("missing") == []
        assert store.list_dir("f") == []  # a key has no children
        assert store.list_dir("a/e") == []

    # -- capability flags --------------------------------------------------
    def test_capability_flags(self, make_store):
        store = make_store(SAMPLE)
        for flag in ("writable", "listable", "supports_partial_reads"):
            assert isinstance(getattr(store, flag), bool), flag
        assert store.writable is self.store_is_writable

    # -- writes ------------------------------------------------------------
    def test_empty_store(self, store):
        if store.listable:
            assert list(store.list()) == []
            assert store.list_dir("") == []
        assert store.get("zarr.json") is None

    def test_set_and_get(self, store):
        store.set("a/b/c", b"value")
        assert _b(store.get("a/b/c")) == b"value"
        store.set("top", b"")
        assert store.get("top") == b""
        assert store.exists("top")

    def test_overwrite(self, store):
        store.set("k", b"first value")
        store.set("k", b"2nd")
        assert _b(store.get("k")) == b"2nd"
        assert store.getsize("k") == 3
        assert [_b(v) for v in store.get_ranges("k", [SuffixRequest(2)])] == [b"nd"]
        store.set("k", b"a much longer third value")
        assert _b(store.get("k")) == b"a much longer third value"
        if store.listable:
            assert list(store.list()) == ["k"]

    def test_set_many(self, store):
        items = {f"c/{i}/{j}": bytes([i, j]) * (i + 1) for i in range(5) for j in range(10)}
        store.set_many(items)
        keys = list(items)[::-1] + ["c/9/9"]
        assert [_b(v) for v in store.get_many(keys)] == [items.get(k) for k in keys]
        store.set_many({})
        if store.listable:
            assert set(store.list()) == set(items)

    def test_set_accepts_bytes_like(self, store):
        buf = bytearray(b"mutable")
        store.set("k", buf)
        buf[:] = b"changed"
        assert _b(store.get("k")) == b"mutable"
        store.set("m", memoryview(b"view"))
        assert _b(store.get("m")) == b"view"

    def test_delete(self, store):
        store.set_many({"a/b": b"1", "a/c": b"2"})
        store.delete("a/b")
        assert store.get("a/b") is None
        assert not store.exists("a/b")
        assert store.getsize("a/b") is None
        assert store.get_ranges("a/b", [RangeRequest(0, 1)]) is None
        assert _b(store.get("a/c")) == b"2"
        store.delete("a/b")  # missing: not an error
        store.delete("never/there")
        if store.listable:
            assert list(store.list()) == ["a/c"]

    def test_delete_many(self, store):
        store.set_many({"x/0": b"0", "x/1": b"1", "x/2": b"2"})
        store.delete_many(["x/0", "x/2", "x/missing"])
        assert [_b(v) for v in store.get_many(["x/0", "x/1", "x/2"])] == [None, b"1", None]

    def test_set_after_delete(self, store):
        store.set("k", b"one")
        store.delete("k")
        store.set("k", b"two")
        assert _b(store.get("k")) == b"two"
        if store.listable:
            assert list(store.list()) == ["k"]

    def test_delete_prefix(self, store):
        if not store.listable:
            pytest.skip("delete_prefix needs listing")
        store.set_many(SAMPLE)
        store.delete_prefix("a/b/")
        assert set(store.list()) == set(SAMPLE) - {"a/b/c/0", "a/b/c/1", "a/b/d"}
        store.delete_prefix("a/")
        assert set(store.list()) == {"zarr.json", ".zgroup", "ab/x", "f"}
        assert _b(store.get("ab/x")) == b"ab"
        store.delete_prefix("nothing/")
        store.delete_prefix("")
        assert list(store.list()) == []
        assert store.get("f") is None
        store.set("again", b"1")  # still usable
        assert _b(store.get("again")) == b"1"

    def test_delete_prefix_is_a_string_prefix(self, store):
        if not store.listable:
            pytest.skip("delete_prefix needs listing")
        store.set_many({"a/x": b"1", "ab/y": b"2", "b": b"3"})
        store.delete_prefix("a")
        assert set(store.list()) == {"b"}

    def test_threads(self, store):
        def work(i: int) -> None:
            for j in range(10):
                store.set(f"t/{i}/{j}", f"{i}-{j}".encode())
                assert _b(store.get(f"t/{i}/{j}")) == f"{i}-{j}".encode()

        with ThreadPoolExecutor(8) as pool:
            list(pool.map(work, range(8)))
        keys = [f"t/{i}/{j}" for i in range(8) for j in range(10)]
        assert [_b(v) for v in store.get_many(keys)] == [k[2:].replace("/", "-").encode() for k in keys]

    # -- read-only ---------------------------------------------------------
    def test_read_only_rejects_writes(self, readonly_store_factory):
        if readonly_store_factory is None:
            pytest.skip(f"{type(self).__name__} has no readonly_store_factory")
        store = readonly_store_factory(SAMPLE)
        assert store.writable is False
        writes = [
            ("f", lambda: store.set("f", b"new")),
            ("new/key", lambda: store.set("new/key", b"new")),
            ("f", lambda: store.set_many({"f": b"new"})),
            ("f", lambda: store.delete("f")),
            ("a/e", lambda: store.delete_many(["a/e"])),
            ("a/", lambda: store.delete_prefix("a/")),
        ]
        for key, write in writes:
            with pytest.raises(ReadOnlyError) as info:
                write()
            assert repr(key) in str(info.value), (key, str(info.value))
        with pytest.raises(ReadOnlyError):
            store.delete_prefix("")
        assert [_b(v) for v in store.get_many(list(SAMPLE))] == list(SAMPLE.values())
        assert store.get("new/key") is None

    # -- keys --------------------------------------------------------------
    @pytest.mark.parametrize("key", INVALID_KEYS, ids=repr)
    def test_invalid_keys_rejected(self, make_store, key):
        if not self.validates_keys:
            pytest.skip("store does not validate keys")
        store = make_store({"ok": b"1"})
        with pytest.raises(InvalidKeyError) as info:
            store.get(key)
        assert repr(key) in str(info.value)
        with pytest.raises(InvalidKeyError):
            store.get_many(["ok", key])
        with pytest.raises(InvalidKeyError):
            store.get_ranges(key, [RangeRequest(0, 1)])
        with pytest.raises(InvalidKeyError):
            store.reader(key).read([RangeRequest(0, 1)])
        if store.writable:
            with pytest.raises(InvalidKeyError) as info:
                store.set(key, b"x")
            assert repr(key) in str(info.value)
            with pytest.raises(InvalidKeyError):
                store.set_many({"fine": b"1", key: b"x"})
            with pytest.raises(InvalidKeyError):
                store.delete(key)
            with pytest.raises(InvalidKeyError):
                store.locked(["ok", key])
            if store.listable:
                assert set(store.list()) <= {"ok", "fine"}

    @pytest.mark.parametrize(
        "key", [".zarray", "a/.zattrs", "c/0.0.1", "x/c/0/1/2", "name with space", "ü/ñ", "a=b,c+d~e"]
    )
    def test_unusual_valid_keys(self, make_store, key):
        store = make_store({key: b"v"})
        assert _b(store.get(key)) == b"v"
        if store.listable:
            assert key in set(store.list())

    # -- pickling ----------------------------------------------------------
    def test_pickle_roundtrip(self, make_store):
        if not self.picklable:
            pytest.skip("store is not picklable")
        store = make_store(SAMPLE)
        clone = pickle.loads(pickle.dumps(store))
        assert [_b(v) for v in clone.get_many(list(SAMPLE))] == list(SAMPLE.values())
        assert clone.listable == store.listable
        assert clone.supports_partial_reads == store.supports_partial_reads
        assert [_b(v) for v in clone.get_ranges("f", [SuffixRequest(3)])] == [b"789"]
        if store.writable:  # the original is still usable after pickling
            store.set("after", b"pickle")
            assert _b(store.get("after")) == b"pickle"
            assert _b(store.get("f")) == SAMPLE["f"]

    # -- readers (multi-step reads of one version) -------------------------
    def test_reader_reads_like_get_ranges(self, make_store):
        value = bytes(range(100))
        store = make_store({"r/v": value})
        requests = [RangeRequest(0, 10), SuffixRequest(5), OffsetRequest(95), RangeRequest(200, 5), RangeRequest(3, 0)]
        with store.reader("r/v") as reader:
            assert reader.key == "r/v"
            assert reader.unchanged() is True  # nothing read yet
            assert [_b(v) for v in reader.read(requests)] == [value[:10], value[-5:], value[95:], b"", b""]
            assert isinstance(reader.exact, bool)
            assert [_b(v) for v in reader.read([RangeRequest(50, 3), SuffixRequest(1000)])] == [value[50:53], value]
            assert reader.read([]) == []
            assert reader.unchanged() is True

    def test_reader_missing_key(self, make_store):
        store = make_store(SAMPLE)
        with store.reader("missing") as reader:
            assert reader.read([RangeRequest(0, 1)]) is None
            assert reader.read([SuffixRequest(1)]) is None
            assert reader.unchanged() is True
        with store.reader("a/b") as reader:  # a "directory" is not a key
            assert reader.read([RangeRequest(0, 1)]) is None

    def test_reader_closed(self, make_store):
        store = make_store({"k": b"abc"})
        reader = store.reader("k")
        assert [_b(v) for v in reader.read([SuffixRequest(1)])] == [b"c"]
        reader.close()
        reader.close()  # idempotent
        with pytest.raises(StoreError):
            reader.read([RangeRequest(0, 1)])

    def test_reader_first_read_decides_missing(self, store):
        reader = store.reader("late")
        assert reader.read([RangeRequest(0, 1)]) is None
        store.set("late", b"now here")
        assert reader.read([RangeRequest(0, 1)]) is None  # the reader stands for "missing"
        assert reader.unchanged() is False
        reader.close()

    def test_reader_value_replaced_between_reads(self, store):
        old = bytes(range(200))
        new = bytes(reversed(range(200)))
        store.set("shard", old)
        reader = store.reader("shard")
        assert [_b(v) for v in reader.read([SuffixRequest(16)])] == [old[-16:]]  # "the index"
        store.set("shard", new)
        if reader.exact:
            try:
                got = reader.read([RangeRequest(0, 32), SuffixRequest(16)])  # "the chunks"
            except ValueChangedError as e:
                assert "'shard'" in str(e)
            else:
                assert [_b(v) for v in got] == [old[:32], old[-16:]], "an exact reader mixed two versions"
        else:
            reader.read([RangeRequest(0, 32)])  # the current bytes: unchanged() must say so
        assert reader.unchanged() is False
        reader.close()

    def test_reader_value_deleted_between_reads(self, store):
        store.set("k", b"0123456789")
        reader = store.reader("k")
        assert [_b(v) for v in reader.read([RangeRequest(0, 2)])] == [b"01"]
        store.delete("k")
        try:
            got = reader.read([RangeRequest(2, 2)])
        except ValueChangedError as e:
            assert "'k'" in str(e)
        else:
            assert reader.exact, "a verifying reader cannot serve a deleted value"
            assert [_b(v) for v in got] == [b"23"]
        assert reader.unchanged() is False
        reader.close()

    def test_reader_same_value_rewritten_is_unchanged_or_reported(self, store):
        store.set("k", b"same")
        with store.reader("k") as reader:
            reader.read([RangeRequest(0, 4)])
            assert reader.unchanged() is True
            assert [_b(v) for v in reader.read([SuffixRequest(2)])] == [b"me"]

    # -- locks (read-modify-write) -----------------------------------------
    def test_locked_excludes_other_threads(self, store):
        order: list[str] = []
        holding = threading.Event()

        def first() -> None:
            with store.locked(["k"]):
                holding.set()
                time.sleep(0.05)
                order.append("first out")

        def second() -> None:
            holding.wait(5)
            with store.locked(["k"]):
                order.append("second in")

        threads = [threading.Thread(target=first), threading.Thread(target=second)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert order == ["first out", "second in"]

    def test_locked_read_modify_write_loses_no_update(self, store):
        store.set("counter", b"0")

        def work(_: int) -> None:
            for _ in range(5):
                with store.locked(["counter"]):
                    value = int(_b(store.get("counter")))  # type: ignore[arg-type]
                    time.sleep(0.001)
                    store.set("counter", str(value + 1).encode())

        with ThreadPoolExecutor(4) as pool:
            list(pool.map(work, range(4)))
        assert _b(store.get("counter")) == b"20"

    def test_locked_several_keys_in_any_order_do_not_deadlock(self, store):
        sets = [["a", "b", "c"], ["c", "b"], ["b", "a"], ["c", "a", "b", "a"]]

        def work(keys: list[str]) -> None:
            for _ in range(10):
                with store.locked(keys):
                    pass

        threads = [threading.Thread(target=work, args=(keys,), daemon=True) for keys in sets * 2]
        for t in threads:
            t.start()
        for t in threads:
            t.join(20)
        assert not any(t.is_alive() for t in threads), "locked() deadlocked"

    def test_locked_is_reentrant(self, store):
        with store.locked(["x", "y"]):
            with store.locked(["y"]):
                store.set("y", b"1")
            with store.locked(["x", "y", "z"]):
                store.set("z", b"2")
        assert [_b(v) for v in store.get_many(["y", "z"])] == [b"1", b"2"]
        with store.locked([]):
            pass

    def test_locked_shared_by_store_objects_over_the_same_data(self, store, same_data_store):
        if same_data_store is None:
            pytest.skip("no same_data_store fixture")
        entered = threading.Event()
        release = threading.Event()

        def hold() -> None:
            with store.locked(["k"]):
                entered.set()
                release.wait(5)

        holder = threading.Thread(target=hold)
        holder.start()
        entered.wait(5)
        got = []
        waiter = threading.Thread(target=lambda: same_data_store.locked(["k"]).__enter__() or got.append(1))
        waiter.daemon = True
        waiter.start()
        waiter.join(0.1)
        assert got == [], "a second store object over the same data took a held lock"
        release.set()
        holder.join(5)
        waiter.join(5)
        assert got == [1]

    def test_locked_refused_by_read_only_stores(self, readonly_store_factory):
        if readonly_store_factory is None:
            pytest.skip(f"{type(self).__name__} has no readonly_store_factory")
        store = readonly_store_factory({"k": b"1"})
        with pytest.raises(ReadOnlyError) as info:
            store.locked(["k"])
        assert "'k'" in str(info.value)
