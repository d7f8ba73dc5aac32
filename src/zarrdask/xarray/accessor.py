"""``Dataset.zarrdask`` and ``DataTree.zarrdask``: the writer as an accessor
(``ds.zarrdask.to_zarr(...)``, ``tree.zarrdask.to_zarr(...)``).

Registered when :mod:`zarrdask.xarray` is imported, which ``import zarrdask`` does.
"""

from __future__ import annotations

from typing import Any

import xarray as xr

from .writer import to_zarr


class ZarrdaskAccessor:
    """zarrdask methods on an :class:`xarray.Dataset` or :class:`xarray.DataTree`."""

    def __init__(self, obj: xr.Dataset | xr.DataTree) -> None:
        self._obj = obj

    def to_zarr(self, store: Any = None, **kwargs: Any) -> Any:
        """Write with :func:`zarrdask.xarray.to_zarr` (same keywords)."""
        return to_zarr(self._obj, store, **kwargs)


xr.register_dataset_accessor("zarrdask")(ZarrdaskAccessor)
xr.register_datatree_accessor("zarrdask")(ZarrdaskAccessor)
