"""Scratch arrays shared by the process's threads (``zarrdask.codecs.buffers.scratch_array``)."""

from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest

import zarrdask
from zarrdask.codecs.buffers import scratch_array


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def test_a_scratch_array_is_reused_once_given_back_and_never_while_in_use():
    with scratch_array((64, 64), np.dtype("f4")) as first:
        assert first.shape == (64, 64) and first.dtype == np.dtype("f4") and first.flags.c_contiguous
        with scratch_array((64, 64), np.dtype("f4")) as nested:  # in use: another buffer
            assert _address(nested) != _address(first)
        address = _address(first)
    with scratch_array((64, 64), np.dtype("f4")) as again:
        assert _address(again) in (address, _address(nested))
    with scratch_array((32, 64), np.dtype("f8")) as smaller_or_equal:  # same bytes, another type and shape
        assert smaller_or_equal.shape == (32, 64) and smaller_or_equal.dtype == np.dtype("f8")
    with scratch_array((4, 4), np.dtype("f4"), order="F") as fortran:
        assert fortran.flags.f_contiguous


def test_a_scratch_array_is_given_back_when_the_block_raises():
    with pytest.raises(ValueError), scratch_array((16,), np.dtype("u1")) as buf:
        address = _address(buf)
        raise ValueError("decoding failed")
    with scratch_array((16,), np.dtype("u1")) as again:
        assert _address(again) == address


def test_scratch_arrays_of_object_type_are_fresh():
    with scratch_array((3,), np.dtype(object)) as a, scratch_array((3,), np.dtype(object)) as b:
        assert a.dtype == object and a is not b and a.base is None


def test_a_buffer_given_back_by_one_thread_serves_the_next_and_one_in_use_serves_no_other():
    with scratch_array((1024,), np.dtype("f4")) as mine:
        address = _address(mine)
        seen = []

        def other_thread() -> None:
            with scratch_array((1024,), np.dtype("f4")) as theirs:
                seen.append(_address(theirs))

        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
        assert seen and seen[0] != address  # mine is in use
    t = threading.Thread(target=other_thread)
    t.start()
    t.join()
    assert seen[1] == address  # given back: the last one given back comes first, whichever thread asks


def test_buffers_kept_after_many_threads_decoded_at_once_are_bounded_by_the_setting_threads():
    """A read whose I/O threads each decode now and then keeps as many buffers
    as decode at once (two per thread of the setting ``threads``), not one per
    thread that ever decoded."""
    n = 16
    everyone_holds, everyone_gave_back = threading.Barrier(n), threading.Barrier(n + 1)
    done = threading.Event()
    held: list[weakref.ref] = []

    def decode() -> None:  # an I/O thread: it lives on after its decode
        with scratch_array((256, 256), np.dtype("f4")) as buf:
            held.append(weakref.ref(buf.base))  # the buffer's memory
            everyone_holds.wait()
        del buf
        everyone_gave_back.wait()
        done.wait()

    with zarrdask.config.set(threads=2):
        threads = [threading.Thread(target=decode) for _ in range(n)]
        for t in threads:
            t.start()
        everyone_gave_back.wait()
        gc.collect()
        kept = {id(r()) for r in held if r() is not None}
        done.set()
        for t in threads:
            t.join()
    assert len(held) == n and len(kept) == 4  # max(4, 2 * threads) kept, the others freed
