"""xarray integration: the ``engine="zarrdask"`` backend."""

from .backend import ZarrdaskBackendArray, ZarrdaskBackendEntrypoint, ZarrdaskDataStore

__all__ = ["ZarrdaskBackendEntrypoint", "ZarrdaskBackendArray", "ZarrdaskDataStore"]
