from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from zarrdask.dask.alignment import aligned_chunks, is_aligned, misaligned_blocks


def test_aligned_examples():
    assert is_aligned(((4, 4, 2),), (4,), (0,))
    assert not is_aligned(((3, 3, 4),), (4,), (0,))
    assert aligned_chunks(((3, 3, 4),), (4,), (0,)) == ((4, 4, 2),)
    # a region starting inside a unit: boundaries sit on absolute unit edges
    assert aligned_chunks(((5, 5),), (4,), (2,)) == ((6, 4),)
    assert misaligned_blocks(((3, 3, 4), (2,)), (4, 2), (0, 0)) == [(0, 0), (1, 0), (2, 0)]
    assert misaligned_blocks(((4, 4),), (4,), (0,)) == []


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_aligned_chunks_are_aligned_and_cover_the_region(data):
    ndim = data.draw(st.integers(1, 3))
    chunks, unit, start = [], [], []
    for _ in range(ndim):
        sizes = data.draw(st.lists(st.integers(1, 9), min_size=1, max_size=6))
        chunks.append(tuple(sizes))
        unit.append(data.draw(st.integers(1, 8)))
        start.append(data.draw(st.integers(0, 20)))
    chunks = tuple(chunks)
    fixed = aligned_chunks(chunks, unit, start)
    assert is_aligned(fixed, unit, start)
    assert all(sum(a) == sum(b) for a, b in zip(fixed, chunks))
    assert len(fixed[0]) <= len(chunks[0])
    assert (misaligned_blocks(chunks, unit, start) == []) == is_aligned(chunks, unit, start)
    if is_aligned(chunks, unit, start):
        assert fixed == chunks
