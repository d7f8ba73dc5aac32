"""VirtualiZarr's kerchunk output opens in zarrdask equal to the source file.

The references are made with ``virtualizarr.open_virtual_dataset`` (its HDF
parser and an ``ObjectStoreRegistry`` over obstore's ``LocalStore``) and
written with ``Dataset.vz.to_kerchunk`` as a dict, JSON and parquet.
VirtualiZarr 2.5's HDF parser cannot read variable-length string variables
(it fails on their fill value; fixed later by VirtualiZarr#988), so the
source file here has none.
"""

from __future__ import annotations

import pytest

from ._sources import open_references, open_with_zarr_python, write_source, xr

pytest.importorskip("virtualizarr")
pytest.importorskip("obstore")


@pytest.fixture(scope="module", params=["netcdf4", "h5netcdf"])
def virtual(request, tmp_path_factory):
    """``(source, virtual dataset)`` of a netCDF4 file without string variables."""
    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore
    from virtualizarr import open_virtual_dataset
    from virtualizarr.parsers import HDFParser

    source = write_source(tmp_path_factory.mktemp("virtual") / "data.nc", request.param, strings=False)
    registry = ObjectStoreRegistry({"file://": LocalStore()})
    vds = open_virtual_dataset(f"file://{source.path}", registry=registry, parser=HDFParser(),
                               loadable_variables=[])
    return source, vds


def _written(vds, fmt, tmp_path):
    if fmt == "dict":
        return vds.vz.to_kerchunk(format="dict")
    path = tmp_path / f"refs.{fmt}"
    vds.vz.to_kerchunk(str(path), format=fmt)
    return str(path)


@pytest.mark.parametrize("form", ["mapper", "url"])
@pytest.mark.parametrize("fmt", ["dict", "json", "parquet"])
def test_virtualizarr_references_open_equal_to_the_source(virtual, tmp_path, fmt, form):
    source, vds = virtual
    if fmt == "parquet":
        pytest.importorskip("fastparquet")
    fo = _written(vds, fmt, tmp_path)
    assert all(name in vds.variables for name in source.expected.variables)  # every variable is virtual
    # VirtualiZarr writes each variable's CF _FillValue as an attribute and the
    # HDF5 dataset's fill value as the Zarr fill_value: for a variable without
    # _FillValue that is HDF5's default (0 in files h5netcdf writes), which Zarr
    # v2 readers (engine="zarr" as well) use as a mask unless told not to
    masks = [False] if source.engine == "h5netcdf" else [False, None]
    for mask in masks:
        with open_references(fo, form, {"use_zarr_fill_value_as_mask": mask}) as ds:
            xr.testing.assert_identical(ds.load(), source.expected)


@pytest.mark.parametrize("fmt", ["json", "parquet"])
def test_identical_to_engine_zarr(virtual, tmp_path, fmt):
    _, vds = virtual
    if fmt == "parquet":
        pytest.importorskip("fastparquet")
    fo = _written(vds, fmt, tmp_path)
    with open_references(fo, "url") as ours, open_with_zarr_python(fo) as theirs:
        xr.testing.assert_identical(ours.load(), theirs.load())
