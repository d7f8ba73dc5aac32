"""Typed errors raised by zarrdask.

Every error names what it is about (a store key, a node path, a metadata
field), what was found and what was expected. Each class also derives from the
closest built-in exception, so ``except KeyError`` / ``except ValueError``
written against zarr-python keeps working.
"""

from __future__ import annotations

import inspect
import warnings


__all__ = [
    "ZarrdaskError",
    "StoreError",
    "ValueChangedError",
    "InvalidKeyError",
    "ReadOnlyError",
    "StorageOptionError",
    "IcechunkSessionError",
    "MetadataError",
    "UnknownDataTypeError",
    "UnknownCodecError",
    "SpecValidationError",
    "CodecError",
    "MissingDependencyError",
    "NodeNotFoundError",
    "ArrayNotFoundError",
    "GroupNotFoundError",
    "NodeExistsError",
    "ContainsArrayError",
    "ContainsGroupError",
    "NodeConflictError",
    "CorruptChunkError",
    "ChunkNotFoundError",
    "ChecksumError",
    "SelectionError",
    "BoundsCheckError",
    "UnknownChunkSizesError",
    "ArrayMismatchError",
    "WriteRecordMismatchError",
    "ResumeRefusedError",
    "ZarrdaskWarning",
    "AlignmentWarning",
    "RegionEdgeWarning",
    "warn",
]


class ZarrdaskError(Exception):
    """Base class of every error zarrdask raises on purpose."""

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return str(self.args[0]) if len(self.args) == 1 else super().__str__()


class StoreError(ZarrdaskError, OSError):
    """A store could not carry out an operation."""


class ValueChangedError(StoreError):
    """A value was replaced while a reader was reading it in several steps.

    Raised by a :class:`~zarrdask.storage.abc.ValueReader` whose later
    ``read()`` cannot be served from the version of the value its first
    ``read()`` saw any more (a remote conditional request answered 412, a
    file rewritten in place, a value deleted under a verifying reader).
    ``key`` names the store key; reading again from the start is the remedy.
    """

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class InvalidKeyError(ZarrdaskError, ValueError):
    """A key or logical path is malformed or would escape the store root."""


class ReadOnlyError(ZarrdaskError, PermissionError):
    """A write was attempted on a read-only store, array or group."""


class StorageOptionError(ZarrdaskError, ValueError):
    """A ``storage_options`` entry cannot be applied to the store a URL is
    opened with (an fsspec option obstore has no counterpart of); ``options``
    names each one."""

    def __init__(self, message: str, options: tuple[str, ...] | list[str] = ()) -> None:
        super().__init__(message)
        self.options = tuple(options)


class IcechunkSessionError(ZarrdaskError, ValueError):
    """An icechunk session cannot do what a write or a graph needs of it: be
    forked (icechunk 1.x: it has uncommitted changes), be sent to another process (it is
    writable), or take back forks whose changes would overwrite each other.
    A ``ValueError``, as icechunk's own refusals are."""


class MetadataError(ZarrdaskError, ValueError):
    """A metadata document is malformed: names the document key and the field."""


class UnknownDataTypeError(MetadataError):
    """A data type is not one zarrdask knows."""


class UnknownCodecError(MetadataError):
    """A codec name / id is not registered."""


class CodecError(ZarrdaskError, ValueError):
    """A codec was misconfigured or could not encode or decode."""


class MissingDependencyError(UnknownCodecError, CodecError):
    """A codec is known, but the optional package it runs on is not installed
    (or not usable): the message names the package and the ``pip install``
    command. Both an :class:`UnknownCodecError` (as a ``numcodecs.<id>``
    codec whose package is missing) and a :class:`CodecError`."""


class SpecValidationError(MetadataError):
    """A ZOM document does not match its JSON Schema; ``errors`` lists every problem."""

    def __init__(self, message: str, errors: tuple[str, ...] | list[str] = ()) -> None:
        super().__init__(message)
        self.errors = tuple(errors)


class NodeNotFoundError(ZarrdaskError, KeyError, FileNotFoundError):
    """No array or group exists at a path, or the store itself does not exist
    (the message says which, and names the store and the path in it).

    A ``FileNotFoundError``, as zarr-python 3 raises in both cases (its own
    ``GroupNotFoundError``/``ArrayNotFoundError`` when the store exists, a plain
    ``FileNotFoundError`` when it does not), and a ``KeyError`` as before."""


class ArrayNotFoundError(NodeNotFoundError):
    """No array exists at a path."""


class GroupNotFoundError(NodeNotFoundError):
    """No group exists at a path."""


class NodeExistsError(ZarrdaskError, FileExistsError):
    """A node already exists where one was to be created."""


class ContainsArrayError(NodeExistsError):
    """An array already exists at the path."""


class ContainsGroupError(NodeExistsError):
    """A group already exists at the path."""


class NodeConflictError(NodeExistsError):
    """Nodes exist where a hierarchy is to be written and differ from it; ``paths`` names each one."""

    def __init__(self, message: str, paths: tuple[str, ...] | list[str] = ()) -> None:
        super().__init__(message)
        self.paths = tuple(paths)


class CorruptChunkError(ZarrdaskError, ValueError):
    """A stored chunk (or shard) could not be decoded into what the metadata says."""


class ChunkNotFoundError(ZarrdaskError, ValueError):
    """A read with ``read_missing_chunks=False`` touched chunks that are not
    stored (zarr-python 3's name; a ``ValueError``, as there).

    The message names the store, the array's path and the missing chunks'
    keys. ``missing`` lists each one as ``(key, inner)``: ``inner`` is
    ``None`` for a chunk or shard missing as a whole, else the grid position of
    an inner chunk whose shard index entry is empty; ``keys`` the distinct keys.
    """

    def __init__(self, message: str, missing: "tuple[tuple[str, tuple[int, ...] | None], ...] | list" = ()) -> None:
        super().__init__(message)
        self.missing = tuple(missing)

    def __reduce__(self) -> tuple:  # across processes (dask, distributed) with what it lists
        return (type(self), (str(self), self.missing))

    @property
    def keys(self) -> tuple[str, ...]:
        """The store keys of the missing chunks (shards, for inner chunks), each once."""
        return tuple(dict.fromkeys(key for key, _ in self.missing))


class ChecksumError(CorruptChunkError):
    """A stored checksum does not match the data."""


class SelectionError(ZarrdaskError, IndexError):
    """A selection is not valid for the array."""


class BoundsCheckError(SelectionError):
    """A selection lies outside the array."""


class UnknownChunkSizesError(ZarrdaskError, ValueError):
    """A dask array with unknown (NaN) chunk sizes was to be written: where each
    block goes is not known until its sizes are computed (``x.compute_chunk_sizes()``)."""


class ArrayMismatchError(ZarrdaskError, ValueError):
    """Keywords that describe a new array were given for writing into an existing
    one they do not describe; names each keyword, its value and the array's."""


class WriteRecordMismatchError(ZarrdaskError, ValueError):
    """A resumed write (``resume=True``) differs from the unfinished write the
    store records: other data, another target or another region. Names every
    field that differs, as recorded and as given; nothing was written."""


class ResumeRefusedError(ZarrdaskError, ValueError):
    """``resume=True`` cannot keep its promise here: the store cannot survive a
    killed writer (a zip archive), or the write would be done twice (an append
    that the store already holds). Nothing was written."""


class ZarrdaskWarning(UserWarning):
    """Base class of the warnings zarrdask emits."""


def _dask_warnings() -> dict[str, type[Warning]]:
    """The warnings that derive from dask's ``PerformanceWarning``, made on first use:
    it lives in ``dask.array.core``, whose import takes about a second, which
    ``import zarrdask`` and the command line do not pay until a dask array is used."""
    from dask.array.core import PerformanceWarning

    class AlignmentWarning(ZarrdaskWarning, PerformanceWarning):
        """A dask array was rechunked so that no two tasks write the same stored object.

        Also a ``dask.array.core.PerformanceWarning``, the warning dask's own
        ``to_zarr`` emits when it rechunks for the same reason, so filters written
        for dask's warning apply to this one.
        """

    class RegionEdgeWarning(AlignmentWarning):
        """A ``region=`` write whose edges cut through shards (chunks when
        unsharded): the task at each such edge reads the stored object, replaces its
        part and writes it back — safe within one write, but not against another
        job writing the neighbouring region at the same time (except across
        processes on a local directory)."""

    for cls in (AlignmentWarning, RegionEdgeWarning):
        cls.__module__, cls.__qualname__ = __name__, cls.__name__
    return {"AlignmentWarning": AlignmentWarning, "RegionEdgeWarning": RegionEdgeWarning}


def __getattr__(name: str) -> type[Warning]:
    # AlignmentWarning and RegionEdgeWarning: defined on first access (see _dask_warnings)
    if name in ("AlignmentWarning", "RegionEdgeWarning"):
        globals().update(_dask_warnings())
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def warn(message: str, category: type[Warning] = ZarrdaskWarning) -> None:
    """Warn, attributing the warning to the first caller outside zarrdask (and
    outside the libraries calling it: dask, xarray), so that it points at the
    user's line and is shown once per place."""
    here = inspect.currentframe()
    frame, level = (here.f_back if here is not None else None), 2  # stacklevel 2: warn()'s caller
    while frame is not None and frame.f_globals.get("__name__", "").partition(".")[0] in (
        "zarrdask", "xarray", "dask", "distributed", "contextlib",
    ):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
