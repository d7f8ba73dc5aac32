"""``Dataset.zarrdask`` and ``DataTree.zarrdask``: the writer as an accessor
(``ds.zarrdask.to_zarr(...)``, ``tree.zarrdask.to_zarr(...)``).

Registered by ``import zarrdask`` when xarray is already imported, else right
after xarray is (:mod:`zarrdask._xarray_hook`). This module imports nothing
heavy, so that registering it costs nothing: the writer is imported when called.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

__all__ = ["ZarrdaskAccessor", "register"]


class ZarrdaskAccessor:
    """zarrdask methods on an :class:`xarray.Dataset` or :class:`xarray.DataTree`."""

    def __init__(self, obj: Any) -> None:
        self._obj = obj

    def to_zarr(self, store: Any = None, **kwargs: Any) -> Any:
        """Write with :func:`zarrdask.xarray.to_zarr` (same keywords)."""
        from .writer import to_zarr

        return to_zarr(self._obj, store, **kwargs)


def register(xr: ModuleType) -> None:
    """Register the accessor on ``xr.Dataset`` and ``xr.DataTree``; a no-op the second time."""
    for cls_name, registrar in (("Dataset", "register_dataset_accessor"), ("DataTree", "register_datatree_accessor")):
        cls = getattr(xr, cls_name, None)
        if cls is not None and "zarrdask" not in vars(cls) and hasattr(xr, registrar):
            getattr(xr, registrar)("zarrdask")(ZarrdaskAccessor)
