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
