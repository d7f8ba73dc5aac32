"""zarrdask: Zarr v2 and v3 from the specification up, exposed through dask and xarray."""

from __future__ import annotations

__version__ = "0.1.0"
