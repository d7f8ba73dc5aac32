"""dask's own zarr tests, collected from the installed dask, with
``da.to_zarr``, ``da.from_zarr`` and ``Array.to_zarr`` routed to zarrdask
(see ``conftest.py``).

Collected: every module-level test of ``dask/array/tests/test_array_core.py``
whose name contains "zarr" (which covers ``test_read_zarr_chunks``,
``test_from_zarr_*``, ``test_to_zarr_unknown_chunks_raises`` and
``test_compute_chunk_sizes_warning_fixes_to_zarr``, with its ``unknown``
fixture); no other test of that module mentions zarr. Left out, with why:

- ``test_from_array_respects_zarr_shards`` tests ``da.from_array`` on a
  zarr-python array: nothing in it is routed to zarrdask.
- ``dask/array/tests/test_xarray.py`` (other module) writes through xarray, not
  through ``da.to_zarr``.
"""

from __future__ import annotations

import inspect

import pytest

pytest.importorskip("zarr")

from dask.array.tests import test_array_core as _tac  # noqa: E402

_LEFT_OUT = {"test_from_array_respects_zarr_shards"}


def _zarr_tests(module: object) -> dict[str, object]:
    return {
        name: obj for name, obj in vars(module).items()
        if name.startswith("test") and "zarr" in name and name not in _LEFT_OUT
        and inspect.isfunction(obj) and obj.__module__ == module.__name__
    }


globals().update(_zarr_tests(_tac))
unknown = _tac.unknown  # the fixture of test_compute_chunk_sizes_warning_fixes_to_zarr

_ONE_BLOCK_PER_SHARD = (
    "one dask block per shard: zarrdask rechunks 3x3 blocks that cut through 18x18 (12x12) shards to "
    "whole shards before writing, with an AlignmentWarning (an error under dask's warning filter), where "
    "dask writes them as they are and several tasks read-modify-write each shard (losing writes unless "
    "they are all fill value); and zarrdask.from_zarr reads one block per shard where dask reads one per "
    "inner chunk. The test asserts dask's chunks"
)

#: test id patterns (fnmatch) → why zarrdask deliberately differs. Each is listed in
#: docs/differences.md.
DIFFERENCES: dict[str, str] = {
    "test_zarr_sharding_roundtrip[[]chunks0-shards0[]]": _ONE_BLOCK_PER_SHARD,
    "test_zarr_sharding_roundtrip[[]chunks1-shards1[]]": _ONE_BLOCK_PER_SHARD,
}
