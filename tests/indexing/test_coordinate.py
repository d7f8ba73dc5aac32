"""Coordinate and mask selections projected onto chunks agree with numpy's fancy indexing."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrdask.errors import BoundsCheckError, SelectionError
from zarrdask.indexing import CoordinateIndexer, PointProjection, selection_kind


def chunked(a: np.ndarray, chunks: tuple[int, ...], coords: tuple[int, ...]) -> np.ndarray:
    """Chunk ``coords`` of ``a`` as the engine decodes it (edge overhang: -2)."""
    region = tuple(slice(i * c, (i + 1) * c) for i, c in zip(coords, chunks))
    chunk = np.full(chunks, -2, dtype=a.dtype)
    part = a[region]
    chunk[tuple(slice(0, n) for n in part.shape)] = part
    return chunk


def gather(a: np.ndarray, ix) -> np.ndarray:
    """Read ``ix``'s selection of ``a`` chunk by chunk, as the engine does."""
    out = np.full(ix.out_shape, -1, dtype=a.dtype)
    for p in ix:
        out[p.out_selection] = p.select(chunked(a, ix.chunk_shape, p.coords))
    return out


def scatter(a: np.ndarray, ix, value) -> np.ndarray:
    """Write ``value`` at ``ix``'s selection of a copy of ``a``, chunk by chunk."""
    value = np.broadcast_to(value, ix.out_shape)
    out = a.copy()
    for p in ix:
        chunk = chunked(a, ix.chunk_shape, p.coords)
        p.assign(chunk, value[p.out_selection])
        region = tuple(slice(i * c, (i + 1) * c) for i, c in zip(p.coords, ix.chunk_shape))
        target = out[region]
        target[...] = chunk[tuple(slice(0, n) for n in target.shape)]
    return out


def numpy_points(a: np.ndarray, selection) -> np.ndarray:
    """numpy's vectorised indexing, with zarr-python's (1,) result for scalars only."""
    result = a[tuple(selection)]
    return result.reshape(1) if result.ndim == 0 else result


A = np.arange(7 * 9 * 5).reshape(7, 9, 5)


@pytest.mark.parametrize(
    "selection",
    [
        ([0, 6, 3], [8, 0, 4], [4, 4, 0]),
        ([[0], [6]], [1, 2, 8], 3),  # broadcast to (2, 3)
        (-1, -9, [-5, 4]),
        ([5, 5, 5, 0], [1, 1, 1, 0], [2, 2, 2, 0]),  # repeated, unsorted
        (2, 3, 4),  # scalars only: a 1-element result
        (np.array(2), np.array([1, 2]), np.uint8(1)),
        (np.array([], dtype=int), np.array([], dtype=int), np.array([], dtype=int)),
        (np.array([6, 0], dtype=np.uint64), np.array([0, 8], dtype=np.int8), [1, 1]),
    ],
)
def test_selection_matches_numpy(selection):
    ix = CoordinateIndexer(selection, A.shape, (3, 4, 2))
    np.testing.assert_array_equal(gather(A, ix), numpy_points(A, selection))


def test_empty_lists_are_empty_integer_arrays():
    ix = CoordinateIndexer(([], []), (4, 4), (2, 2))
    assert ix.out_shape == (0,) and ix.nchunks == 0 and list(ix) == []


def test_mask_is_c_order():
    mask = (A % 3 == 0) & (A % 2 == 1)
    ix = CoordinateIndexer.from_mask(mask, A.shape, (3, 4, 2))
    np.testing.assert_array_equal(gather(A, ix), A[mask])
    ix = CoordinateIndexer.from_mask((mask,), A.shape, (3, 4, 2))  # alone in a tuple
    np.testing.assert_array_equal(gather(A, ix), A[mask])


def test_points_are_grouped_by_chunk_once_in_grid_order():
    rng = np.random.default_rng(1)
    rows, cols = rng.integers(0, 100, 500), rng.integers(0, 70, 500)
    ix = CoordinateIndexer((rows, cols), (100, 70), (16, 8))
    projections = list(ix)
    coords = [p.coords for p in projections]
    assert coords == sorted(set(coords)) and len(coords) == ix.nchunks
    assert all(isinstance(c, int) for p in projections for c in p.coords)
    assert all(isinstance(p, PointProjection) and not p.is_complete for p in projections)
    assert sum(len(p.chunk_selection[0]) for p in projections) == 500


def test_sorted_points_go_to_runs_of_the_output():
    ix = CoordinateIndexer((np.arange(10), np.arange(10)), (10, 10), (4, 4))
    assert [p.out_selection for p in ix] == [(slice(0, 4),), (slice(4, 8),), (slice(8, 10),)]


def test_complete_only_when_every_element_in_order():
    # 1-d: a whole chunk, in order, is complete (also the edge chunk, within the array)
    ix = CoordinateIndexer((np.arange(10),), (10,), (4,))
    assert [p.is_complete for p in ix] == [True, True, True]
    ix = CoordinateIndexer((np.array([1, 0, 2, 3]),), (10,), (4,))
    assert [p.is_complete for p in ix] == [False]
    # 2-d: a full mask covers every chunk in C order of the chunk
    ix = CoordinateIndexer.from_mask(np.ones((5, 6), bool), (5, 6), (2, 4))
    assert all(p.is_complete for p in ix)
    a = np.arange(30).reshape(5, 6)
    np.testing.assert_array_equal(gather(a, ix), a.reshape(-1))
    np.testing.assert_array_equal(scatter(a, ix, -a.reshape(-1)), -a)


def test_inner_indexer_projects_a_chunks_points_onto_inner_chunks():
    rng = np.random.default_rng(2)
    shape, shard, inner = (40, 30), (20, 10), (5, 5)
    rows, cols = rng.integers(0, 40, 300), rng.integers(0, 30, 300)
    a = rng.integers(0, 1000, shape)
    out = np.full(300, -1)
    for p in CoordinateIndexer((rows, cols), shape, shard):
        sub = p.inner_indexer(shard, inner)
        assert isinstance(sub, CoordinateIndexer) and sub.out_shape == (len(p.dims[0]),)
        shard_data = chunked(a, shard, p.coords)
        out[p.out_selection] = gather(shard_data, sub)
        np.testing.assert_array_equal(gather(shard_data, sub), p.select(shard_data))
    np.testing.assert_array_equal(out, a[rows, cols])


def test_a_grid_too_large_to_number_is_sorted_by_coordinates():
    shape = (2**40, 2**40)
    rows = np.array([2**40 - 1, 0, 5, 0])
    cols = np.array([0, 2**40 - 1, 5, 2])
    ix = CoordinateIndexer((rows, cols), shape, (1, 1))
    assert [p.coords for p in ix] == [(0, 2), (0, 2**40 - 1), (5, 5), (2**40 - 1, 0)]
    assert [p.out_selection[0].tolist() for p in ix] == [[3], [1], [2], [0]]


@pytest.mark.parametrize(
    "selection, error, match",
    [
        (([0, 1],), SelectionError, "one integer array per dimension.*3 dimensions.*1"),
        (([0], [0], [0], [0]), SelectionError, "3 dimensions, the selection 4"),
        (([0], slice(None), [0]), SelectionError, r"dimension 1: .*found slice\(None, None, None\)"),
        ((Ellipsis, [0]), SelectionError, "the selection 2"),
        (([0.0], [0], [0]), SelectionError, "dimension 0: .*dtype float64"),
        (([True] * 7, [0], [0]), SelectionError, "dimension 0: .*bool.*mask selection is one boolean array"),
        (([0, 1], [0, 1, 2], 0), SelectionError, r"shapes \(2,\), \(3,\), \(\) do not broadcast"),
        (([7], [0], [0]), BoundsCheckError, "index 7 is out of bounds for dimension 0 of length 7"),
        (([0], [-10], [0]), BoundsCheckError, "index -10 is out of bounds for dimension 1 of length 9"),
        ((0, 0, np.array([2**64 - 1], dtype=np.uint64)), BoundsCheckError, "18446744073709551615"),
    ],
)
def test_refused(selection, error, match):
    with pytest.raises(error, match=match):
        CoordinateIndexer(selection, A.shape, (3, 4, 2))


def test_mask_refused():
    with pytest.raises(SelectionError, match=r"mask has shape \(7, 9\), the array \(7, 9, 5\)"):
        CoordinateIndexer.from_mask(np.ones((7, 9), bool), A.shape, (3, 4, 2))
    with pytest.raises(SelectionError, match="one boolean array of the array's shape"):
        CoordinateIndexer.from_mask(np.ones(A.shape, int), A.shape, (3, 4, 2))
    with pytest.raises(SelectionError, match="0-d"):
        CoordinateIndexer((), (), ())


def test_input_arrays_are_not_modified():
    rows = np.array([-1, 2])
    CoordinateIndexer((rows, rows), (4, 4), (2, 2))
    assert rows.tolist() == [-1, 2]


@pytest.mark.parametrize(
    "selection, ndim, kind",
    [
        ((1, slice(None), Ellipsis), 3, "basic"),
        (([0, 1], 2), 2, "orthogonal"),
        (([0, 1], slice(None)), 2, "orthogonal"),
        (np.array([True, False]), 2, "orthogonal"),
        (np.array([True, False]), 1, "orthogonal"),
        ([0, 1], 1, "orthogonal"),
        (([0, 1], [1, 2]), 2, "coordinate"),
        ((np.array([[0, 1]]), 3), 2, "coordinate"),
        (np.array([[0, 1]]), 1, "coordinate"),
        (([], []), 2, "coordinate"),
        (np.ones((2, 2), bool), 2, "mask"),
        ((np.ones((2, 2), bool),), 2, "mask"),
    ],
)
def test_selection_kind(selection, ndim, kind):
    assert selection_kind(selection, ndim) == kind


@pytest.mark.parametrize(
    "selection, ndim",
    [
        (([0, 1], [1, 2], slice(None)), 3),  # numpy: vectorised + a slice; zarr-python refuses too
        (([0, 1], [1, 2]), 3),
        ((np.array([True, False]), [0, 1]), 2),  # numpy: vectorised; zarr-python: orthogonal
        ((np.array([[0, 1]]), slice(None)), 2),
    ],
)
def test_selection_kind_refuses_ambiguous_mixtures(selection, ndim):
    with pytest.raises(SelectionError, match=r"\.oindex.*\.vindex"):
        selection_kind(selection, ndim)


# -- against numpy, at random ----------------------------------------------------
@st.composite
def coordinate_case(draw):
    shape = tuple(draw(st.lists(st.integers(1, 9), min_size=1, max_size=3)))
    chunks = tuple(draw(st.integers(1, 5)) for _ in shape)
    bshape = tuple(draw(st.lists(st.integers(0, 4), max_size=2)))
    selection = []
    for n in shape:
        if draw(st.booleans()) and draw(st.booleans()):
            selection.append(draw(st.integers(-n, n - 1)))
            continue
        # a shape that broadcasts to bshape: a suffix of it, some axes set to 1
        suffix = bshape[len(bshape) - draw(st.integers(0, len(bshape))):]
        sub = tuple(1 if draw(st.booleans()) else s for s in suffix)
        values = draw(st.lists(st.integers(-n, n - 1), min_size=int(np.prod(sub)), max_size=int(np.prod(sub))))
        selection.append(np.array(values, dtype=int).reshape(sub))
    return shape, chunks, tuple(selection)


@settings(max_examples=150, deadline=None)
@given(coordinate_case(), st.data())
def test_random_coordinates_match_numpy(case, data):
    shape, chunks, selection = case
    a = np.arange(int(np.prod(shape))).reshape(shape)
    ix = CoordinateIndexer(selection, shape, chunks)
    expected = numpy_points(a, selection)
    np.testing.assert_array_equal(gather(a, ix), expected)
    # writes: numpy's assignment, repeated points included (the last value wins)
    value = np.arange(expected.size).reshape(expected.shape) + 10**6
    reference = a.copy()
    reference[tuple(selection)] = value.reshape(reference[tuple(selection)].shape)
    np.testing.assert_array_equal(scatter(a, ix, value), reference)


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_random_masks_match_numpy(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 7), min_size=1, max_size=3)))
    chunks = tuple(data.draw(st.integers(1, 4)) for _ in shape)
    density = data.draw(st.sampled_from([0.0, 0.1, 0.5, 1.0]))
    mask = np.random.default_rng(data.draw(st.integers(0, 2**16))).random(shape) < density
    a = np.arange(mask.size).reshape(shape)
    ix = CoordinateIndexer.from_mask(mask, shape, chunks)
    np.testing.assert_array_equal(gather(a, ix), a[mask])
    reference = a.copy()
    reference[mask] = -a[mask]
    np.testing.assert_array_equal(scatter(a, ix, -a[mask]), reference)
