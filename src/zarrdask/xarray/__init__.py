"""xarray integration: the ``engine="zarrdask"`` backend, the Dataset writer
:func:`to_zarr`, and the ``ds.zarrdask`` accessor."""

from .accessor import ZarrdaskAccessor
from .backend import ZarrdaskBackendArray, ZarrdaskBackendEntrypoint, ZarrdaskDataStore
from .writer import to_zarr

__all__ = ["ZarrdaskBackendEntrypoint", "ZarrdaskBackendArray", "ZarrdaskDataStore", "ZarrdaskAccessor", "to_zarr"]
