"""The order in which a local read's pool threads take their groups of chunks:
each thread starts in its own part of the output, so that threads filling a
fresh output do not first-touch the same memory pages at once."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import zarrdask
from zarrdask.core import engine
from zarrdask.core.engine import _spread


@pytest.mark.parametrize("n, threads", [(16, 2), (7, 3), (5, 2), (9, 4), (3, 8), (1, 2), (0, 2), (10, 1)])
def test_spread_is_a_permutation_starting_each_thread_in_its_own_part(n, threads):
    items = list(range(n))
    order = _spread(items, threads)
    assert sorted(order) == items
    if threads > 1 and n > threads:
        bounds = [i * n // threads for i in range(threads + 1)]  # parts as equal as can be
        assert order[:threads] == bounds[:-1]  # what the threads take first: the start of each part
        for start, stop in zip(bounds, bounds[1:]):  # every part keeps its own order
            assert [i for i in order if start <= i < stop] == list(range(start, stop))
    else:
        assert order == items


def test_a_local_read_starts_its_threads_in_different_parts_of_the_array(tmp_path, monkeypatch):
    monkeypatch.setattr(engine, "GROUP_BYTES", 1)  # a group per chunk
    monkeypatch.setattr(engine, "ONE_CALL_BYTES", 1)
    data = np.arange(64 * 16, dtype="f8").reshape(64, 16)
    a = zarrdask.create_array(tmp_path / "a.zarr", shape=data.shape, dtype="f8", chunks=(8, 16))
    a[...] = data
    started: list[str] = []
    lock = threading.Lock()
    read_group = engine._Reads._read_group

    def recording(self, group):
        with lock:
            started.append(group[0].key)
        return read_group(self, group)

    monkeypatch.setattr(engine._Reads, "_read_group", recording)
    with zarrdask.config.set(threads=2):
        out = zarrdask.open_array(tmp_path / "a.zarr", mode="r")[...]
    np.testing.assert_array_equal(out, data)
    assert sorted(started) == sorted(f"c/{i}/0" for i in range(8))
    assert set(started[:2]) == {"c/0/0", "c/4/0"}  # the first and the second half of the rows
