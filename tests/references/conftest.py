"""Fixtures of the reference tests (helpers: :mod:`._sources`).

source
    A netCDF4 file written by xarray, parametrised over its ``netcdf4`` and
    ``h5netcdf`` engines, and the dataset it holds (:class:`._sources.Source`).
sources
    Two such files (the second twelve days later) for multi-file combines.
"""

from __future__ import annotations

import pytest

from ._sources import Source, write_source


@pytest.fixture(scope="session", params=["netcdf4", "h5netcdf"])
def source(request, tmp_path_factory) -> Source:
    return write_source(tmp_path_factory.mktemp("source") / "data.nc", request.param)


@pytest.fixture(scope="session")
def sources(tmp_path_factory) -> list[Source]:
    root = tmp_path_factory.mktemp("sources")
    return [write_source(root / f"part{i}.nc", "netcdf4", start=start, seed=i)
            for i, start in enumerate(["2000-01-01", "2000-01-13"])]
