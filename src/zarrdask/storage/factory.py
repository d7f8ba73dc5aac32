"""Turn what a user passes as ``store=`` into a :class:`~zarrdask.storage.abc.Store`.

Accepted, as in zarr-python's ``StoreLike``:

* a :class:`~zarrdask.storage.abc.Store` — returned unchanged;
* a local path (``str`` or :class:`os.PathLike`) or a ``file://`` URL — a
  :class:`~zarrdask.storage.local.LocalStore` (zarr-specs v3 "File system
  store", "Canonical URI"), or a :class:`~zarrdask.storage.zip.ZipStore` if
  the path ends in ``.zip`` and is not a directory (zarr-python writes
  ``"x.zip"`` as a directory);
* an ``s3://``, ``gs://``, ``az://`` or ``http(s)://`` URL — an
  :class:`~zarrdask.storage.obstore.ObstoreStore` or an ``FsspecStore``, as
  the setting ``url_store`` chooses (``storage_options`` mapped onto
  obstore's options by :mod:`zarrdask.storage.obstore_urls`);
* any other URL (``memory://``, chained ``a::b://``, ...) — an
  :class:`~zarrdask.storage.fsspec.FsspecStore`;
* an icechunk ``Session`` (writable, read-only or a fork) or its ``store``
  (an ``icechunk.IcechunkStore``) — an
  :class:`~zarrdask.storage.icechunk.IcechunkSessionStore` carrying the session
  (read-only sessions and forks pickle, so dask graphs over them run on
  ``distributed`` workers);
* a zarr-python 3 store (``zarr.abc.store.Store``: ``MemoryStore``,
  ``LocalStore``, ``FsspecStore``, ``ZipStore``, wrappers and third-party
  stores) — a :class:`~zarrdask.storage.zarr_python.ZarrPythonStore` over it;
* an obstore store (``obstore.store.S3Store``, ``GCSStore``, ``AzureStore``,
  ``HTTPStore``, ``LocalStore``, ``MemoryStore``) — an
  :class:`~zarrdask.storage.obstore.ObstoreStore` over it (obstore is not
  imported unless such an object is at hand);
* an fsspec mapper (``fsspec.mapping.FSMap``) — an ``FsspecStore`` over its
  file system and root; an fsspec file system object
  (``fsspec.AbstractFileSystem``) — the same over its root (``""``, as
  ``fs.get_mapper("")``);
* kerchunk / VirtualiZarr references — ``"reference://"`` (with
  ``storage_options={"fo": ..., "remote_protocol": ..., ...}``) or a chain
  ``"reference::<url of the references>"``, a mapper over a
  ``ReferenceFileSystem`` or the file system itself — a read-only
  :class:`~zarrdask.storage.references.ReferenceStore`, whatever the mode;
* a ``dict`` or any other ``collections.abc.MutableMapping`` of ``str`` to
  bytes (zarr-python 2 stores, dict-like stores) — a
  :class:`~zarrdask.storage.memory.MemoryStore` using it; a ``dict`` that
  zarr-python 3 has written into (it keeps its ``Buffer`` objects there) goes
  through zarr-python's own ``MemoryStore``, so both libraries can share it.

Modes are zarr-python's: ``"r"`` read only; ``"r+"`` read and write, must
exist; ``"a"`` read and write, created if missing; ``"w"`` create, removing
what exists; ``"w-"`` create, fail if it exists. Stores are opened read-only
for ``"r"`` and writable otherwise; deciding whether a *node* exists, or
removing one for ``"w"``, is left to the caller, except for zip files, where
the mode applies to the file itself (``"w"`` truncates it, ``"w-"`` fails if
it exists, ``"r"``/``"r+"`` need it to exist).
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping
from typing import Any

from .. import config
from ..errors import StorageOptionError, StoreError
from .abc import Store
from .icechunk import IcechunkSessionStore, session_of
from .local import LocalStore
from .memory import MemoryStore
from .obstore import ObstoreStore
from .obstore_requests import is_obstore_store
from .obstore_urls import ObstoreConfigError, obstore_installed, obstore_kind, obstore_store_for_url
from .zarr_python import ZarrPythonStore, is_zarr_python_store, zarr_python_dict_store
from .zip import ZipStore

__all__ = ["store_from", "MODES", "is_url"]

#: zarr-python access modes
MODES = ("r", "r+", "a", "w", "w-")
_ZIP_MODES = {"r": "r", "r+": "a", "a": "a", "w": "w", "w-": "x"}


def is_url(text: str) -> bool:
    """Whether ``text`` is a URL (``s3://...``, chained ``a::b://...``) rather than a local path."""
    return "://" in text or "::" in text


def _local(path: str, mode: str, what: object, storage_options: Any) -> Store:
    if storage_options:
        raise ValueError(
            f"storage_options were given for the local path {what!r}; they only "
            "apply to fsspec URLs such as 's3://...' (got keys "
            f"{sorted(storage_options)})"
        )
    if path.lower().endswith(".zip") and not os.path.isdir(path):  # a directory named *.zip is a directory
        if mode == "r+" and not os.path.exists(path):
            raise StoreError(f"no zip file at {path!r} (mode 'r+' needs an existing file)")
        return ZipStore(path, mode=_ZIP_MODES[mode])
    return LocalStore(path, read_only=mode == "r")


def store_from(x: Any, *, mode: str = "r", storage_options: dict[str, Any] | None = None) -> Store:
    """Make a store from a store, path, URL, zarr-python store, obstore store, fsspec mapper or mapping.

    Parameters
    ----------
    x : Store, str, os.PathLike, icechunk.Session, zarr.abc.store.Store, obstore store, fsspec.mapping.FSMap, fsspec.AbstractFileSystem or MutableMapping
        What to open (see the module documentation).
    mode : {"r", "r+", "a", "w", "w-"}, default "r"
        Access mode; ``"r"`` gives a read-only store (for a zarr-python store,
        over its ``with_read_only(True)`` where it has one).
    storage_options : dict, optional
        Options for URLs (``s3://...`` and the like), as fsspec's file systems
        take them (s3fs, gcsfs, adlfs, HTTP); mapped onto obstore's options
        where obstore serves the URL (setting ``url_store``). Not allowed with
        local paths, stores or mappings.

    Returns
    -------
    Store

    Raises
    ------
    ValueError
        For an unknown mode, or ``storage_options`` with something that is
        not a URL.
    StorageOptionError
        With ``url_store="obstore"``, for an option obstore cannot take.
    TypeError
        If ``x`` is none of the accepted types.

    Examples
    --------
    >>> store_from({"a": b"1"}).get("a")
    b'1'
    >>> store_from("memory://doctest/factory", mode="w")
    FsspecStore('memory://doctest/factory')
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; expected one of {MODES}")
    read_only = mode == "r"
    if isinstance(x, Store):
        _no_storage_options(storage_options, f"storage_options cannot be applied to an existing store {x!r}")
        return x
    if isinstance(x, os.PathLike):
        x = os.fspath(x)
        if isinstance(x, bytes):
            raise TypeError("store_from needs a str path, not bytes")
        return _local(x, mode, x, storage_options)
    if isinstance(x, str):
        return _from_string(x, mode, storage_options)
    return _from_object(x, read_only, storage_options)


def _from_string(x: str, mode: str, storage_options: dict[str, Any] | None) -> Store:
    """A local path or a ``file://`` URL: a local store; any other URL: an fsspec store."""
    if x.startswith("file://") and "::" not in x:
        return _local(x[len("file://"):], mode, x, storage_options)
    if is_url(x):
        # fsspec (a tenth of a second to import) is imported for the URLs that need it
        from .references import ReferenceStore, is_reference_url

        if is_reference_url(x):
            return ReferenceStore(x, storage_options=storage_options)
        return _from_url(x, mode == "r", storage_options)
    return _local(x, mode, x, storage_options)


def _url_store() -> str:
    choice = config.get("url_store")
    if choice not in config.URL_STORES:
        raise ValueError(f"zarrdask setting 'url_store' (environment variable ZARRDASK_URL_STORE) must be one "
                         f"of {config.URL_STORES}, found {choice!r}")
    return choice


def _from_url(url: str, read_only: bool, storage_options: dict[str, Any] | None) -> Store:
    """An ``ObstoreStore`` or an ``FsspecStore`` for a URL, as the setting ``url_store`` chooses."""
    choice = _url_store()
    if choice != "fsspec" and obstore_kind(url) is not None:
        if choice == "obstore":
            if not obstore_installed():
                raise ImportError(f"the zarrdask setting url_store='obstore' needs obstore to open {url!r}; "
                                  "install it (pip install obstore) or set url_store='fsspec'")
            return ObstoreStore(obstore_store_for_url(url, storage_options), read_only=read_only)
        if obstore_installed():  # "auto": obstore when it takes every option given and the configuration
            try:
                inner = obstore_store_for_url(url, storage_options)
            except (StorageOptionError, ObstoreConfigError):
                pass
            else:
                return ObstoreStore(inner, read_only=read_only)
    from .fsspec import FsspecStore

    return FsspecStore(url, storage_options=storage_options, read_only=read_only)


def _from_object(x: Any, read_only: bool, storage_options: dict[str, Any] | None) -> Store:
    """A store over a zarr-python store, an icechunk session, an obstore store, an
    fsspec mapper or file system, or a mapping."""
    if isinstance(x, dict):  # a dict zarr-python wrote into holds its Buffers: read it as zarr-python does
        x = zarr_python_dict_store(x, read_only=read_only) or x
    if session_of(x) is not None:
        _no_storage_options(storage_options, f"storage_options cannot be applied to the icechunk object {x!r}; "
                                             "configure the repository's storage instead")
        return IcechunkSessionStore.over(x, read_only=read_only)
    if is_zarr_python_store(x):
        _no_storage_options(storage_options, f"storage_options cannot be applied to the zarr-python store "
                                             f"{x!r}; configure the store itself")
        return ZarrPythonStore(x, read_only=read_only)
    if is_obstore_store(x):
        _no_storage_options(storage_options, f"storage_options cannot be applied to the obstore store "
                                             f"{x!r}; configure the store itself")
        return ObstoreStore(x, read_only=read_only)
    if "fsspec" in sys.modules and _is_fsspec_object(x):  # no fsspec object without fsspec imported
        from fsspec.mapping import FSMap

        from .fsspec import FsspecStore
        from .references import ReferenceStore, is_reference_fs

        what = "mapper" if isinstance(x, FSMap) else "file system"
        _no_storage_options(storage_options, f"storage_options cannot be applied to an fsspec {what}; "
                                             "configure its file system instead")
        fs, root = (x.fs, x.root) if isinstance(x, FSMap) else (x, "")
        kind = ReferenceStore if is_reference_fs(fs) else FsspecStore
        return kind.from_filesystem(fs, root, read_only=read_only)
    if isinstance(x, MutableMapping):
        _no_storage_options(storage_options, f"storage_options cannot be applied to a mapping "
                                             f"({type(x).__name__}); it is used as the store itself")
        return MemoryStore(x, read_only=read_only)
    raise TypeError(
        f"cannot make a store from a {type(x).__module__}.{type(x).__qualname__}; "
        "expected a zarrdask Store, a path or URL string, an os.PathLike, an icechunk Session, a zarr-python "
        "store (zarr.abc.store.Store), an obstore store (obstore.store.S3Store, LocalStore, ...), an fsspec "
        "mapper (fsspec.mapping.FSMap) or file system (fsspec.AbstractFileSystem), or a dict "
        "or other MutableMapping of str keys to bytes (a zarr-python Array or Group is "
        "accepted as the store of zarrdask.open_array, open_group and friends)"
    )


def _is_fsspec_object(x: Any) -> bool:
    from fsspec.mapping import FSMap
    from fsspec.spec import AbstractFileSystem

    return isinstance(x, (FSMap, AbstractFileSystem))


def _no_storage_options(storage_options: dict[str, Any] | None, message: str) -> None:
    if storage_options:
        raise ValueError(message)
