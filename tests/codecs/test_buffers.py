"""Per-thread scratch arrays (``zarrdask.codecs.buffers.scratch_array``)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

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


def test_scratch_arrays_of_object_type_are_fresh_and_threads_have_their_own():
    with scratch_array((3,), np.dtype(object)) as a, scratch_array((3,), np.dtype(object)) as b:
        assert a.dtype == object and a is not b
    with scratch_array((1024,), np.dtype("f4")) as mine:
        address = _address(mine)
    seen = []

    def other_thread() -> None:
        with scratch_array((1024,), np.dtype("f4")) as theirs:
            seen.append(_address(theirs))

    t = threading.Thread(target=other_thread)
    t.start()
    t.join()
    assert seen and seen[0] != address
