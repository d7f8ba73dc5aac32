"""The order in which the pool's threads take work (``thread_map``): each
thread starts in its own part of the items, so that threads filling a fresh
output (a local read's groups of chunks, a shard's inner chunks) do not
first-touch the same memory pages at once; results and errors still come in
the items' order."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import zarrdask
from zarrdask.core import engine
from zarrdask._pool import spread, thread_map


@pytest.mark.parametrize("n, threads", [(16, 2), (7, 3), (5, 2), (9, 4), (3, 8), (1, 2), (0, 2), (10, 1)])
def test_spread_is_a_permutation_starting_each_thread_in_its_own_part(n, threads):
    items = list(range(n))
    order = spread(items, threads)
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


def test_thread_map_gives_results_and_the_first_error_in_the_items_order():
    with zarrdask.config.set(threads=2):
        assert thread_map(lambda x: x * x, list(range(11))) == [x * x for x in range(11)]

        def fail(x):
            if x in (3, 8):
                raise ValueError(f"item {x}")
            return x

        with pytest.raises(ValueError, match="item 3"):  # 8 is taken before 3, but 3 comes first
            thread_map(fail, list(range(10)))


def test_a_shard_decoded_whole_starts_its_threads_in_different_parts(tmp_path, monkeypatch):
    from zarrdask.codecs import chain

    data = np.arange(32 * 32, dtype="f4").reshape(32, 32)
    a = zarrdask.create_array(tmp_path / "s.zarr", shape=data.shape, dtype="f4", chunks=(4, 32), shards=(32, 32))
    a[...] = data
    started: list[list[int]] = []  # per part handed to the pool, the inner chunks' places
    lock = threading.Lock()
    decode_pieces_into = chain.CodecChain.decode_pieces_into

    def recording(self, source, pieces, spec, key=""):
        if spec.shape == (4, 32):  # inner chunks: which rows of the shard
            with lock:
                started.append([out.__array_interface__["data"][0] for _, _, out in pieces])
        return decode_pieces_into(self, source, pieces, spec, key)

    monkeypatch.setattr(chain.CodecChain, "decode_pieces_into", recording)
    with zarrdask.config.set(threads=2):
        out = zarrdask.open_array(tmp_path / "s.zarr", mode="r")[...]
    np.testing.assert_array_equal(out, data)
    base = out.__array_interface__["data"][0]
    rows = [[(address - base) // (32 * 4) for address in part] for part in started]
    assert sorted(r for part in rows for r in part) == list(range(0, 32, 4))
    # inner chunks of 512 bytes, each too little for a hand-off: a part of
    # the shard per thread, each half of it starting on its own
    assert len(rows) == 2 and {part[0] for part in rows} == {0, 16}
