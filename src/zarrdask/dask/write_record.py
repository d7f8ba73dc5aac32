"""The record a resumable write (``resume=True``) keeps in the store while it runs.

A write killed midway (its process, its cluster or its machine gone) is
finished by running the same call again with ``resume=True``: only the blocks
not recorded as finished are computed and written. The record lives under
the store's root, beside the nodes (zarr-specs v3 core, "Stores": keys are
``/``-separated; a name starting with ``.`` is no chunk key and holds no node
metadata, so readers skip it), and is removed when the write completes:

``.zarrdask-writes/<id>/write.json``
    the write's identity and plan (JSON, below) and its state: ``"setup"``
    while the target's metadata (arrays created, resized for an append) is
    being made, ``"ready"`` once it is made and the blocks are being written;
``.zarrdask-writes/<id>/done/<n>/<i>.<j>...``
    one empty value per finished block ``(i, j, ...)`` of the ``n``-th array
    of the write, stored only after every key the block writes was stored (a
    store's ``set`` returns when the value is stored: a file moved into place,
    an object PUT acknowledged).

An array the write *creates* needs no markers on a store whose keys are
written whole (:func:`whole_keys`): its keys did not exist before the write,
every block writes whole shards (chunks), so a block is finished exactly
when the keys of its shards are stored (a shard equal to the fill value is
not stored: its block is computed again, and writes nothing again). A resume
lists the array's keys once instead.

``<id>`` names the target — the node's path, and the region or append
dimension — so concurrent writes of separate regions keep separate records,
and a resume finds its own. The *identity* says what is written: per array,
the source's dask token, the target's metadata (shape, data type, codecs,
chunk grid, fill value, attributes), the region and the append. A resume
whose identity differs from the recorded one is refused
(:class:`~zarrdask.errors.WriteRecordMismatchError`, naming every field that
differs) before anything is written.

A write keeps no record at all without ``resume=True``: it costs what it
always did. With it, a write costs the record (one read and two small writes
before the blocks, one listing and one batched delete after), plus one small
write per block of an array it does not create (or on a store whose keys are
not written whole).

A store whose writes cannot survive a killed writer is refused
(:class:`~zarrdask.errors.ResumeRefusedError`): a zip archive, whose central
directory is written only when it is closed, is unreadable after a kill.
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterable, Mapping

from dask.base import tokenize

from ..errors import ResumeRefusedError, WriteRecordMismatchError
from ..storage import FsspecStore, LocalStore, MemoryStore, ObstoreStore
from ..storage.icechunk import IcechunkSessionStore, session_of
from ..storage.abc import Store
from ..storage.keys import join_path
from ..storage.wrappers import WrapperStore

__all__ = [
    "RECORD_DIR",
    "WriteRecord",
    "array_identity",
    "check_identity",
    "check_resumable",
    "plain_json",
    "record_id",
    "whole_keys",
]

#: the directory (key prefix) at the store's root under which records live
RECORD_DIR = ".zarrdask-writes"
_FORMAT = 1
_DOCUMENT = "write.json"
_DONE = "done"
#: the metadata fields of the identity, named in errors as they are in the metadata document
_NOT_COMPARED = ("attributes", "node_type")
#: fsspec protocols whose writes are one PUT of the whole object
_OBJECT_STORES = frozenset({"s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "adl", "oss", "memory"})


def check_resumable(store: Any) -> None:
    """Refuse (:class:`~zarrdask.errors.ResumeRefusedError`) a store on which a
    killed write leaves the rest unreadable: a zip archive (a ``.zip`` path,
    zarrdask's ``ZipStore``, zarr-python's, fsspec's ``zip://``), wrapped or
    not. Checked on the ``store=`` argument before it is opened (opening a zip
    path to write truncates it) and on the store."""
    seen, depth = store, 0
    while seen is not None and depth < 16:
        depth += 1
        name = type(seen).__name__
        text = os.fspath(seen) if isinstance(seen, (str, os.PathLike)) else ""
        if name == "ZipStore" or getattr(seen, "protocol", None) in ("zip", ("zip",)) or \
                str(text).lower().endswith(".zip") or str(text).startswith("zip:"):
            raise ResumeRefusedError(
                f"resume=True cannot be kept on {store!r}: a zip archive written by a process that is killed "
                "has no central directory and cannot be read, so there is nothing to resume. Write to a "
                "directory or an object store with resume=True and zip it afterwards"
            )
        if session_of(seen) is not None or isinstance(seen, IcechunkSessionStore):
            raise ResumeRefusedError(
                f"resume=True cannot be kept in the icechunk session {store!r}: its uncommitted changes live "
                "in the process that holds the session and are lost with it, so a killed write leaves nothing "
                "to resume. Write in parts and commit each (a region or an append per commit) instead"
            )
        seen = getattr(seen, "store", None) or getattr(seen, "zarr_store", None)


def whole_keys(store: Store) -> bool:
    """Whether a value the store holds is whole: a write killed midway leaves the
    old value or none, never part of the new one (docs/guarantees.md, "What is
    atomic"). True for ``LocalStore`` (a temporary file renamed into place),
    ``MemoryStore`` and object stores through fsspec (one PUT); false for
    fsspec's local file system (written in place) and stores zarrdask does not
    know. Wrappers (a prefix, counting) are seen through."""
    while isinstance(store, WrapperStore):
        store = store.store
    if isinstance(store, (LocalStore, MemoryStore, ObstoreStore)):  # ObstoreStore: one PUT, or a rename
        return True
    return isinstance(store, FsspecStore) and store.protocol in _OBJECT_STORES


def record_id(kind: str, path: str, **where: Any) -> str:
    """The id of the record of a write of ``kind`` into the node at ``path``,
    at ``where`` (region, append dimension): the same for the same target."""
    return tokenize(_FORMAT, kind, path, sorted((k, repr(v)) for k, v in where.items()))[:20]


def plain_json(value: Any) -> Any:
    """``value`` as JSON gives it back (tuples as lists, numpy scalars as numbers)."""
    return json.loads(json.dumps(value, sort_keys=True, default=_default))


def _default(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "to_json"):
        return value.to_json()
    return str(value)


def array_identity(
    path: str, source: str, metadata: Mapping[str, Any], attributes: Mapping[str, Any],
    region: Iterable[slice], *, shape: Iterable[int] | None = None, append: Any = None,
) -> dict[str, Any]:
    """What one array's write writes: the data (``source``, a dask token or a
    hash of the values), the target (its metadata document, ``shape`` in place
    of the document's when given: the shape before an append), the region."""
    doc = {k: v for k, v in metadata.items() if k not in _NOT_COMPARED}
    if shape is not None:
        doc["shape"] = list(shape)
    return plain_json({
        "path": path,
        "source": source,
        **{f"metadata {k}": v for k, v in doc.items()},
        "attributes": dict(attributes),
        "region": [[s.start, s.stop] for s in region],
        "append": append,
    })


def check_identity(recorded: Mapping[str, Any], current: Mapping[str, Any], where: str) -> None:
    """Raise :class:`~zarrdask.errors.WriteRecordMismatchError` naming every
    field in which ``current`` (this call's identity) differs from ``recorded``."""
    current = plain_json(current)
    differ = _differences(recorded, current, "")
    if differ:
        shown = "; ".join(differ[:8]) + (f"; and {len(differ) - 8} more" if len(differ) > 8 else "")
        raise WriteRecordMismatchError(
            f"{where}: resume=True found an unfinished write of other data or settings, so it cannot finish it "
            f"with this call ({shown}). Nothing was written. Run the call that started it with resume=True to "
            "finish it, or write without resume=True (mode='w' replaces the target)"
        )


def _differences(recorded: Any, current: Any, field: str) -> list[str]:
    if isinstance(recorded, dict) and isinstance(current, dict) and ("path" in recorded or not field):
        out = []
        where = f"array {recorded.get('path', '')!r} " if "path" in recorded else ""
        for key in sorted(set(recorded) | set(current)):
            a, b = recorded.get(key), current.get(key)
            if a != b:
                out.extend(_differences(a, b, f"{where}{key}") if key == "arrays" else [_one(f"{where}{key}", a, b)])
        return out
    if isinstance(recorded, list) and isinstance(current, list) and field.endswith("arrays"):
        if len(recorded) != len(current):
            names = lambda docs: [d.get("path") for d in docs]  # noqa: E731
            return [_one("arrays written", names(recorded), names(current))]
        return [d for a, b in zip(recorded, current) for d in _differences(a, b, "")]
    return [_one(field, recorded, current)]


def _one(field: str, recorded: Any, current: Any) -> str:
    return f"{field}: recorded {_short(recorded)}, now {_short(current)}"


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 120 else text[:117] + "..."


class WriteRecord:
    """The record of one write in ``store`` (see the module documentation)."""

    def __init__(self, store: Store, write_id: str) -> None:
        self.store = store
        self.id = write_id
        self.prefix = join_path(RECORD_DIR, write_id) + "/"

    def __repr__(self) -> str:
        return f"<WriteRecord {self.prefix!r} in {self.store!r}>"

    @property
    def key(self) -> str:
        """The key of the record's document."""
        return self.prefix + _DOCUMENT

    def read(self) -> dict[str, Any] | None:
        """The recorded document, or ``None`` when there is no record."""
        raw = self.store.get(self.key)
        if raw is None:
            return None
        try:
            doc = json.loads(bytes(raw))
        except ValueError:
            doc = None
        if not isinstance(doc, dict) or doc.get("zarrdask_write_record") != _FORMAT or "identity" not in doc:
            raise WriteRecordMismatchError(
                f"{self.key!r}: this is not the record of a zarrdask write this version can resume (found "
                f"{bytes(raw)[:80]!r}, expected a JSON document with 'zarrdask_write_record': {_FORMAT}); "
                f"delete the prefix {self.prefix!r} and write without resume=True"
            )
        return doc

    def save(self, identity: Mapping[str, Any], state: str, plan: Mapping[str, Any] | None = None) -> None:
        """Store the record's document (``state``: ``"setup"`` or ``"ready"``)."""
        doc = {"zarrdask_write_record": _FORMAT, "state": state, "identity": identity, "plan": dict(plan or {})}
        self.store.set(self.key, json.dumps(plain_json(doc), sort_keys=True).encode())

    def marker(self, array: int, index: Iterable[int]) -> str:
        """The key recording that block ``index`` of the ``array``-th array is written."""
        return f"{self.prefix}{_DONE}/{array}/{'.'.join(map(str, index)) or '0'}"

    def finished(self, blocks: Mapping[int, Iterable[tuple[int, ...]]]) -> set[tuple[int, tuple[int, ...]]]:
        """The ``(array, block index)`` pairs recorded as written, among ``blocks``
        (every block of each array): one listing, or one batched read of the
        markers on a store that cannot list."""
        if self.store.listable:
            done = set()
            for key in self.store.list_prefix(f"{self.prefix}{_DONE}/"):
                array, _, index = key[len(self.prefix) + len(_DONE) + 1:].partition("/")
                try:
                    done.add((int(array), tuple(int(i) for i in index.split(".")) if index else ()))
                except ValueError:
                    continue
            return done
        wanted = [(n, tuple(i)) for n, indices in blocks.items() for i in indices]
        found = self.store.get_many([self.marker(n, i) for n, i in wanted])
        return {w for w, value in zip(wanted, found) if value is not None}

    def remove(self, blocks: Mapping[int, Iterable[tuple[int, ...]]] | None = None) -> None:
        """Delete the record — the write is complete: its markers first, its
        document last, so that a removal cut short leaves a record that the next
        resume finishes and removes. ``blocks``: every block of the arrays
        whose markers there may be, to delete them by name (``None``: list them)."""
        if blocks is None:
            markers = [k for k in self.store.list_prefix(self.prefix) if k != self.key]
        else:
            markers = [self.marker(n, i) for n, indices in blocks.items() for i in indices]
        self.store.delete_many(markers)
        self.store.delete(self.key)
