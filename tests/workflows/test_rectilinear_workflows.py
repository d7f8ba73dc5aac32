"""rechunk and convert to and from rectilinear chunk grids."""

from __future__ import annotations

import numpy as np
import pytest

import zarrdask
from zarrdask.storage import MemoryStore
from zarrdask.workflows.plan import RechunkPlanError

MONTHS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


@pytest.fixture
def source():
    x = np.arange(365 * 36, dtype="f4").reshape(365, 36)
    return zarrdask.create_array(MemoryStore(), shape=x.shape, chunks=(50, 36), dtype="f4", data=x), x


def test_rechunk_to_rectilinear_one_task_per_chunk(source):
    src, x = source
    plan = zarrdask.rechunk(src, (MONTHS, 18), MemoryStore(), max_mem="10MB")
    assert plan.ntasks == 24
    t = plan.execute(progress=False)
    assert t.chunk_grid == "rectilinear" and t.chunks == (MONTHS, (18, 18))
    np.testing.assert_array_equal(t[...], x)


def test_rechunk_from_rectilinear_and_keeping_it(source):
    src, x = source
    rect = zarrdask.rechunk(src, (MONTHS, 18), MemoryStore(), max_mem="10MB").execute(progress=False)
    regular = zarrdask.rechunk(rect, (100, 36), MemoryStore(), max_mem="10MB").execute(progress=False)
    assert regular.chunk_grid == "regular" and regular.chunks == (100, 36)
    np.testing.assert_array_equal(regular[...], x)
    kept = zarrdask.rechunk(rect, None, MemoryStore(), max_mem="10MB").execute(progress=False)
    assert kept.chunks == rect.chunks


def test_rechunk_to_rectilinear_shards(source):
    src, x = source
    t = zarrdask.rechunk(src, (1, 18), MemoryStore(), max_mem="10MB",
                         target_shards=(MONTHS, 36)).execute(progress=False)
    assert t.shards == (MONTHS, (36,)) and t.chunks == (1, 18)
    np.testing.assert_array_equal(t[...], x)


def test_rechunk_rectilinear_over_budget_is_refused(source):
    src, _ = source
    with pytest.raises(RechunkPlanError, match="rectilinear grid"):
        zarrdask.rechunk(src, (MONTHS, 36), MemoryStore(), max_mem=1000)


def test_convert_v2_to_rectilinear_v3_and_back_to_regular(source):
    from zarrdask.workflows import convert

    x = source[1]
    v2 = zarrdask.create_array(MemoryStore(), shape=x.shape, chunks=(50, 36), dtype="f4", zarr_format=2, data=x)
    r = convert(v2, MemoryStore(), chunks=(MONTHS, 18))
    assert r.target.chunk_grid == "rectilinear" and r.ok
    r2 = convert(v2, MemoryStore(), chunks=(1, 18), shards=(MONTHS, 36))
    assert r2.target.shards == (MONTHS, (36,)) and r2.ok
    kept = convert(r.target, MemoryStore())
    assert kept.target.chunks == r.target.chunks and kept.ok
    regular = convert(r.target, MemoryStore(), chunks=(73, 36))
    assert regular.target.chunk_grid == "regular" and regular.ok
    with pytest.raises(ValueError, match="multiple of the inner chunk"):
        convert(v2, MemoryStore(), chunks=(5, 18), shards=(MONTHS, 36))
    with pytest.raises(ValueError, match="zarr_format=3"):
        convert(v2, MemoryStore(), zarr_format=2, chunks=(MONTHS, 18))
