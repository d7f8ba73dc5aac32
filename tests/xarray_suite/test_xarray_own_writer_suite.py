"""xarray's own zarr backend tests, collected from the installed xarray, with
every ``Dataset.to_zarr``, ``DataArray.to_zarr`` and ``DataTree.to_zarr``
going through :func:`zarrdask.xarray.to_zarr` and everything read back by
xarray's own engine="zarr" (see ``conftest.py``).

Collected: the same tests as ``test_xarray_own_suite.py`` (the reader's run)
that write with ``to_zarr``. Deliberate differences are listed in
``DIFFERENCES`` with their reasons, and on the differences page
(``docs/xarray.md``).
"""

from __future__ import annotations

import inspect

import pytest

pytest.importorskip("xarray")
pytest.importorskip("zarr")

from . import test_xarray_own_suite as _reader  # noqa: E402


def _writes(obj: object) -> bool:
    """Whether a test (function or class) writes through ``to_zarr``
    (directly, or through ``save``/``roundtrip`` and the fixtures that do)."""
    try:
        source = inspect.getsource(obj)  # type: ignore[arg-type]
    except (OSError, TypeError):
        return True
    return "to_zarr" in source or "roundtrip" in source or "self.save" in source or inspect.isclass(obj)


globals().update(_reader.FIXTURES)
globals().update({name: obj for name, obj in _reader.TESTS.items() if _writes(obj)})

_WRITES_RECTILINEAR = (
    "zarrdask writes rectilinear (variable-sized) chunk and shard grids (zarr-extensions chunk-grids/"
    "rectilinear, see docs/rectilinear.md), including the encoding such an array is read with and appends "
    "to one; xarray's writer cannot yet, and these tests expect its TypeError"
)

#: ``"<Class>::<test id>"`` patterns (fnmatch; module-level tests have the class
#: ``-``) → why zarrdask's writer deliberately differs. Each is listed in docs/xarray.md.
DIFFERENCES: dict[str, str] = {
    "TestDataArrayToZarr::*[[]Dict[]]": (
        "a plain dict given as the store holds bytes, as in every MutableMapping store (and zarr-python 2); "
        "zarr-python 3 keeps its own Buffer objects in a dict and cannot read bytes from one, so xarray's "
        "engine='zarr' cannot read the dict back (zarrdask reads both kinds of dict)"
    ),
    "-::test_zarr_closing_internal_zip_store*": (
        "zarrdask writes a path ending in .zip as a zip archive (the store zarr-python's ZipStore reads); "
        "zarr-python 3, through which xarray's engine='zarr' reads the path, takes any path string for a "
        "directory, so it finds no group in the file (it reads the archive given as zarr.storage.ZipStore)"
    ),
    "TestZarrRectilinearChunksRead::test_write_after_read_gives_helpful_error*": _WRITES_RECTILINEAR,
    "TestZarrRectilinearChunksRead::test_append_does_not_resize_before_erroring*": _WRITES_RECTILINEAR,
    "TestZarrRectilinearChunksRead::test_write_rectilinear_shards_blocked*": _WRITES_RECTILINEAR,
    "*::test_avoid_excess_metadata_calls*": (
        "counts the calls xarray's writer and reader make to zarr-python's AsyncGroup.getitem and expects "
        "exactly the writer's one; zarrdask's writer does not go through zarr-python, so the count is 0"
    ),
}
