"""The xarray backend ``engine="zarrdask"``: Zarr groups as Datasets.

It opens what xarray's own ``engine="zarr"`` opens, and opens it the same way
(xarray's "Zarr encoding specification" page is the reference):

- dimensions come from ``dimension_names`` (Zarr v3; a 0-d array needs none, and
  a ``null`` name is the dimension ``None``, as engine="zarr" gives it) or the
  ``_ARRAY_DIMENSIONS`` attribute (Zarr v2), which is hidden from the
  variable's attributes together with NetCDF's ``_nc*`` attributes;
- CF decoding (scale/offset, ``_FillValue``, times, ``_Unsigned``, strings,
  coordinates) is xarray's own, through ``StoreBackendEntrypoint``;
  but the small types xarray's coders cannot take (``bfloat16``, ``float8_*``,
  ``float4_e2m1fn``, ``int4``, ``complex_bfloat16``, …) have their ``_FillValue``
  masked here, as xarray masks ``float16`` and ``int8`` (:mod:`.small_types`);
- the Zarr fill value masks data where xarray's engine does:
  ``use_zarr_fill_value_as_mask=None`` means True for v2 (``fill_value``
  becomes ``_FillValue``) and False for v3 (``_FillValue`` is a CF attribute of
  its own and the array's ``fill_value`` goes to ``encoding["fill_value"]``);
- consolidated metadata is looked for at the root of the store
  (``consolidated=None``: used when present, otherwise the members are listed
  and a ``RuntimeWarning`` says so, as engine="zarr" does; ``True``: required;
  ``False``: not read; stores whose ``supports_consolidated_metadata`` is
  false are never asked).

Variables are lazy: opening reads metadata only, and every read goes through
the chunk engine. ``encoding`` holds what the writers need to write the
variable again the same way, in a form both zarrdask's writer and xarray's
``to_zarr`` (zarr-python) accept unchanged: ``chunks`` (the inner chunk shape),
``shards``, ``preferred_chunks`` (the shard shape of sharded arrays, so
``chunks={}`` gives one dask chunk per shard; along an axis of 10,000 units or
more, their sizes as one tuple all variables share: :data:`SHARED_EDGES_FROM`),
and the codecs: for Zarr v2
``compressors`` and ``filters`` are numcodecs codec objects (as zarr-python
reports them); for Zarr v3 ``serializer``, ``compressors`` and ``filters`` are
:class:`CodecDocument` s — the codecs' JSON documents, readable as attributes
too (``encoding["compressors"][0].cname``).

``filename_or_obj`` may be a path or URL, a zarrdask ``Group``/``Array``/``Store``,
a zarr-python ``Group``/``Array``/``Store``, xarray's ``ZarrStore``, an fsspec
mapper or file system, or any mutable mapping; kerchunk / VirtualiZarr
references open as ``"reference://"`` with ``storage_options={"fo": ...}``, or
as a mapper over (or the) ``ReferenceFileSystem``
(:class:`~zarrdask.storage.references.ReferenceStore`).
"""

from __future__ import annotations

import asyncio
import os
from functools import lru_cache
from typing import Any, Iterable, Mapping

import numpy as np
from xarray import DataTree
from xarray.backends.common import AbstractDataStore, BackendArray, BackendEntrypoint
from xarray.backends.store import StoreBackendEntrypoint
from xarray.backends.zarr import FillValueCoder
from xarray.core import indexing
from xarray.core.utils import FrozenDict
from xarray.core.variable import Variable

from .. import _json
from .._memory import paused_gc
from ..core.api import open_group, resolve_store
from ..core.array import Array
from ..core.group import Group, names_or_none, node_from_docs
from .._pool import io_map
from ..chunking.grid import regular_axis
from ..core.nodes import ZARRAY, NodeDocs, key_of, not_found, read_nodes
from ..errors import GroupNotFoundError, MetadataError, warn
from ..storage.abc import Store
from ..storage.capabilities import STREAMING
from ..storage.keys import normalize_path
from .eager import load_all, read_at_open
from .small_types import decode_fill_attribute, is_small_type, mask_small_type

DIMENSION_KEY = "_ARRAY_DIMENSIONS"

_NO_CONSOLIDATED = (
    "Failed to open Zarr store with consolidated metadata, but successfully read with "
    "non-consolidated metadata. This is typically much slower for opening a dataset. To "
    "silence this warning, consider:\n1. Consolidating metadata in this existing store with "
    "zarrdask.consolidate_metadata().\n2. Explicitly setting consolidated=False, to avoid "
    "trying to read consolidate metadata, or\n3. Explicitly setting consolidated=True, to "
    "raise an error in this case instead of falling back to try reading non-consolidated metadata."
)


class CodecDocument(dict):
    """A Zarr v3 codec as its JSON document (``{"name": ..., "configuration": {...}}``).

    It is a plain ``dict`` to every writer (zarrdask's and zarr-python's accept
    codec documents), and its configuration fields read as attributes, as on
    zarr-python's codec objects: ``doc.cname``, ``doc.clevel``.
    """

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        config = self.get("configuration") or {}
        if name in config:
            return config[name]
        raise AttributeError(f"codec {self.get('name')!r} has no configuration field {name!r}")

    @property
    def name(self) -> str:  # type: ignore[override]
        return self["name"]

    def __eq__(self, other: object) -> bool:
        # equal to a zarr-python codec object with the same document
        if not isinstance(other, dict) and callable(getattr(other, "to_dict", None)):
            other = other.to_dict()
        return isinstance(other, dict) and dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]

    def to_dict(self) -> dict[str, Any]:
        """A plain ``dict`` copy of the document."""
        return {k: (dict(v) if isinstance(v, dict) else v) for k, v in self.items()}

    def __reduce__(self) -> Any:
        return (type(self), (self.to_dict(),))


def codec_document(codec: Any) -> CodecDocument:
    """A zarrdask v3 codec as a :class:`CodecDocument`."""
    return CodecDocument(codec.to_json())


class ZarrdaskBackendArray(BackendArray):
    """A lazy, picklable, thread-safe view of one zarrdask array for xarray.

    The array is kept as ``_array`` (xarray treats an ``array`` attribute as a
    wrapped array to unwrap); ``get_array()`` returns it. After :meth:`load`
    (the backend loads, when a dataset is opened, what xarray reads while
    opening it) reads are answered from memory.
    """

    __slots__ = ("_array", "shape", "dtype", "_values")

    def __init__(self, array: Array) -> None:
        self._array = array
        self.shape = array.shape
        self.dtype = array.dtype
        self._values: np.ndarray | None = None

    def load(self) -> None:
        """Read the whole array now; later reads are answered from memory."""
        if self._values is None:
            self._values = self._as_array(self._array.get_basic_selection(Ellipsis))

    def unload(self) -> None:
        """Forget what :meth:`load` read: later reads go to the store again."""
        self._values = None

    @property
    def loaded(self) -> bool:
        """Whether :meth:`load` has read the values."""
        return self._values is not None

    def get_array(self) -> Array:
        return self._array

    def _as_array(self, value: Any) -> np.ndarray:
        # 0-d reads come back as scalars; keep the array's dtype (a str would become "<U")
        return value if isinstance(value, np.ndarray) else np.asarray(value, dtype=self.dtype)

    def _outer(self, key: tuple) -> np.ndarray:
        if self._values is not None:  # a copy: the caller may write into what it gets
            return np.array(indexing.NumpyIndexingAdapter(self._values).oindex[indexing.OuterIndexer(key)])
        if any(isinstance(k, np.ndarray) for k in key):
            return self._as_array(self._array.get_orthogonal_selection(key))
        return self._as_array(self._array.get_basic_selection(key))

    def _points(self, key: tuple) -> np.ndarray:
        if self._values is not None:
            return np.array(self._values[key])
        return self._as_array(self._array.get_coordinate_selection(key))

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        # vectorised (point) selections of integer arrays only read the chunks
        # holding the points (Array.vindex); with slices among them xarray
        # splits the key into an outer selection and an in-memory one
        if isinstance(key, indexing.VectorizedIndexer) and all(isinstance(k, np.ndarray) for k in key.tuple):
            return indexing.explicit_indexing_adapter(
                key, self.shape, indexing.IndexingSupport.VECTORIZED, self._points)
        return indexing.explicit_indexing_adapter(key, self.shape, indexing.IndexingSupport.OUTER, self._outer)

    async def async_getitem(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        # the engine is synchronous (its I/O is batched and its decoding runs on
        # a thread pool): run it in a thread so the event loop stays free
        return await asyncio.to_thread(self.__getitem__, key)


def _nczarr_dimensions(array: Array) -> list[str] | None:
    """The dimension names NCZarr (netCDF-C) keeps in ``.zarray`` under
    ``_NCZARR_ARRAY.dimrefs`` (fully qualified names; their last segment)."""
    raw = array.store.get(key_of(array.path, ZARRAY))
    try:
        refs = _json.loads(raw, key=key_of(array.path, ZARRAY))["_NCZARR_ARRAY"]["dimrefs"]
    except (KeyError, TypeError, ValueError):
        return None
    return [str(r).rstrip("/").rsplit("/", 1)[-1] for r in refs] if isinstance(refs, list) else None


def dims_and_attrs(array: Array, try_nczarr: bool = False) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The array's dimension names and its attributes (for v2 without
    ``_ARRAY_DIMENSIONS`` and NetCDF's ``_nc*`` attributes). With
    ``try_nczarr`` (reads, as engine="zarr" in mode "r"), a v2 array without
    ``_ARRAY_DIMENSIONS`` may name them as NCZarr does."""
    attrs = dict(array.attrs)
    if array.zarr_format == 3:
        dims = tuple(array.dimension_names or ())
        if len(dims) != array.ndim:
            raise KeyError(
                f"array {array.name!r} has dimension_names {array.dimension_names!r} for its "
                f"{array.ndim} dimensions: a name per dimension is required for xarray to determine "
                "variable dimensions (write them with dimension_names=[...] when creating the array)"
            )
        return dims, attrs
    dims = attrs.pop(DIMENSION_KEY, None)
    if dims is None and try_nczarr:
        dims = _nczarr_dimensions(array)
    if dims is None:
        raise KeyError(
            f"array {array.name!r} has no {DIMENSION_KEY!r} attribute"
            + (" and no NCZarr dimension references" if try_nczarr else "")
            + ", which are required for xarray to determine variable dimensions of a Zarr v2 array"
        )
    if not isinstance(dims, (list, tuple)) or len(dims) != array.ndim:
        raise KeyError(
            f"array {array.name!r}: {DIMENSION_KEY} {dims!r} does not name its {array.ndim} dimensions"
        )
    for k in [k for k in attrs if k.lower().startswith("_nc")]:
        del attrs[k]
    return tuple(dims), attrs


#: An axis of at least this many stored units has its ``preferred_chunks`` given
#: as the tuple of their sizes, one object shared by every variable with the
#: same axis, rather than as one int: dask remembers an axis's block offsets by
#: the identity of its chunks tuple, so with one tuple it computes them once per
#: open instead of once per variable (the most of opening a reanalysis-scale
#: store with ``chunks={}``).
SHARED_EDGES_FROM = 10_000


#: the units' sizes along a regular axis: one object per axis (size, unit)
_regular_edges = lru_cache(maxsize=64)(regular_axis)


@lru_cache(maxsize=64)
def _shared(edges: tuple[int, ...]) -> tuple[int, ...]:
    """One object for equal edge tuples (the first seen)."""
    return edges


def _preferred(size: int, unit: Any) -> Any:
    """The preferred chunks of an axis: its unit size, or its shared edges (:data:`SHARED_EDGES_FROM`)."""
    if not isinstance(unit, int):
        return _shared(unit)
    if unit and -(-size // unit) >= SHARED_EDGES_FROM:
        return _regular_edges(size, unit)
    return unit


def array_encoding(array: Array, dims: tuple[Any, ...]) -> dict[str, Any]:
    """The ``encoding`` of a variable read from ``array`` (see the module documentation)."""
    unit = array.shards or array.chunks
    if array.chunk_grid == "rectilinear":  # as engine="zarr": an int for a regular axis, else the edges
        unit = array.layout.grid.compact()
    encoding: dict[str, Any] = {
        "chunks": tuple(array.chunks) if array.shards is not None else unit,
        "preferred_chunks": {d: _preferred(n, u) for d, n, u in zip(dims, array.shape, unit)},
        "shards": unit if array.shards is not None else None,
    }
    if array.dtype.kind == "T":
        encoding["dtype"] = array.dtype
    if array.zarr_format == 2:
        encoding["compressors"] = tuple(array.compressors)
        encoding["filters"] = tuple(array.filters)
    else:
        encoding["compressors"] = tuple(codec_document(c) for c in array.compressors)
        encoding["filters"] = tuple(codec_document(c) for c in array.filters)
        encoding["serializer"] = codec_document(array.serializer)
    return encoding


def array_variable(array: Array, use_zarr_fill_value_as_mask: bool | None = None,
                   try_nczarr: bool = False, backend: ZarrdaskBackendArray | None = None,
                   mask_and_scale: bool = True) -> Variable:
    """The array as a lazy, still CF-encoded xarray Variable, with the encoding
    and the ``_FillValue`` attribute xarray's zarr engine gives it (``backend``:
    the array's :class:`ZarrdaskBackendArray`, if made already). With
    ``mask_and_scale``, the fill values of the small types xarray cannot mask
    (``bfloat16``, ``int4``, …) are masked already (:mod:`.small_types`)."""
    if use_zarr_fill_value_as_mask is None:
        use_zarr_fill_value_as_mask = array.zarr_format == 2
    dims, attrs = dims_and_attrs(array, try_nczarr)
    data = indexing.LazilyIndexedArray(backend if backend is not None else ZarrdaskBackendArray(array))
    encoding = array_encoding(array, dims)
    if use_zarr_fill_value_as_mask:
        if array.fill_value is not None:
            attrs["_FillValue"] = array.fill_value
    else:
        if array.zarr_format == 3:
            encoding["fill_value"] = array.fill_value
        if "_FillValue" in attrs:
            decode = decode_fill_attribute if is_small_type(array.dtype) else FillValueCoder.decode
            attrs["_FillValue"] = decode(attrs["_FillValue"], array.dtype)
    variable = Variable(dims, data, attrs, encoding)
    return mask_small_type(variable, array.basename) if mask_and_scale else variable


class ZarrdaskDataStore(AbstractDataStore):
    """The variables and attributes of one zarrdask group (or of one array), for xarray."""

    def __init__(self, node: Group | Array, use_zarr_fill_value_as_mask: bool | None = None,
                 try_nczarr: bool = True, arrays: list[tuple[str, Array]] | None = None,
                 mask_and_scale: bool | Mapping[str, bool] = True, read_missing_chunks: bool | None = None) -> None:
        """``arrays``: the group's arrays (``(name, array)``), if read already;
        ``mask_and_scale``: as given to xarray (a bool, or one per variable name);
        ``read_missing_chunks``: given to every array (``None``: each keeps its own)."""
        self.group = node if isinstance(node, Group) else None
        self._attrs_of = node
        if isinstance(node, Array):
            self._arrays = [(node.basename or "data", node)]
        elif arrays is not None:
            self._arrays = list(arrays)
        else:
            self._arrays = [(n, a) for n, a in node.members() if isinstance(a, Array)]
        if read_missing_chunks is not None:
            self._arrays = [(n, a.with_config({"read_missing_chunks": read_missing_chunks})) for n, a in self._arrays]
        self._mask = use_zarr_fill_value_as_mask
        self._mask_and_scale = mask_and_scale
        self._nczarr = try_nczarr
        self._backends = {n: ZarrdaskBackendArray(a) for n, a in self._arrays}

    def read_at_open(self, decode_times: Any = True, drop_variables: Iterable[str] = ()
                     ) -> tuple[list[ZarrdaskBackendArray], list[ZarrdaskBackendArray]]:
        """The backend arrays of the variables xarray reads while opening the
        dataset (see :func:`zarrdask.xarray.eager.read_at_open`), not loaded
        yet: ``(index coordinates, others)``."""
        dims = {}
        for n, a in self._arrays:
            try:
                dims[n] = dims_and_attrs(a, self._nczarr)
            except KeyError:  # xarray names the problem when it gets the variables
                continue
        indexes, others = read_at_open(
            {n: (d, attrs, self._backends[n].shape, self._backends[n].dtype) for n, (d, attrs) in dims.items()},
            decode_times=decode_times, drop_variables=drop_variables,
        )
        return ([self._backends[n] for n in indexes if not self._backends[n].loaded],
                [self._backends[n] for n in others if not self._backends[n].loaded])

    def open_store_variable(self, name: str, array: Array) -> Variable:
        mask = self._mask_and_scale
        mask = mask.get(name, True) if isinstance(mask, Mapping) else bool(mask)
        return array_variable(array, self._mask, self._nczarr, self._backends.get(name), mask_and_scale=mask)

    def get_variables(self) -> FrozenDict:
        return FrozenDict((n, self.open_store_variable(n, a)) for n, a in self._arrays)

    def get_attrs(self) -> dict[str, Any]:
        if self.group is None:
            return {}
        return {k: v for k, v in self.group.attrs.items() if not k.lower().startswith("_nc")}

    def get_dimensions(self) -> dict[Any, int]:
        dims: dict[Any, int] = {}
        for _, a in self._arrays:
            for d, n in zip(dims_and_attrs(a, self._nczarr)[0], a.shape):
                if dims.setdefault(d, n) != n:
                    raise ValueError(
                        f"found conflicting lengths for dimension {d} ({n} != {dims[d]}): "
                        f"array {a.name!r} has length {n}, another array {dims[d]}"
                    )
        return dims

    def close(self) -> None:
        pass


# -- what the user passed --------------------------------------------------------
def _as_store(obj: Any, mode: str, storage_options: dict[str, Any] | None) -> tuple[Store, str]:
    """``(store, path)`` for what the user passed as ``filename_or_obj`` (xarray's
    ``ZarrStore`` stands for the zarr-python group it holds)."""
    if type(obj).__name__ == "ZarrStore" and hasattr(obj, "zarr_group"):
        obj = obj.zarr_group
    if isinstance(obj, os.PathLike):
        obj = os.fspath(obj)
    return resolve_store(obj, "", mode, storage_options)


def _open_node(
    filename_or_obj: Any,
    *,
    group: str | None,
    mode: str,
    consolidated: bool | None,
    zarr_format: int | None,
    storage_options: dict[str, Any] | None,
) -> tuple[Group | Array, list[str] | None]:
    """The group (or array) to read, opened as engine="zarr" opens it, and
    the group's listing when it was read with the metadata (else ``None``)."""
    if isinstance(filename_or_obj, (Group, Array)):
        if group:
            if not isinstance(filename_or_obj, Group):
                raise ValueError(f"group={group!r} was given, but {filename_or_obj!r} is an array")
            return filename_or_obj[normalize_path(group)], None
        return filename_or_obj, None
    store, base = _as_store(filename_or_obj, "r" if mode == "r" else "r+" if mode == "r+" else "a",
                            storage_options)
    path = normalize_path("/".join(p for p in (base, normalize_path(group)) if p))
    if mode in ("w", "w-"):
        return open_group(store, path=path, mode=mode, zarr_format=zarr_format), None
    if not getattr(store, "supports_consolidated_metadata", True):
        consolidated = False
    use = consolidated is not False
    root, node, listing = _read_top(store, path, zarr_format, consolidated)
    read_only = mode == "r"
    if use and root is not None and root.node_type == "group" and root.consolidated is not None:
        top = node_from_docs(store, root, read_only=read_only)
        return (top[path] if path else top), None
    if node is None:
        if mode == "a":
            return open_group(store, path=path, mode=mode, zarr_format=zarr_format), None
        raise not_found(GroupNotFoundError, store, path, "group")
    if node.node_type == "group" and node.consolidated is None:
        if consolidated:
            raise MetadataError(
                f"consolidated=True, but the store {store!r} has no consolidated metadata at its root "
                f"or at {'/' + path!r}; write it with zarrdask.consolidate_metadata, or open with "
                "consolidated=None"
            )
        if consolidated is None:
            warn(_NO_CONSOLIDATED, RuntimeWarning)
    return node_from_docs(store, node, read_only=read_only), listing if node.node_type == "group" else None


def _read_top(store: Store, path: str, zarr_format: int | None,
              consolidated: bool | None) -> tuple[NodeDocs | None, NodeDocs | None, list[str] | None]:
    """The root's and the group's documents (consolidated metadata is looked
    for at the root, as engine="zarr" does), in one batch whatever the format;
    on a remote store that can list, unless consolidated metadata is required,
    the group's listing in the same batch (it is needed if there is no
    consolidated metadata, and costs no round trip of its own)."""
    paths = ["", path] if path else [""]
    use = consolidated is not False
    jobs: list[Any] = [lambda: read_nodes(store, paths, zarr_format, consolidated=use, at_once=True)]
    if consolidated is not True and store.listable and STREAMING in store.capabilities:
        jobs.append(lambda: names_or_none(store, path))
    results = io_map(lambda job: job(), jobs)
    found = dict(zip(paths, results[0]))
    return found[""], found[path], results[1] if len(results) > 1 else None


def _members(node: Group | Array, listing: list[str] | None, max_depth: int | None) -> list[tuple[str, Any]]:
    """The members of a group (none for an array)."""
    return list(node.members(max_depth, listing=listing)) if isinstance(node, Group) else []


def _stores_below(root: Group | Array, listing: list[str] | None, use_zarr_fill_value_as_mask: bool | None,
                  mask_and_scale: Any = True, read_missing_chunks: bool | None = None) -> dict[str, "ZarrdaskDataStore"]:
    """A data store for every group at and below ``root`` (keyed ``"/"``,
    ``"/child"``, …), from one walk of the hierarchy."""
    members = _members(root, listing, None)
    groups: dict[str, Group | Array] = {"": root, **{n: m for n, m in members if isinstance(m, Group)}}
    arrays: dict[str, list[tuple[str, Array]]] = {n: [] for n in groups}
    for name, member in members:
        if isinstance(member, Array):
            parent, _, base = name.rpartition("/")
            arrays[parent].append((base, member))
    return {"/" + name: ZarrdaskDataStore(node, use_zarr_fill_value_as_mask, try_nczarr=node.read_only,
                                          arrays=arrays[name] if isinstance(node, Group) else None,
                                          mask_and_scale=mask_and_scale, read_missing_chunks=read_missing_chunks)
            for name, node in groups.items()}


class ZarrdaskBackendEntrypoint(BackendEntrypoint):
    """``xr.open_dataset(path, engine="zarrdask")``; also ``open_datatree`` and
    ``open_groups``. Takes every keyword xarray's ``engine="zarr"`` takes."""

    description = "Open Zarr v2 and v3 stores (sharded or not) with zarrdask"
    url = "https://github.com/zarrdask/zarrdask"
    supports_groups = True
    open_dataset_parameters = (
        "filename_or_obj", "drop_variables", "mask_and_scale", "decode_times", "concat_characters",
        "decode_coords", "decode_timedelta", "use_cftime", "group", "mode", "consolidated",
        "storage_options", "zarr_format", "store", "engine", "use_zarr_fill_value_as_mask",
        "cache_members", "read_missing_chunks", "chunk_cache",
    )

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        if isinstance(filename_or_obj, os.PathLike):
            filename_or_obj = os.fspath(filename_or_obj)
        if not isinstance(filename_or_obj, str):
            return False
        if filename_or_obj.rstrip("/").endswith(".zarr"):
            return True
        if "://" in filename_or_obj and not filename_or_obj.startswith("file://"):
            return False
        root = filename_or_obj[len("file://"):] if filename_or_obj.startswith("file://") else filename_or_obj
        return any(os.path.exists(os.path.join(root, k)) for k in ("zarr.json", ".zgroup", ".zarray", ".zmetadata"))

    def open_dataset(  # type: ignore[override]
        self,
        filename_or_obj: Any,
        *,
        mask_and_scale: bool = True,
        decode_times: Any = True,
        concat_characters: bool = True,
        decode_coords: Any = True,
        drop_variables: str | Iterable[str] | None = None,
        use_cftime: bool | None = None,
        decode_timedelta: Any = None,
        group: str | None = None,
        mode: str = "r",
        consolidated: bool | None = None,
        storage_options: dict[str, Any] | None = None,
        zarr_format: int | None = None,
        store: Any = None,
        engine: Any = None,
        use_zarr_fill_value_as_mask: bool | None = None,
        cache_members: bool = True,
        read_missing_chunks: bool | None = None,
        chunk_cache: bool | str | None = None,
    ) -> Any:
        """Open a group as a Dataset.

        Parameters are those of xarray's ``engine="zarr"``: ``group`` (a path
        inside the store), ``mode`` (``"r"``; ``"r+"``/``"a"`` open writable,
        ``"w"``/``"w-"`` create), ``consolidated`` (see the module
        documentation), ``storage_options`` (fsspec URLs), ``zarr_format``
        (2, 3 or None to detect), ``store`` (an already opened store or group,
        used instead of ``filename_or_obj``), ``use_zarr_fill_value_as_mask``
        (None: True for v2, False for v3) and the CF decoding options.
        ``engine`` is accepted and ignored, as engine="zarr" does;
        ``cache_members`` too: members are read once, when the dataset is opened.
        ``read_missing_chunks=False`` (zarrdask's own): strict reads — loading a
        variable (eagerly or through dask, ``chunks={}``) that needs a chunk
        that is not stored raises :class:`~zarrdask.errors.ChunkNotFoundError`;
        ``None``: the ``zarrdask.config`` setting.
        ``chunk_cache`` (zarrdask's own; xarray's ``cache`` is another thing):
        read the variables through the process's chunk cache — ``True``,
        ``"revalidate"`` or ``False``; ``None``: the setting ``cache``
        (docs/performance.md, "Chunk cache").
        """
        node, listing = _open_node(store if store is not None else filename_or_obj, group=group, mode=mode,
                                   consolidated=consolidated, zarr_format=zarr_format,
                                   storage_options=storage_options)
        arrays = [(n, a) for n, a in _members(node, listing, 0) if isinstance(a, Array)]
        if chunk_cache is not None:
            arrays = [(n, a.with_cache(chunk_cache)) for n, a in arrays]
            node = node.with_cache(chunk_cache) if isinstance(node, Array) else node
        # NCZarr dimension references are looked for when reading only, as engine="zarr" does
        data = ZarrdaskDataStore(node, use_zarr_fill_value_as_mask, try_nczarr=node.read_only,
                                 arrays=arrays if isinstance(node, Group) else None,
                                 mask_and_scale=mask_and_scale, read_missing_chunks=read_missing_chunks)
        return self._datasets(
            {"/": data},
            mask_and_scale=mask_and_scale, decode_times=decode_times, concat_characters=concat_characters,
            decode_coords=decode_coords, drop_variables=drop_variables, use_cftime=use_cftime,
            decode_timedelta=decode_timedelta,
        )["/"]

    @staticmethod
    @paused_gc()  # variables and their decoding make many objects that live on (zarrdask._memory)
    def _datasets(stores: dict[str, "ZarrdaskDataStore"], **decode: Any) -> dict[str, Any]:
        """xarray's Datasets of ``stores``; what xarray reads while it opens them
        is read first, for all of them in one batch (:mod:`zarrdask.xarray.eager`).
        Index coordinates stay in memory (xarray may build the indexes after
        this returns); the values read for time decoding are forgotten once
        the datasets are made (later loads read the store again)."""
        early = [s.read_at_open(decode.get("decode_times", True), decode.get("drop_variables") or ())
                 for s in stores.values()]
        others = [b for _, found in early for b in found]
        load_all([b for found, _ in early for b in found] + others)
        try:
            return {name: StoreBackendEntrypoint().open_dataset(s, **decode) for name, s in stores.items()}
        finally:
            for b in others:
                b.unload()

    def open_groups_as_dict(
        self,
        filename_or_obj: Any,
        *,
        group: str | None = None,
        mode: str = "r",
        consolidated: bool | None = None,
        zarr_format: int | None = None,
        storage_options: dict[str, Any] | None = None,
        use_zarr_fill_value_as_mask: bool | None = None,
        read_missing_chunks: bool | None = None,
        **decode: Any,
    ) -> dict[str, Any]:
        """Every group at and below ``group`` as a Dataset, keyed ``"/"``,
        ``"/child"``, … (paths relative to ``group``); with consolidated
        metadata, one metadata read in all. ``read_missing_chunks`` as for
        :meth:`open_dataset`."""
        root, listing = _open_node(filename_or_obj, group=group, mode=mode, consolidated=consolidated,
                                   zarr_format=zarr_format, storage_options=storage_options)
        stores = _stores_below(root, listing, use_zarr_fill_value_as_mask, decode.get("mask_and_scale", True),
                               read_missing_chunks)
        return self._datasets(stores, **decode)

    def open_datatree(self, filename_or_obj: Any, **kwargs: Any) -> Any:
        """The groups at and below ``group`` as a ``DataTree`` (keywords as
        :meth:`open_groups_as_dict`)."""
        return DataTree.from_dict(self.open_groups_as_dict(filename_or_obj, **kwargs))
