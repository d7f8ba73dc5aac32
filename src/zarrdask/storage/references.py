"""Kerchunk and VirtualiZarr references as a read-only store.

A reference set (fsspec's reference specification, kerchunk documentation
"References specification", versions 0 and 1, stored as JSON or as a
directory of parquet files) maps every Zarr key to its value: inline data
(text, or ``"base64:..."``), a byte range ``[url, offset, length]`` of another
file, or a whole file ``[url]``. Kerchunk (``SingleHdf5ToZarr``,
``MultiZarrToZarr``, ``refs_to_dataframe``) and VirtualiZarr
(``Dataset.vz.to_kerchunk``) write them for netCDF4/HDF5, GRIB, TIFF, ...
files; fsspec's ``ReferenceFileSystem`` resolves them, and
:class:`ReferenceStore` is an :class:`~zarrdask.storage.fsspec.FsspecStore`
over one, with what a reference set needs on top:

* **read-only**: every write raises :class:`~zarrdask.errors.ReadOnlyError`
  naming the key (whatever mode it was opened with), so nothing is ever
  changed in the references or in the files they point into;
* **blocking**: zarrdask calls the file system's blocking methods, so a
  reference file system or target made for asynchronous use
  (``asynchronous=True`` in the options, or a file system object made so,
  as zarr-python needs) is made again with the same options for blocking use;
  targets on S3 (``remote_protocol="s3"``) get a connection pool sized for
  ``io_concurrency``;
* **batched by target file**: ``get_many`` hands every key to one
  ``ReferenceFileSystem.cat`` call, which groups the references by target,
  merges nearby byte ranges and fetches them with one ``cat_ranges`` call on
  the target file system (concurrent requests on S3 and HTTP); ``iter_many``
  (the engine's streaming reads, declared where a target is remote) makes one
  such call per target file, those calls concurrent, and hands the values of
  each over as it completes; ``get_ranges`` is one ``cat_ranges`` call;
* keys without a reference (a chunk never written, a Zarr v3 document probed
  in a v2 reference set, a null row of a parquet reference set) read as
  missing, so missing chunks read as the fill value;
* the parquet layout's ``.zmetadata`` (kerchunk's index: the metadata
  documents and ``record_size``) reads as Zarr v2 consolidated metadata (the
  same documents, with ``zarr_consolidated_format: 1``); the store declares
  ``supports_consolidated_metadata = False`` (every document is in the
  references already), so the xarray backend reads documents directly and
  does not warn about consolidated metadata;
* its :attr:`~ReferenceStore.location` names the reference set (its file's
  absolute URL, or a digest of an in-memory one) and the options that reach
  the targets, so dask tokens of two reference sets never collide, even when
  their metadata is the same.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Hashable, Iterator, Mapping, Sequence
from typing import Any

import fsspec
from fsspec.implementations.reference import LazyReferenceMapper, ReferenceFileSystem
from fsspec.spec import AbstractFileSystem

from .._pool import io_unordered
from ..errors import ReadOnlyError, StoreError
from .byte_range import ByteRequest, slice_ranges
from .capabilities import STREAMING
from .fsspec import FsspecStore, pooled_options, waits_on_network

__all__ = [
    "ReferenceStore",
    "as_consolidated",
    "blocking_fs",
    "blocking_options",
    "fingerprint",
    "is_reference_fs",
    "is_reference_url",
]

#: where kerchunk's parquet layout keeps its index (and zarr v2 its consolidated metadata)
ZMETADATA = ".zmetadata"
#: the options of a reference file system that configure other file systems
_NESTED_OPTIONS = ("remote_options", "target_options", "ref_storage_args")
#: what a failed lookup of a key raises (a parquet reference set parses chunk
#: keys, so a key that is not one raises ValueError)
_NO_REFERENCE = (KeyError, ValueError, TypeError, IndexError)


def is_reference_url(url: str) -> bool:
    """Whether ``url`` opens a reference file system: ``"reference://"`` or a
    chain starting with it (``"reference::s3://bucket/refs.json"``)."""
    first = url.split("::", 1)[0]
    return ("://" in first or "::" in url) and first.split("://", 1)[0] == "reference"


def is_reference_fs(fs: Any) -> bool:
    """Whether ``fs`` is fsspec's ``ReferenceFileSystem``."""
    return isinstance(fs, ReferenceFileSystem)


def _without_async(options: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in options.items() if k != "asynchronous"}


def blocking_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """Reference file system options for blocking use: ``asynchronous``
    dropped from them, from the options of the targets and of the reference
    file (``remote_options``, ``target_options``), from the options of a
    chained URL's ``reference`` part, and target file system objects (``fs``)
    made again for blocking use; targets on S3 get a connection pool for
    ``io_concurrency`` requests (an explicit ``max_pool_connections`` wins)."""
    out = _without_async(options)
    for name in _NESTED_OPTIONS:
        if isinstance(out.get(name), Mapping):
            out[name] = _without_async(out[name])
    if out.get("remote_protocol") in ("s3", "s3a"):
        out["remote_options"] = pooled_options("s3://", dict(out.get("remote_options") or {}))
    targets = out.get("fs")
    if isinstance(targets, AbstractFileSystem):
        out["fs"] = blocking_fs(targets)
    elif isinstance(targets, Mapping):
        out["fs"] = {
            protocol: blocking_fs(t) if isinstance(t, AbstractFileSystem)
            else _without_async(t) if isinstance(t, Mapping) else t
            for protocol, t in targets.items()
        }
    if isinstance(out.get("reference"), Mapping):  # "reference::..." with per-protocol options
        out["reference"] = blocking_options(out["reference"])
    return out


def blocking_fs(fs: AbstractFileSystem) -> AbstractFileSystem:
    """``fs`` itself, or, if it was made for asynchronous use (its blocking
    methods cannot run), the same file system made again with the same
    arguments for blocking use."""
    if not (getattr(fs, "async_impl", False) and getattr(fs, "asynchronous", False)):
        return fs
    return type(fs)(*fs.storage_args, **blocking_options(fs.storage_options))


def _plain(value: Any) -> Any:
    """A JSON form of what reference file system options hold besides JSON."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return hashlib.sha256(bytes(value)).hexdigest()
    if isinstance(value, LazyReferenceMapper):
        return ["parquet references", value.fs.unstrip_protocol(value.root)]
    if isinstance(value, AbstractFileSystem):
        return [type(value).__qualname__, value.storage_args, value.storage_options]
    if isinstance(value, Mapping):
        return {str(k): v for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return sorted(map(repr, value))
    return repr(value)


def _canonical_fo(fo: str, options: Mapping[str, Any]) -> str:
    """The reference file's URL as seen from anywhere (local paths made absolute)."""
    protocol = options.get("target_protocol") or fsspec.core.split_protocol(fo)[0]
    if protocol in (None, "file", "local") and "::" not in fo:
        return "file://" + os.path.abspath(fsspec.core.strip_protocol(fo))
    return fo


def fingerprint(fs: ReferenceFileSystem) -> str:
    """A digest of what a reference file system reads: its reference set (the
    file's absolute URL, or the references themselves) and every option that
    reaches the targets."""
    options = dict(fs.storage_options)
    if isinstance(options.get("fo"), str):
        options["fo"] = _canonical_fo(options["fo"], options)
    try:
        text = json.dumps([fs.storage_args, options], sort_keys=True, default=_plain)
    except (TypeError, ValueError):  # keys that cannot be sorted: this object only
        return f"object-{id(fs)}"
    return hashlib.sha256(text.encode()).hexdigest()


def as_consolidated(value: bytes) -> bytes:
    """Kerchunk's parquet index (``{"metadata": {...}, "record_size": n}``) as
    Zarr v2 consolidated metadata; anything else unchanged."""
    try:
        doc = json.loads(value)
    except ValueError:
        return value
    if (isinstance(doc, dict) and "record_size" in doc and "zarr_consolidated_format" not in doc
            and isinstance(doc.get("metadata"), dict)):
        return json.dumps({"zarr_consolidated_format": 1, "metadata": doc["metadata"]}).encode()
    return value


class ReferenceStore(FsspecStore):
    """A read-only store over kerchunk / VirtualiZarr references (see the
    module documentation).

    Parameters
    ----------
    url : str, default "reference://"
        ``"reference://"``, or a chain naming the reference file
        (``"reference::s3://bucket/refs.json"``).
    storage_options : dict, optional
        ``ReferenceFileSystem`` options: ``fo`` (the references: a JSON file's
        path or URL, a dict, or a parquet reference directory),
        ``remote_protocol`` and ``remote_options`` (the targets' file system),
        ``target_options`` (for reading ``fo``), ``max_gap``/``max_block``
        (merging of nearby ranges), ...

    Raises
    ------
    StoreError
        If the references cannot be read (no file at ``fo``, not JSON, an
        unknown reference version) or the options are not a reference file
        system's; the message names ``fo``.

    Examples
    --------
    >>> refs = {"version": 1, "refs": {".zgroup": '{"zarr_format": 2}'}}
    >>> store = ReferenceStore(storage_options={"fo": refs})
    >>> store.get(".zgroup")
    b'{"zarr_format": 2}'
    >>> store.writable
    False
    """

    supports_consolidated_metadata = False

    def __init__(self, url: str = "reference://", *, storage_options: dict[str, Any] | None = None) -> None:
        if not isinstance(url, str) or not is_reference_url(url):
            raise ValueError(f"ReferenceStore needs a 'reference://' URL (or 'reference::<url>'), got {url!r}")
        options = storage_options or {}
        if "::" not in url and "fo" not in options:
            raise ValueError(
                f"{url!r} needs the references as storage_options={{'fo': ...}}: a JSON file's path or "
                f"URL, a dict, or a parquet reference directory (got the options {sorted(options)})"
            )
        self.url = url
        self.storage_options = blocking_options(options)
        fs, root = self._open(url, self.storage_options)
        self._setup(fs, root, True)

    @staticmethod
    def _open(url: str, options: dict[str, Any]) -> tuple[Any, str]:
        try:
            return fsspec.core.url_to_fs(url, **options)
        except (OSError, ValueError, TypeError, KeyError) as e:
            fo = options.get("fo", (options.get("reference") or {}).get("fo", url))
            shown = f"<{type(fo).__name__}>" if isinstance(fo, Mapping) else repr(fo)
            raise StoreError(f"cannot open the references {shown} ({url!r}): {type(e).__name__}: {e}") from e

    @classmethod
    def from_filesystem(cls, fs: Any, root: str = "", *, read_only: bool = True) -> ReferenceStore:
        """A store over a ``ReferenceFileSystem`` (made again for blocking use
        if it was made for asynchronous use), rooted at ``root``."""
        if not is_reference_fs(fs):
            raise TypeError(f"ReferenceStore needs an fsspec ReferenceFileSystem, got {type(fs).__name__}")
        return super().from_filesystem(blocking_fs(fs), root, read_only=True)  # type: ignore[return-value]

    def _setup(self, fs: Any, root: str, read_only: bool) -> None:
        super()._setup(fs, root, True)
        self._targets_remote = any(waits_on_network(_unwrapped(t)) for t in fs.fss.values())
        self._location: str | None = None

    @property
    def fs(self) -> Any:
        """The ``ReferenceFileSystem`` (made again lazily after unpickling)."""
        if self._fs is None:
            self._fs, _ = self._open(self.url, self.storage_options)  # type: ignore[arg-type]
        return self._fs

    @property
    def capabilities(self) -> frozenset[str]:
        """``streaming`` where a target is remote; nothing otherwise (never
        ``background_uploads``: nothing is written)."""
        return frozenset({STREAMING}) if self._targets_remote else frozenset()

    def __repr__(self) -> str:
        fo = self.fs.storage_options.get("fo") if self._fs is not None else self.storage_options.get("fo")
        shown = f"<{type(fo).__name__} of references>" if isinstance(fo, Mapping) or fo is None else repr(fo)
        return f"ReferenceStore({shown}{', ' + repr(self.root) if self.root else ''})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ReferenceStore) and self.location == other.location

    def __hash__(self) -> int:
        return hash(self.location)

    @property
    def location(self) -> Hashable:
        """``("reference", digest, root)``: the same for stores over the same
        references reaching the same targets (see :func:`fingerprint`)."""
        if self._location is None:
            self._location = fingerprint(self.fs)
        return ("reference", self._location, self._prefix)

    def _check_writable(self, key: str = "") -> None:
        where = f"; cannot write key {key!r}" if key else ""
        raise ReadOnlyError(
            f"{self!r} is read-only: references point into other files{where} "
            "(write a copy of the data elsewhere instead)"
        )

    # -- reads -------------------------------------------------------------
    def _reference(self, path: str) -> Any:
        """The reference of ``path``, or None if it has none."""
        try:
            return self.fs.references[path]
        except _NO_REFERENCE:
            return None

    def _target(self, reference: Any) -> str | None:
        """The file a reference points into (None: inline data)."""
        if isinstance(reference, (list, tuple)) and reference:
            return str(reference[0] or self.fs.target)
        return None

    def _cat(self, paths: list[str]) -> list[Any]:
        """Whole values of ``paths`` in one ``cat`` call (paths without a
        reference are not asked for: they read as ``None``)."""
        present = [i for i, p in enumerate(paths) if self._reference(p) is not None]
        out: list[Any] = [None] * len(paths)
        if present:
            for i, value in zip(present, super()._cat([paths[i] for i in present])):
                out[i] = value
        return out

    def get_many(self, keys: Sequence[str]) -> list[bytes | None]:
        values = super().get_many(keys)
        for i, key in enumerate(keys):
            if key == ZMETADATA and values[i] is not None:
                values[i] = as_consolidated(values[i])  # type: ignore[arg-type]
        return values

    def iter_many(self, keys: Sequence[str], limit: int | None = None) -> Iterator[tuple[int, bytes | None]]:
        """Values as they arrive: one ``get_many`` call (one
        ``ReferenceFileSystem.cat``) per target file, at most ``limit``
        (default ``io_concurrency``) of them at once; inline values and keys
        without a reference come in one more."""
        groups: dict[str | None, list[int]] = {}
        for i, key in enumerate(keys):
            groups.setdefault(self._target(self._reference(self._path(key))), []).append(i)
        batches = list(groups.values())
        if len(batches) <= 1:
            yield from enumerate(self.get_many(keys))
            return
        get_many = self.get_many
        for b, values in io_unordered(lambda batch: get_many([keys[i] for i in batch]), batches, limit):
            yield from zip(batches[b], values)

    def get_ranges(self, key: str, ranges: Sequence[ByteRequest]) -> list[bytes] | None:
        if key == ZMETADATA:  # read whole: its value is rewritten (as_consolidated)
            value = self.get(key)
            return None if value is None else slice_ranges(value, ranges)
        return super().get_ranges(key, ranges)

    def _size(self, key: str, path: str) -> int | None:
        """Size of a value: an inline value's once decoded (base64), a
        byte range's from its reference, a whole file's from its file system."""
        reference = self._reference(path)
        if reference is None:
            return None
        if self._target(reference) is None:  # inline (the parquet index too)
            value = self.get(key)
            return None if value is None else len(value)
        return super()._size(key, path)


def _unwrapped(fs: Any) -> Any:
    """The file system an fsspec ``AsyncFileSystemWrapper`` wraps (fsspec >=
    2024.12 wraps blocking targets such as local files in one), else ``fs``."""
    inner = getattr(fs, "sync_fs", None)
    return inner if isinstance(inner, AbstractFileSystem) else fs
