"""``Dataset.zarrdask``: the writer as a Dataset accessor (``ds.zarrdask.to_zarr(...)``).

Registered when :mod:`zarrdask.xarray` is imported, which ``import zarrdask`` does.
"""

from __future__ import annotations

from typing import Any

import xarray as xr

from .writer import to_zarr


@xr.register_dataset_accessor("zarrdask")
class ZarrdaskAccessor:
    """zarrdask methods on an :class:`xarray.Dataset`."""

    def __init__(self, ds: xr.Dataset) -> None:
        self._ds = ds

    def to_zarr(self, store: Any = None, **kwargs: Any) -> Any:
        """Write the dataset with :func:`zarrdask.xarray.to_zarr` (same keywords)."""
        return to_zarr(self._ds, store, **kwargs)
