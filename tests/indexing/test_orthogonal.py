"""Selections projected onto chunks agree with numpy, for every kind of selection."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zarrdask.errors import BoundsCheckError, SelectionError
from zarrdask.indexing import Indexer


def gather(a: np.ndarray, chunks: tuple[int, ...], selection, allow_arrays=True) -> np.ndarray:
    """Read ``selection`` of ``a`` chunk by chunk, as the engine does."""
    return read_through(Indexer(selection, a.shape, chunks, allow_arrays=allow_arrays), a, chunks)


def read_through(indexer, a: np.ndarray, chunks: tuple[int, ...]) -> np.ndarray:
    """``indexer``'s selection of ``a`` (stored in ``chunks``), chunk by chunk."""
    out = np.full(indexer.out_shape, -1, dtype=a.dtype)
    for p in indexer:
        out[p.out_selection] = p.select(chunk_of(a, p.coords, chunks))
    return out


def chunk_of(a: np.ndarray, coords: tuple[int, ...], chunks: tuple[int, ...]) -> np.ndarray:
    """The chunk at ``coords`` of ``a`` stored in ``chunks`` (padded past the edge)."""
    chunk = np.full(chunks, -2, dtype=a.dtype)
    part = a[tuple(slice(i * c, (i + 1) * c) for i, c in zip(coords, chunks))]
    chunk[tuple(slice(0, n) for n in part.shape)] = part
    return chunk


def orthogonal_reference(a: np.ndarray, selection) -> np.ndarray:
    sel = list(selection) if isinstance(selection, tuple) else [selection]
    if any(s is Ellipsis for s in sel):
        i = next(i for i, s in enumerate(sel) if s is Ellipsis)
        sel = sel[:i] + [slice(None)] * (a.ndim - len(sel) + 1) + sel[i + 1 :]
    sel += [slice(None)] * (a.ndim - len(sel))
    out, axis = a, 0
    for s in sel:
        if isinstance(s, (int, np.integer)):
            out = np.take(out, s, axis=axis)
        else:
            out = out[(slice(None),) * axis + (s,)]
            axis += 1
    return out


A = np.arange(7 * 9 * 5).reshape(7, 9, 5)


@pytest.mark.parametrize(
    "selection",
    [
        (1, slice(None), [4, 0, 2]),
        (slice(None, None, -2), 2, slice(1, 4)),
        (Ellipsis, 3),
        ([6, 1, 1], [8, 0], slice(None)),
        (np.array([True, False] * 3 + [True]), 1, [1, 0]),
        (-1, -2, -3),
        (slice(2, 2),),
        ([3, 3, 2], slice(None, None, 3), [0, 4, 1]),
        (slice(-100, 100, 4), Ellipsis),
        (),
    ],
)
def test_selection_matches_numpy(selection):
    np.testing.assert_array_equal(gather(A, (3, 4, 2), selection), orthogonal_reference(A, selection))


def dim_selection(n: int):
    return st.one_of(
        st.integers(-n, n - 1),
        st.builds(slice, st.none() | st.integers(-n - 2, n + 2), st.none() | st.integers(-n - 2, n + 2),
                  st.none() | st.integers(-4, 4).filter(bool)),
        st.lists(st.integers(-n, n - 1), max_size=6).map(lambda x: np.array(x, dtype=int)),
        st.lists(st.booleans(), min_size=n, max_size=n).map(np.array),
    )


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_random_selections(data):
    shape = tuple(data.draw(st.lists(st.integers(1, 9), min_size=1, max_size=3)))
    chunks = tuple(data.draw(st.integers(1, 5)) for _ in shape)
    a = np.arange(int(np.prod(shape))).reshape(shape)
    selection = tuple(data.draw(dim_selection(n)) for n in shape)
    np.testing.assert_array_equal(gather(a, chunks, selection), orthogonal_reference(a, selection))


def test_errors():
    with pytest.raises(BoundsCheckError, match="dimension 1 of length 9"):
        Indexer((0, 9), (7, 9), (3, 3))
    with pytest.raises(BoundsCheckError):
        Indexer(([0, 7],), (7,), (3,), allow_arrays=True)
    with pytest.raises(SelectionError, match="oindex"):
        Indexer(([0, 1],), (7,), (3,))
    with pytest.raises(SelectionError, match="too many indices"):
        Indexer((0, 0), (7,), (3,))
    with pytest.raises(SelectionError, match="mask"):
        Indexer((np.ones(3, bool),), (7,), (3,), allow_arrays=True)
    with pytest.raises(SelectionError, match="Ellipsis"):
        Indexer((Ellipsis, Ellipsis), (7,), (3,))


def test_complete_chunks():
    ix = Indexer((slice(0, 7),), (7,), (3,))
    assert [p.is_complete for p in ix] == [True, True, True]  # the edge chunk counts as complete
    ix = Indexer((slice(1, 7),), (7,), (3,))
    assert [p.is_complete for p in ix] == [False, True, True]


def test_huge_unsigned_indices_are_out_of_bounds():
    # cast to intp first, 2**64 - 1 would have read as -1: the last element
    with pytest.raises(BoundsCheckError, match="18446744073709551615"):
        Indexer((np.array([2**64 - 1], dtype=np.uint64),), (4,), (2,), allow_arrays=True)


def _projections(indexer) -> list:
    """An indexer's projections as comparable tuples (arrays as lists)."""
    def plain(x):
        if isinstance(x, np.ndarray):
            return ("array", x.tolist())
        if isinstance(x, tuple):
            return tuple(plain(v) for v in x)
        return x
    return [(p.coords, plain(p.chunk_selection), plain(p.out_selection), p.is_complete, plain(p.pre_selection),
             plain(p.dims)) for p in indexer]


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_inner_indexer_takes_the_chunk_selection_as_it_is(data):
    # a shard's inner indexer is built from a projection's `dims`, already
    # normalised within the chunk, without normalising them again: it must
    # project exactly as an indexer normalising them does
    shape = tuple(data.draw(st.lists(st.integers(1, 12), min_size=1, max_size=3)))
    chunks = tuple(data.draw(st.integers(1, 8)) for _ in shape)
    inner = tuple(data.draw(st.integers(1, c)) for c in chunks)
    selection = tuple(data.draw(dim_selection(n)) for n in shape)
    a = np.arange(int(np.prod(shape))).reshape(shape)
    for p in Indexer(selection, shape, chunks, allow_arrays=True):
        fast = p.inner_indexer(chunks, inner)
        slow = Indexer(p.dims, chunks, inner, allow_arrays=True)
        assert fast.out_shape == slow.out_shape
        assert _projections(fast) == _projections(slow)
        # and reading the chunk through the inner indexer gives the chunk's part
        chunk = chunk_of(a, p.coords, chunks)
        np.testing.assert_array_equal(read_through(fast, chunk, inner), p.select(chunk))
