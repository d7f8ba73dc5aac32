"""Source files for the reference tests and the ways users open references.

``make_dataset`` / ``write_source``: a netCDF4 file written by xarray (its
``netcdf4`` or ``h5netcdf`` engine) and the dataset it holds as that engine
reads it: variables chunked with zlib + shuffle and with fill values (one with
missing values), an integer and a byte variable, a variable-length string
variable, coordinates, attributes and a time axis with units.

``open_references(fo, form, **options)``: ``xr.open_dataset(...,
engine="zarrdask")`` of references through one of :data:`FORMS`: an fsspec
mapper, the ``"reference://"`` URL with ``storage_options``, the
``ReferenceFileSystem`` object, its ``get_mapper("")``, and (for a file
``fo``) the chained ``"reference::<fo>"`` URL.
"""

from __future__ import annotations

import json
import os
from typing import Any, NamedTuple

import fsspec
import numpy as np
import pytest

xr = pytest.importorskip("xarray")
pd = pytest.importorskip("pandas")

#: the ways users hand references to zarrdask
FORMS = ("mapper", "url", "filesystem", "fs_mapper", "chained")


class Source(NamedTuple):
    path: Any  # pathlib.Path of the netCDF4 file
    engine: str  # the xarray engine that wrote it (and reads it back as `expected`)
    expected: Any  # xr.Dataset, loaded


def make_dataset(start: str = "2000-01-01", seed: int = 0, strings: bool = True) -> Any:
    """The dataset every reference test starts from."""
    rng = np.random.default_rng(seed)
    temp = (rng.random((12, 6, 8)) * 30).astype("f4")
    temp[0, 0, :3] = np.nan  # written as the fill value, read back as missing
    ds = xr.Dataset(
        {
            "temp": (("time", "lat", "lon"), temp, {"units": "degC", "long_name": "temperature"}),
            "count": (("time", "lat"), rng.integers(0, 100, (12, 6)).astype("i4")),
            "flag": ("time", rng.integers(0, 3, 12).astype("i1")),
        },
        coords={
            "time": pd.date_range(start, periods=12, freq="D"),
            "lat": np.linspace(-50, 50, 6),
            "lon": np.arange(8, dtype="f8"),
        },
        attrs={"title": "references test", "history": "written by tests/references"},
    )
    if strings:  # variable-length strings (HDF5 vlen str; kerchunk: vlen-utf8, fill_value null)
        ds["station"] = ("lat", np.array([f"station-{i}" for i in range(6)], dtype=object))
    ds.temp.encoding.update(zlib=True, shuffle=True, chunksizes=(4, 3, 8), _FillValue=np.float32(-999.0))
    ds["count"].encoding.update(zlib=True, shuffle=True, chunksizes=(6, 6), _FillValue=np.int32(-1))
    ds.time.encoding.update(units="days since 1999-12-31", calendar="standard")
    return ds


def write_source(path, engine: str, **kwargs: Any) -> Source:
    """Write :func:`make_dataset` to ``path`` with ``engine``; the Source."""
    pytest.importorskip({"netcdf4": "netCDF4", "h5netcdf": "h5netcdf"}[engine])
    make_dataset(**kwargs).to_netcdf(path, engine=engine)
    with xr.open_dataset(path, engine=engine) as ds:
        return Source(path, engine, ds.load())


def kerchunk_refs(path, **kwargs: Any) -> dict:
    """Kerchunk's references (spec version 1) of an HDF5 file (a path or an open file)."""
    hdf = pytest.importorskip("kerchunk.hdf")
    return hdf.SingleHdf5ToZarr(str(path) if isinstance(path, os.PathLike) else path, **kwargs).translate()


def dump(refs: dict, path) -> str:
    """Write references as JSON; the path as a string."""
    path.write_text(json.dumps(refs))
    return str(path)


def open_references(fo: Any, form: str, open_kwargs: dict | None = None, **options: Any) -> Any:
    """The references ``fo`` (reference file system ``options``) opened with
    ``xr.open_dataset(..., engine="zarrdask", **open_kwargs)`` through ``form``."""
    storage_options = {"fo": fo, **options}
    kwargs = {"engine": "zarrdask", **(open_kwargs or {})}
    if form == "mapper":
        obj: Any = fsspec.get_mapper("reference://", **storage_options)
    elif form == "url":
        return xr.open_dataset("reference://", storage_options=storage_options, **kwargs)
    elif form == "filesystem":
        obj = fsspec.filesystem("reference", **storage_options)
    elif form == "fs_mapper":
        obj = fsspec.filesystem("reference", **storage_options).get_mapper("")
    elif form == "chained":
        if not isinstance(fo, str):
            pytest.skip("a chained URL names a reference file")
        return xr.open_dataset(f"reference::{fo}", storage_options={"reference": options}, **kwargs)
    else:
        raise ValueError(form)
    return xr.open_dataset(obj, **kwargs)


def open_with_zarr_python(fo: Any, **options: Any) -> Any:
    """The same references opened by xarray's engine="zarr" (zarr-python)."""
    pytest.importorskip("zarr")
    mapper = fsspec.get_mapper("reference://", fo=fo, **options)
    return xr.open_dataset(mapper, engine="zarr", consolidated=False)
