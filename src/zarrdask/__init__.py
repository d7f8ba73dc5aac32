"""zarrdask: Zarr v2 and v3 from the specification up, exposed through dask and xarray."""

from __future__ import annotations

from . import errors
from .core.api import create_array, group, open, open_array, open_group
from .core.array import Array
from .core.consolidated import consolidate_metadata
from .core.group import Group
from .core.options import EngineOptions
from .dask import from_zarr, to_zarr
from . import xarray  # noqa: E402  (registers the ``Dataset.zarrdask`` accessor)
from .storage import FsspecStore, LocalStore, MemoryStore, ObstoreStore, ReferenceStore, ZipStore, store_from

# Load the built-in codec modules now (the registry still looks them up lazily and
# registers nothing here): opening an array then costs no imports, which
# matters for the first small read after opening.
from .codecs import blosc_codec, bytes_codec, crc32c_codec, gzip_codec, transpose, zstd_codec  # noqa: F401,E402
from .codecs.sharding import codec as _sharding_codec  # noqa: F401,E402

__version__ = "0.1.0"

__all__ = [
    "Array",
    "Group",
    "EngineOptions",
    "create_array",
    "open_array",
    "open_group",
    "group",
    "open",
    "consolidate_metadata",
    "from_zarr",
    "to_zarr",
    "errors",
    "MemoryStore",
    "LocalStore",
    "ZipStore",
    "FsspecStore",
    "ReferenceStore",
    "ObstoreStore",
    "store_from",
    "rechunk",
    "convert",
    "RechunkPlanError",
]


def __getattr__(name: str) -> object:
    # zarrdask.rechunk and zarrdask.convert are imported on first use: the
    # workflows layer is not loaded by `import zarrdask`
    if name in ("rechunk", "convert", "RechunkPlanError"):
        from . import workflows

        return getattr(workflows, name)
    raise AttributeError(f"module 'zarrdask' has no attribute {name!r}")
