"""zarrdask._memory: aligned allocations."""

import numpy as np
import pytest

from zarrdask._memory import ALIGN, aligned_empty


@pytest.mark.parametrize("shape", [(0,), (7,), (4096,), (100, 300), (3, 40, 50)])
@pytest.mark.parametrize("dtype", ["u1", "<f4", ">i8", "c16"])
@pytest.mark.parametrize("order", ["C", "F"])
def test_aligned_empty_is_numpy_empty_aligned(shape, dtype, order):
    a = aligned_empty(shape, dtype, order)
    assert a.shape == shape and a.dtype == np.dtype(dtype)
    assert a.flags.writeable
    assert a.flags.c_contiguous if order == "C" else a.flags.f_contiguous
    if a.nbytes >= 4096:
        assert a.ctypes.data % ALIGN == 0
    a[...] = 1
    assert (a == 1).all()


def test_aligned_empty_objects_and_ints():
    assert aligned_empty(5).shape == (5,)
    o = aligned_empty((1000,), object)
    assert o.dtype == object


# -- the read-buffer pool -----------------------------------------------------------
from zarrdask._memory import BufferPool, read_buffers  # noqa: E402


def test_size_classes_waste_at_most_an_eighth():
    for n in [1, 4096, 4097, 100_000, 1 << 20, (1 << 20) + 1, 3_333_333]:
        c = BufferPool.size_class(n)
        assert c >= n and (n <= 4096 or c <= n * 1.125)


def test_a_buffer_given_back_is_reused_and_aligned():
    pool = BufferPool(max_bytes=1 << 22, largest=1 << 21)
    a = pool.take(1_000_000)
    assert a.nbytes == 1_000_000 and not a.readonly
    addr = a.obj.ctypes.data
    assert addr % ALIGN == 0
    pool.give([a[:10].toreadonly()])  # a slice or read-only view of it identifies it too
    b = pool.take(999_000)  # same size class
    assert b.obj.ctypes.data == addr
    pool.give([b])
    pool.give([b])  # a second give of the same buffer is ignored
    c, d = pool.take(999_000), pool.take(999_000)
    assert c.obj.ctypes.data == addr and d.obj.ctypes.data != addr


def test_the_pool_ignores_what_it_did_not_hand_out_and_keeps_its_limits():
    pool = BufferPool(max_bytes=3 << 20, largest=1 << 21)
    pool.give([b"abc", None, memoryview(bytearray(10)), memoryview(np.zeros(1 << 20, "u1"))])
    assert pool._held == 0
    big = pool.take(4 << 20)  # above `largest`: never kept
    pool.give([big])
    assert pool._held == 0
    bufs = [pool.take(1 << 20) for _ in range(4)]
    pool.give(bufs)
    assert pool._held == 3 << 20  # max_bytes: the fourth is freed
    pool.forget()
    assert pool._held == 0


def test_a_buffer_never_given_back_is_freed():
    import gc
    import weakref

    pool = BufferPool(max_bytes=1 << 22, largest=1 << 21)
    v = pool.take(100_000)
    ref = weakref.ref(v.obj)
    del v
    gc.collect()
    assert ref() is None and len(pool._out) == 0


def test_reads_reuse_buffers_and_stay_correct(tmp_path):
    """The engine gives its read buffers back after decoding: later reads of
    other arrays through the same buffers still return their own data."""
    import zarrdask

    rng = np.random.default_rng(1)
    arrays = []
    for i, codecs in enumerate([None, [{"name": "zstd", "configuration": {"level": 1}}]]):
        data = rng.random((300, 200)).astype("f4")
        a = zarrdask.create_array(str(tmp_path / f"a{i}.zarr"), shape=data.shape, dtype="f4", chunks=(64, 64),
                                  compressors=codecs)
        a[...] = data
        arrays.append((a, data))
    read_buffers.forget()
    for _ in range(3):
        for a, data in arrays:
            np.testing.assert_array_equal(a[...], data)
            np.testing.assert_array_equal(a[10:250, 5:190], data[10:250, 5:190])
    assert read_buffers._held > 0


def test_a_rechunk_task_keeps_no_read_buffers(tmp_path):
    import zarrdask
    from zarrdask.core.options import EngineOptions

    data = np.arange(200 * 200, dtype="f4").reshape(200, 200)
    a = zarrdask.create_array(str(tmp_path / "a.zarr"), shape=data.shape, dtype="f4", chunks=(50, 50),
                              compressors=[{"name": "zstd", "configuration": {"level": 1}}])
    a[...] = data
    read_buffers.forget()
    np.testing.assert_array_equal(a.get_basic_selection(..., options=EngineOptions(threads=1, one_chunk=True)), data)
    assert read_buffers._held == 0
    np.testing.assert_array_equal(a[...], data)
    assert 0 < read_buffers._held <= read_buffers.max_bytes


# -- large buffers: read outputs and large read buffers, reused while others are in use ----
from zarrdask._memory import LargeBuffers  # noqa: E402

MiB = 1 << 20


@pytest.fixture
def large_buffers():
    """The process's large buffers, on (a rechunk task run earlier in this
    process turns them off) and empty; as they were afterwards."""
    from zarrdask._memory import large_buffers as pool

    saved = pool.smallest
    pool.smallest = MiB
    pool.forget()
    yield pool
    pool.smallest = saved


def test_an_output_comes_back_only_once_nothing_refers_to_its_memory():
    pool = LargeBuffers(smallest=MiB)
    keep = pool.empty((1024, 256), np.dtype("f8"))  # 2 MiB, in use throughout
    a = pool.empty((1024, 256), np.dtype("f8"))
    assert a.ctypes.data % ALIGN == 0 and a.flags.writeable and a.flags.c_contiguous
    a[...] = 7
    address = a.ctypes.data
    view, exported = a[::2, 3], memoryview(a[5])
    del a
    assert pool.free_bytes == 0  # its views still use it
    b = pool.empty((1024, 256), np.dtype("f8"))
    assert b.ctypes.data != address  # not handed out while in use
    b[...] = 1
    assert (view == 7).all() and all(x == 7 for x in exported.cast("B").cast("d"))
    del view
    assert pool.free_bytes == 0
    exported.release()
    del exported
    assert pool.free_bytes == 2 * MiB  # back, and kept: `keep` and `b` are in use
    c = pool.empty((2 * MiB,), np.dtype("u1"))
    assert c.ctypes.data == address and pool.free_bytes == 0
    assert (b == 1).all() and keep.shape == (1024, 256)


def test_free_buffers_stay_within_the_live_bytes_and_go_when_none_are_in_use():
    pool = LargeBuffers(smallest=MiB)
    arrays = [pool.empty((MiB,), np.dtype("u1")) for _ in range(3)]
    big = pool.empty((4 * MiB,), np.dtype("u1"))
    del big  # 4 MiB back while 3 MiB are in use: not kept
    assert pool.free_bytes == 0
    arrays.pop()
    arrays.pop()
    assert pool.free_bytes == MiB  # one kept (1 MiB in use), the second would exceed it
    arrays.pop()
    assert pool.free_bytes == 0  # nothing in use: everything goes back to the system


def test_small_and_object_outputs_are_plain_arrays():
    pool = LargeBuffers(smallest=MiB)
    small = pool.empty((10, 10), np.dtype("f4"))
    objects = pool.empty((MiB,), np.dtype(object))
    assert small.base is None or isinstance(small.base, np.ndarray)
    assert objects.dtype == object and objects.flags.owndata
    del small, objects
    assert pool.free_bytes == 0


def test_buffers_of_a_forked_parent_do_not_come_back_in_the_child():
    pool = LargeBuffers(smallest=MiB)
    a, b = pool.empty((MiB,), np.dtype("u1")), pool.empty((MiB,), np.dtype("u1"))
    pool._after_fork_in_child()
    del a
    assert pool.free_bytes == 0 and pool._live_bytes == 0
    c, d = pool.empty((MiB,), np.dtype("u1")), pool.empty((MiB,), np.dtype("u1"))
    del b, c
    assert pool.free_bytes == MiB  # the child's own buffer kept, the parent's not counted


def test_large_reads_reuse_memory_and_stay_correct(tmp_path, large_buffers):
    import zarrdask

    rng = np.random.default_rng(0)
    data = rng.random((512, 512))  # 2 MiB outputs; 4 shards of 1 MiB stored each
    a = zarrdask.create_array(str(tmp_path / "a.zarr"), shape=data.shape, dtype="f8", chunks=(64, 64),
                              shards=(256, 256), compressors=None)
    a[...] = data
    first = a[...]
    second = a[...]
    address = second.ctypes.data
    del second  # `first` is in use: its memory stays for the next read
    assert large_buffers.free_bytes >= data.nbytes
    third = a[...]
    assert third.ctypes.data == address
    np.testing.assert_array_equal(third, data)
    np.testing.assert_array_equal(first, data)
    third[...] = 0  # results are the caller's own
    np.testing.assert_array_equal(a[...], data)
    del first, third


def test_a_rechunk_task_keeps_no_large_buffers(tmp_path, large_buffers):
    import zarrdask
    from zarrdask._memory import return_freed_memory

    data = np.arange(512 * 512, dtype="f8").reshape(512, 512)
    a = zarrdask.create_array(str(tmp_path / "a.zarr"), shape=data.shape, dtype="f8", chunks=(512, 512))
    a[...] = data
    return_freed_memory()
    kept = a[...]
    again = a[...]
    del again
    assert large_buffers.free_bytes == 0 and kept.flags.owndata is False
    np.testing.assert_array_equal(kept, data)


def test_read_buffers_above_the_largest_kept_come_from_the_large_buffers(large_buffers):
    pool = BufferPool(max_bytes=4 * MiB, largest=MiB)
    in_use = large_buffers.empty((2 * MiB,), np.dtype("u1"))
    before = large_buffers.free_bytes
    buf = pool.take(2 * MiB)
    assert buf.nbytes == 2 * MiB and not buf.readonly
    address = np.frombuffer(buf, np.uint8).ctypes.data
    assert address % ALIGN == 0
    value = buf.toreadonly()[10:]  # what a store hands out
    del buf
    pool.give([value])  # not the read-buffer pool's: ignored there
    assert large_buffers.free_bytes == before and pool._held == 0
    del value
    assert large_buffers.free_bytes == before + 2 * MiB  # back once its last view went
    again = pool.take(2 * MiB)
    assert np.frombuffer(again, np.uint8).ctypes.data == address
    del again, in_use
