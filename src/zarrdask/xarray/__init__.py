"""xarray integration: the ``engine="zarrdask"`` backend, the Dataset writer
:func:`to_zarr`, and the ``ds.zarrdask`` accessor.

The backend and the writer are imported on first use: the accessor's module is
what ``import zarrdask`` loads once xarray is imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .accessor import ZarrdaskAccessor

if TYPE_CHECKING:
    from .backend import ZarrdaskBackendArray, ZarrdaskBackendEntrypoint, ZarrdaskDataStore
    from .writer import to_zarr

__all__ = ["ZarrdaskBackendEntrypoint", "ZarrdaskBackendArray", "ZarrdaskDataStore", "ZarrdaskAccessor", "to_zarr"]


def __getattr__(name: str) -> Any:
    if name in ("ZarrdaskBackendEntrypoint", "ZarrdaskBackendArray", "ZarrdaskDataStore"):
        from . import backend

        return getattr(backend, name)
    if name == "to_zarr":
        from .writer import to_zarr

        return to_zarr
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
