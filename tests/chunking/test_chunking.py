from __future__ import annotations

import pytest

from zarrdask.chunking import ChunkKeyEncoding, RegularGrid
from zarrdask.errors import MetadataError


def test_default_encoding():
    enc = ChunkKeyEncoding("default", "/")
    assert enc.encode((1, 23, 45)) == "c/1/23/45"
    assert enc.encode(()) == "c"
    assert ChunkKeyEncoding("default", ".").encode((1, 2)) == "c.1.2"
    assert enc.decode("c/1/23/45") == (1, 23, 45)
    assert enc.decode("zarr.json") is None


def test_v2_encoding():
    enc = ChunkKeyEncoding("v2", ".")
    assert enc.encode((1, 23, 45)) == "1.23.45"
    assert enc.encode(()) == "0"
    assert ChunkKeyEncoding("v2", "/").encode((1, 2)) == "1/2"
    assert enc.decode("1.23.45") == (1, 23, 45)
    assert enc.decode(".zarray") is None


def test_bad_encoding():
    with pytest.raises(MetadataError, match="separator"):
        ChunkKeyEncoding("default", "-")
    with pytest.raises(MetadataError, match="name"):
        ChunkKeyEncoding("other", "/")


def test_grid():
    g = RegularGrid((10, 7), (4, 7))
    assert g.grid_shape == (3, 1) and g.nchunks == 3
    assert g.chunk_region((2, 0)) == (slice(8, 10), slice(0, 7))
    assert list(g.all_chunk_coords()) == [(0, 0), (1, 0), (2, 0)]
    assert RegularGrid((), ()).nchunks == 1
    assert RegularGrid((0,), (5,)).nchunks == 0
