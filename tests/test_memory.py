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
