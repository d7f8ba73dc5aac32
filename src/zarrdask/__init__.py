"""zarrdask: Zarr v2 and v3 from the specification up, exposed through dask and xarray.

``import zarrdask`` itself imports almost nothing: each name below is imported
on first use (``zarrdask.open_array`` loads the format core, ``zarrdask.from_zarr``
dask, ``zarrdask.rechunk`` the workflows), so the command line and scripts that
need only part of the library start fast. The ``Dataset.zarrdask`` accessor is
registered once xarray is imported (now, if it already is).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._xarray_hook import register_when_xarray_is_imported

if TYPE_CHECKING:  # what the names are, for type checkers and editors
    from . import errors
    from .core.api import create_array, group, open, open_array, open_group
    from .core.array import Array
    from .core.consolidated import consolidate_metadata
    from .core.group import Group
    from .core.options import EngineOptions
    from .dask import from_zarr, to_zarr
    from .storage import FsspecStore, LocalStore, MemoryStore, ObstoreStore, ReferenceStore, ZipStore, store_from
    from .workflows import RechunkPlanError, convert, rechunk

__version__ = "0.1.0"

# name -> the module that defines it
_HOMES = {
    "Array": "core.array",
    "Group": "core.group",
    "EngineOptions": "core.options",
    "create_array": "core.api",
    "open_array": "core.api",
    "open_group": "core.api",
    "group": "core.api",
    "open": "core.api",
    "consolidate_metadata": "core.consolidated",
    "from_zarr": "dask",
    "to_zarr": "dask",
    "MemoryStore": "storage",
    "LocalStore": "storage",
    "ZipStore": "storage",
    "FsspecStore": "storage",
    "ReferenceStore": "storage",
    "ObstoreStore": "storage",
    "store_from": "storage",
    "rechunk": "workflows",
    "convert": "workflows",
    "RechunkPlanError": "workflows",
}
_SUBPACKAGES = ("errors", "config", "core", "storage", "codecs", "metadata", "dask", "xarray", "workflows", "zom", "cli", "testing")

__all__ = ["errors", *_HOMES]

register_when_xarray_is_imported()


def _load_codecs() -> None:
    # the built-in codec modules, with the core: opening an array then costs no
    # imports, which matters for the first small read after opening (the registry
    # still looks them up lazily and registers nothing here)
    from .codecs import blosc_codec, bytes_codec, crc32c_codec, gzip_codec, transpose, zstd_codec  # noqa: F401
    from .codecs.sharding import codec  # noqa: F401


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is not None:
        module = importlib.import_module(f"{__name__}.{home}")
        if home.startswith("core."):
            _load_codecs()
        value = getattr(module, name)
        globals()[name] = value  # found once
        return value
    if name in _SUBPACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'zarrdask' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *_SUBPACKAGES})
