"""Storage: the key → bytes stores zarrdask reads and writes (layer L1).

A store maps string keys to byte values (Zarr v2 spec "Storage"; zarr-specs v3
core "Stores"); the interface is :class:`Store`. Backends: :class:`MemoryStore`,
:class:`LocalStore` (v3 "File system store"), :class:`ZipStore`,
:class:`FsspecStore` (S3, GCS, HTTP, ... through fsspec), :class:`ReferenceStore`
(kerchunk / VirtualiZarr references, read-only), :class:`ZarrPythonStore`
(any zarr-python 3 store), :class:`IcechunkSessionStore` (an icechunk session
or its store), :class:`ObstoreStore` (any obstore store: S3, GCS, Azure, HTTP,
local, memory); :class:`MemoryStore` also takes any mutable mapping.
Wrappers: :class:`ReadOnlyStore` (:func:`read_only`), :class:`PrefixStore`,
:class:`CountingStore`. :func:`store_from` turns a path, URL, zarr-python
store, icechunk session, obstore store, fsspec mapper or file system, or
mapping into a store; ``s3://``, ``gs://``, ``az://`` and ``http(s)://`` URLs
become an :class:`ObstoreStore` or an :class:`FsspecStore` as the setting
``url_store`` says (:mod:`~zarrdask.storage.obstore_urls`).

Every store also reads one value in several steps from one version of it
(``Store.reader`` → :class:`ValueReader`, a :class:`RangeReader`: the one
protocol for reading byte ranges of a value, :mod:`~zarrdask.storage.readers`)
and locks keys for read-modify-write (``Store.locked``); remote stores retry
transient failures (:mod:`~zarrdask.storage.retry`). What a store can do
beyond the required interface it declares by name
(:mod:`~zarrdask.storage.capabilities`). ``docs/guarantees.md`` has the
details per store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .abc import Store
from .byte_range import ByteRequest, OffsetRequest, RangeRequest, SuffixRequest
from .factory import store_from
from .icechunk import IcechunkSessionStore
from .keys import join_path, normalize_path, validate_key
from .local import LocalStore
from .memory import MemoryStore
from .obstore import ObstoreStore
from .readers import RangeReader, ValueReader, VerifyingReader
from .wrappers import CountingStore, PrefixStore, ReadOnlyStore, read_only
from .zarr_python import ZarrPythonStore
from .zip import ZipStore

if TYPE_CHECKING:
    from .fsspec import FsspecStore
    from .references import ReferenceStore

__all__ = [
    "Store",
    "RangeReader",
    "ValueReader",
    "VerifyingReader",
    "ByteRequest",
    "RangeRequest",
    "OffsetRequest",
    "SuffixRequest",
    "MemoryStore",
    "LocalStore",
    "ZipStore",
    "FsspecStore",
    "ReferenceStore",
    "ZarrPythonStore",
    "IcechunkSessionStore",
    "ObstoreStore",
    "ReadOnlyStore",
    "PrefixStore",
    "CountingStore",
    "read_only",
    "store_from",
    "validate_key",
    "normalize_path",
    "join_path",
]


def __getattr__(name: str) -> Any:
    # the stores over fsspec import it (a tenth of a second) when first asked for
    if name == "FsspecStore":
        from .fsspec import FsspecStore

        return FsspecStore
    if name == "ReferenceStore":
        from .references import ReferenceStore

        return ReferenceStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
