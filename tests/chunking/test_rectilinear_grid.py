"""The rectilinear grid: the extension's "Indexing" section, overflow, growth."""

from __future__ import annotations

import numpy as np
import pytest

from zarrdask.chunking import RectilinearGrid, RegularGrid, dask_chunks, grid_for
from zarrdask.chunking.rectilinear import Axis, grow_edges


def test_the_extensions_indexing_example():
    # edge lengths [[16, 10], [24, 14]]: index (20, 15) is chunk (1, 0), at (4, 15) inside it
    axes = [Axis((16, 10), 26), Axis((24, 14), 38)]
    coords = tuple(a.chunk_of(i) for a, i in zip(axes, (20, 15)))
    assert coords == (1, 0)
    assert tuple(i - a.start(c) for a, c, i in zip(axes, coords, (20, 15))) == (4, 15)
    g = RectilinearGrid((26, 38), ((16, 10), (24, 14)))
    assert g.chunk_shape_at((0, 1)) == (16, 14)
    assert g.chunk_region((1, 1)) == (slice(16, 26), slice(24, 38))


def test_overflow_chunks_are_not_part_of_the_array():
    a = Axis((4, 4, 4), 6)
    assert a.nchunks == 2 and a.dask_chunks() == (4, 2)
    assert Axis((2, 2, 5, 5), 3).nchunks == 2
    assert Axis((), 0).nchunks == 0 and Axis((), 0).dask_chunks() == (0,)


def test_integer_axis_repeats_until_it_covers():
    assert Axis(3, 10).dask_chunks() == (3, 3, 3, 1)
    assert dask_chunks((10, 6), (3, (1, 1, 1, 3))) == ((3, 3, 3, 1), (1, 1, 1, 3))


def test_vectorised_lookup_matches_scalar():
    a = Axis((31, 28, 31, 30), 120)
    idx = np.arange(120)
    assert a.chunks_of(idx).tolist() == [a.chunk_of(int(i)) for i in idx]
    assert (a.starts(a.chunks_of(idx)) <= idx).all()


def test_grid_for_picks_the_kind():
    assert isinstance(grid_for((10,), (3,)), RegularGrid)
    assert isinstance(grid_for((10,), ((5, 5),)), RectilinearGrid)
    assert grid_for((10, 4), ((5, 5), 2)).nchunks == 4


@pytest.mark.parametrize("chunks, old, new, multiple, want", [
    (((31, 28), 4), (59, 4), (90, 4), None, ((31, 28, 31), 4)),
    (((31, 28), 4), (59, 4), (50, 4), None, ((31, 28), 4)),   # shrinking keeps the edges
    (((31, 28, 31), 4), (50, 4), (70, 4), None, ((31, 28, 31), 4)),  # overflow absorbs growth
    (((32, 28),), (60,), (70,), (4,), ((32, 28, 12),)),
])
def test_grow_edges(chunks, old, new, multiple, want):
    assert grow_edges(chunks, old, new, multiple) == want
