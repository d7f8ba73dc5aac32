"""The xarray backend ``engine="zarrdask"``: Zarr groups as Datasets.

Dimensions come from ``dimension_names`` (Zarr v3) or the ``_ARRAY_DIMENSIONS``
attribute (Zarr v2, xarray's convention), which is hidden from the variable's
attributes. CF decoding (scale/offset, ``_FillValue``, times, ``_Unsigned``,
strings, coordinates) is xarray's own, through ``StoreBackendEntrypoint``. The
fill value is handled as xarray's zarr engine does: for v2 the array's
``fill_value`` becomes ``_FillValue``; for v3 ``_FillValue`` is a CF attribute
of its own.

Variables are lazy: opening reads metadata only, and every read goes through
the chunk engine. ``encoding["preferred_chunks"]`` is the shard shape of
sharded arrays (the chunk shape otherwise), so ``chunks={}`` gives one dask
chunk per shard.
"""

from __future__ import annotations

import os
from typing import Any, Iterable

import numpy as np
from xarray.backends.common import AbstractDataStore, BackendArray, BackendEntrypoint
from xarray.backends.store import StoreBackendEntrypoint
from xarray.core import indexing
from xarray.core.utils import FrozenDict
from xarray.core.variable import Variable

from ..core.api import open_group
from ..core.array import Array
from ..core.group import Group

DIMENSION_KEY = "_ARRAY_DIMENSIONS"


class ZarrdaskBackendArray(BackendArray):
    """A lazy, picklable, thread-safe view of one zarrdask array for xarray."""

    def __init__(self, array: Array) -> None:
        self.array = array
        self.shape = array.shape
        self.dtype = array.dtype

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.OUTER, self._outer
        )

    def _outer(self, key: tuple) -> np.ndarray:
        if any(isinstance(k, np.ndarray) for k in key):
            return np.asarray(self.array.get_orthogonal_selection(key))
        return np.asarray(self.array.get_basic_selection(key))


def dims_and_attrs(array: Array) -> tuple[tuple[str, ...], dict[str, Any]]:
    """The array's dimension names and its attributes without ``_ARRAY_DIMENSIONS``."""
    attrs = dict(array.attrs)
    if array.zarr_format == 3:
        dims = array.dimension_names
        if dims is None or len(dims) != array.ndim or any(d is None for d in dims):
            raise KeyError(
                f"array {array.name!r} has no dimension_names for all its {array.ndim} dimensions "
                f"(found {dims!r}); xarray needs one name per dimension"
            )
        return tuple(dims), attrs
    if DIMENSION_KEY not in attrs:
        raise KeyError(
            f"array {array.name!r} has no {DIMENSION_KEY!r} attribute; xarray needs it to name "
            "the dimensions of a Zarr v2 array"
        )
    dims = attrs.pop(DIMENSION_KEY)
    if len(dims) != array.ndim:
        raise KeyError(
            f"array {array.name!r}: {DIMENSION_KEY} {dims!r} has {len(dims)} names for {array.ndim} dimensions"
        )
    return tuple(dims), attrs


def array_variable(array: Array) -> Variable:
    """The array as a lazy, still CF-encoded xarray Variable, with the encoding
    (and the ``_FillValue`` attribute) xarray's zarr engine gives it."""
    from xarray.backends.zarr import FillValueCoder

    dims, attrs = dims_and_attrs(array)
    data = indexing.LazilyIndexedArray(ZarrdaskBackendArray(array))
    unit = array.shards or array.chunks
    encoding: dict[str, Any] = {
        "chunks": array.chunks,
        "preferred_chunks": dict(zip(dims, unit)),
        "shards": array.shards,
        "compressors": array.compressors,
        "filters": array.filters,
        "dtype": array.dtype,
    }
    if array.zarr_format == 2:
        if array.fill_value is not None:
            attrs["_FillValue"] = array.fill_value
    else:
        encoding["serializer"] = array.serializer
        encoding["fill_value"] = array.fill_value
        if "_FillValue" in attrs:
            attrs["_FillValue"] = FillValueCoder.decode(attrs["_FillValue"], array.dtype)
    return Variable(dims, data, attrs, encoding)


class ZarrdaskDataStore(AbstractDataStore):
    """The variables and attributes of one zarrdask group, for xarray."""

    def __init__(self, group: Group) -> None:
        self.group = group
        self._arrays = [(n, a) for n, a in group.members() if isinstance(a, Array)]

    def open_store_variable(self, name: str, array: Array) -> Variable:
        return array_variable(array)

    def get_variables(self) -> FrozenDict:
        return FrozenDict((n, array_variable(a)) for n, a in self._arrays)

    def get_attrs(self) -> dict[str, Any]:
        return {k: v for k, v in self.group.attrs.items() if not k.lower().startswith("_nc")}

    def get_dimensions(self) -> dict[str, int]:
        dims: dict[str, int] = {}
        for _, a in self._arrays:
            for d, n in zip(dims_and_attrs(a)[0], a.shape):
                if dims.setdefault(d, n) != n:
                    raise ValueError(
                        f"dimension {d!r} has length {n} in array {a.name!r} but {dims[d]} elsewhere"
                    )
        return dims

    def close(self) -> None:
        pass


def _open_group(filename_or_obj: Any, group: str | None, zarr_format: int | None,
                storage_options: dict[str, Any] | None, consolidated: bool | None) -> Group:
    if isinstance(filename_or_obj, Group):
        return filename_or_obj[group] if group else filename_or_obj
    if isinstance(filename_or_obj, os.PathLike):
        filename_or_obj = os.fspath(filename_or_obj)
    return open_group(filename_or_obj, path=group or "", mode="r", zarr_format=zarr_format,
                      storage_options=storage_options, consolidated=consolidated)


class ZarrdaskBackendEntrypoint(BackendEntrypoint):
    """``xr.open_dataset(path, engine="zarrdask")``."""

    description = "Open Zarr v2 and v3 stores (sharded or not) with zarrdask"
    url = "https://github.com/zarrdask/zarrdask"
    open_dataset_parameters = (
        "filename_or_obj", "drop_variables", "mask_and_scale", "decode_times", "concat_characters",
        "decode_coords", "decode_timedelta", "use_cftime", "group", "consolidated", "zarr_format",
        "storage_options",
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
        drop_variables: str | Iterable[str] | None = None,
        mask_and_scale: bool = True,
        decode_times: bool = True,
        concat_characters: bool = True,
        decode_coords: bool = True,
        decode_timedelta: bool | None = None,
        use_cftime: bool | None = None,
        group: str | None = None,
        consolidated: bool | None = None,
        zarr_format: int | None = None,
        storage_options: dict[str, Any] | None = None,
    ) -> Any:
        root = _open_group(filename_or_obj, group, zarr_format, storage_options, consolidated)
        return self._dataset(
            root,
            mask_and_scale=mask_and_scale,
            decode_times=decode_times,
            concat_characters=concat_characters,
            decode_coords=decode_coords,
            drop_variables=drop_variables,
            use_cftime=use_cftime,
            decode_timedelta=decode_timedelta,
        )

    @staticmethod
    def _dataset(group: Group, **decode: Any) -> Any:
        return StoreBackendEntrypoint().open_dataset(ZarrdaskDataStore(group), **decode)

    def open_groups_as_dict(
        self,
        filename_or_obj: Any,
        *,
        group: str | None = None,
        consolidated: bool | None = None,
        zarr_format: int | None = None,
        storage_options: dict[str, Any] | None = None,
        **decode: Any,
    ) -> dict[str, Any]:
        """Every group at and below ``group`` as a Dataset, keyed ``"/"``,
        ``"/child"``, …; with consolidated metadata, one metadata read in all."""
        root = _open_group(filename_or_obj, group, zarr_format, storage_options, consolidated)
        out = {"/": self._dataset(root, **decode)}
        for name, node in root.members(max_depth=None):
            if isinstance(node, Group):
                out["/" + name] = self._dataset(node, **decode)
        return out

    def open_datatree(self, filename_or_obj: Any, **kwargs: Any) -> Any:
        from xarray import DataTree

        return DataTree.from_dict(self.open_groups_as_dict(filename_or_obj, **kwargs))
