"""How one xarray variable becomes one Zarr array: names, chunks, fill values
and the array's creation arguments, checked as xarray's own zarr engine checks them.

The CF encoding itself (times, scale and offset, ``_FillValue``, strings) is
xarray's (``xarray.backends.zarr.encode_zarr_variable``); this module decides
what xarray's ``ZarrStore`` decides after it:

- **names**: a variable's name is a non-empty ``str`` (``TypeError`` otherwise,
  ``ValueError`` for ``""``), or ``None``, stored as ``__values__``;
- **encoding keys**: those a Zarr array takes; unknown keys are an error for a
  variable named in ``to_zarr(encoding=...)`` and dropped from one that came
  with the variable (``.encoding`` of a dataset that was opened from a store);
- **chunks**: ``encoding["chunks"]`` when it has one entry per dimension (one
  inherited through ``.encoding`` that no longer fits the variable's rank, after
  ``isel`` for example, is dropped; one passed in ``encoding=`` is an error),
  else the dask chunks, else chosen automatically; a chunk size that is neither
  an ``int`` nor a sequence of edge lengths (a rectilinear grid) is a ``TypeError``;
- **fill values**: in v2 the CF ``_FillValue`` is the array's ``fill_value``; in
  v3 ``_FillValue`` stays a JSON-encoded attribute and ``fill_value`` comes from
  ``encoding["fill_value"]`` (NaN for floats, the small floats that have a NaN
  too); the small types xarray's coders cannot take (``bfloat16``, ``int4``,
  ``complex_bfloat16``, …) get their ``_FillValue`` from :mod:`.small_types`;
- **appends** to an existing variable: encoded exactly as the stored one (units,
  calendar, dtype, scale), fixed-length strings and bytes only with the stored
  length (longer values would be cut; xarray refuses the same way).
"""

from __future__ import annotations

from typing import Any, Hashable, Mapping

import dask.array as da
import numpy as np
import pandas as pd
from xarray import conventions
from xarray.backends.zarr import FillValueCoder, encode_zarr_attr_value, encode_zarr_variable
from xarray.coding.strings import check_vlen_dtype
from xarray.core.variable import Variable

from ..core.array import Array
from ..dask.writer import block_grid
from .backend import DIMENSION_KEY, array_variable
from .small_types import encode_fill_attribute, has_nan, is_small_type, unmask_small_type

#: the name xarray's convention stores a variable named ``None`` under
NONE_NAME = "__values__"
#: encoding keys of another backend (or derived by xarray) that are dropped silently
SAFE_TO_DROP = frozenset({"source", "original_shape", "preferred_chunks"})
#: encoding keys that configure the Zarr array (CF keys such as units, dtype,
#: scale_factor or _FillValue are consumed by the CF encoding before this)
ARRAY_ENCODINGS = frozenset({
    "chunks", "shards", "compressors", "compressor", "filters", "serializer",
    "write_empty_chunks", "chunk_key_encoding", "dimension_separator", "order", "cache_metadata",
})


def check_name(name: Hashable) -> None:
    """A variable's name must be a non-empty ``str`` or ``None`` (as xarray
    requires of every name it writes to netCDF or Zarr), and hold no ``"/"``."""
    if name is None:
        return
    if not isinstance(name, str):
        raise TypeError(
            f"Invalid name {name!r} for DataArray or Dataset key: must be either a string or None "
            "for serialization to Zarr"
        )
    if not name:
        raise ValueError(
            f"Invalid name {name!r} for DataArray or Dataset key: string must be length 1 or greater "
            "for serialization to Zarr"
        )
    if "/" in name:
        raise ValueError(f"Invalid name {name!r} for a Dataset variable: a Zarr array name holds no '/'")


def array_name(name: Hashable) -> str:
    """The Zarr array name of a variable (``None`` → ``"__values__"``)."""
    return NONE_NAME if name is None else str(name)


def variable_name(array_name: str) -> Hashable:
    """The variable name of a Zarr array (``"__values__"`` → ``None``)."""
    return None if array_name == NONE_NAME else array_name


def with_encodings(variables: dict[Hashable, Variable], encoding: Mapping[Hashable, Any]) -> dict[Hashable, Variable]:
    """``variables`` with the ``encoding=`` argument's entries as their encodings
    (``KeyError`` for a name that is not a variable, ``ValueError`` for an entry
    that is not a mapping, as xarray)."""
    out = dict(variables)
    for name, enc in encoding.items():
        if name not in out:
            raise KeyError(
                f"encoding names the variable {name!r}, which the dataset does not have "
                f"(it has {list(out)!r})"
            )
        if not isinstance(enc, Mapping):
            raise ValueError(f"encoding[{name!r}] must be castable to a dictionary, found {enc!r}")
        v = out[name].copy(deep=False)
        v.encoding = dict(enc)
        out[name] = v
    return out


def encode_new(v: Variable, name: Hashable, fmt: int) -> Variable:
    """A variable that gets a new array, CF-encoded as xarray's zarr engine does."""
    return encode_zarr_variable(unmask_small_type(v, name), name=name, zarr_format=fmt)


def encode_like_existing(variables: dict[Hashable, Variable], existing: Mapping[Hashable, Array], fmt: int
                         ) -> dict[Hashable, Variable]:
    """Variables that already have an array, encoded exactly as the stored ones
    (same units, calendar, dtype, scale, fill value), in the stored dimension order."""
    if not variables:
        return {}
    stored, _, _ = conventions.decode_cf_variables({k: array_variable(existing[k]) for k in variables}, {})
    out = {}
    for k, new in variables.items():
        old = stored[k]
        check_append_dtype(k, old, new)
        if new.dims != old.dims:
            if set(new.dims) != set(old.dims):
                raise ValueError(
                    f"variable {k!r} already exists with dimensions {old.dims}, but the dataset's has "
                    f"{new.dims}; to_zarr cannot change a variable's dimensions"
                )
            new = new.transpose(*old.dims)
        new = new.copy(deep=False)
        new.encoding = dict(old.encoding)
        enc = encode_zarr_variable(unmask_small_type(new, k), name=k, zarr_format=fmt)
        _check_units(k, enc, old.encoding.get("units"))
        out[k] = enc
    return out


def check_append_dtype(name: Hashable, stored: Variable, new: Variable) -> None:
    """Fixed-length strings and bytes go into a stored array of the same dtype only.

    Numbers, times, booleans and objects are encoded into the stored dtype (and
    checked when they are); a ``<U6`` written into a stored ``<U2`` would be cut
    to two characters, so it is refused before anything is written (a stored
    variable-length string array takes any fixed-length strings)."""
    if new.dtype.kind not in "SU" or stored.dtype == object or new.dtype == stored.dtype:
        return
    if stored.dtype.kind == "T" and new.dtype.kind == "U":
        return
    raise ValueError(
        f"Mismatched dtypes for variable {name!r} between Zarr store on disk and dataset to append: the "
        f"store has dtype {stored.dtype} but the dataset has dtype {new.dtype}; writing them would "
        f"{'cut the longer values' if new.dtype.itemsize > stored.dtype.itemsize else 'change the stored dtype'}. "
        "Rewrite the variable with a dtype that holds every value (mode='w', or encoding={'dtype': ...})"
    )


def _check_units(name: Hashable, encoded: Variable, stored_units: Any) -> None:
    if stored_units is not None and not _same_units(encoded.attrs.get("units", stored_units), stored_units):
        raise ValueError(
            f"variable {name!r}: the new values cannot be encoded in the stored units {stored_units!r} "
            f"(they need {encoded.attrs['units']!r}); writing them into the stored array would corrupt them. "
            "Rewrite the variable with units that fit every value (encoding={'units': ...})"
        )


def _same_units(a: Any, b: Any) -> bool:
    """Whether two CF units strings mean the same (``"days since 2000-01-01"`` is
    ``"days since 2000-01-01 00:00:00"``)."""
    if a == b:
        return True
    if not (isinstance(a, str) and isinstance(b, str)) or " since " not in a or " since " not in b:
        return False
    (ua, _, ra), (ub, _, rb) = a.partition(" since "), b.partition(" since ")
    try:
        return ua.strip().lower() == ub.strip().lower() and pd.Timestamp(ra.strip()) == pd.Timestamp(rb.strip())
    except (ValueError, TypeError):
        return False


def fill_value_and_attributes(name: Hashable, v: Variable, fmt: int) -> tuple[Any, dict[str, Any]]:
    """The array's ``fill_value`` and its (JSON-encoded) attributes."""
    attrs = dict(v.attrs)
    if fmt == 2:
        fill_value = attrs.pop("_FillValue", None)
    else:
        fill_value = v.encoding.get("fill_value")
        if fill_value is None and (v.dtype.kind == "f" or v.dtype.names is None and has_nan(v.dtype)):
            fill_value = np.nan  # as xarray: floats default to NaN, not Zarr's 0
        fv = attrs.pop("_FillValue", None)
        if fv is not None:
            encode = encode_fill_attribute if is_small_type(v.dtype) else FillValueCoder.encode
            attrs["_FillValue"] = encode(fv, v.dtype)
    if v.encoding.get("_FillValue") is not None:
        raise ValueError(f"variable {name!r}: Zarr does not support _FillValue in encoding")
    return fill_value, {k: encode_zarr_attr_value(val) for k, val in attrs.items()}


def array_encoding(name: Hashable, v: Variable, fmt: int, strict: bool) -> dict[str, Any]:
    """The Zarr array keywords of ``v.encoding`` (``chunks`` resolved; the fill
    value is :func:`fill_value_and_attributes`'s).

    ``strict`` (the variable is named in ``encoding=``): unknown keys and chunks
    that do not fit the variable are errors; otherwise they are dropped."""
    valid = ARRAY_ENCODINGS | ({"fill_value"} if fmt == 3 else set())
    enc = {k: val for k, val in v.encoding.items() if k not in SAFE_TO_DROP and k != "_FillValue"}
    invalid = [k for k in enc if k not in valid]
    if strict and invalid:
        hint = " Use `_FillValue` to set the Zarr array `fill_value`" if "fill_value" in invalid else ""
        raise ValueError(
            f"variable {name!r}: unexpected encoding parameters for zarr backend: {invalid!r} (valid: the CF "
            f"keys, and {sorted(valid)!r}).{hint}"
        )
    enc = {k: val for k, val in enc.items() if k in ARRAY_ENCODINGS and k != "cache_metadata"}
    if "compressor" in enc:
        enc["compressors"] = enc.pop("compressor")
    if not _fits(enc.get("chunks"), v.ndim):
        if strict:
            raise ValueError(
                f"variable {name!r}: encoding['chunks']={enc['chunks']!r} has {len(enc['chunks'])} entries, "
                f"but the variable has {v.ndim} dimensions {v.dims!r}"
            )
        # inherited from a store and no longer fits (after isel, squeeze): chosen again
        enc.pop("chunks")
        enc.pop("shards", None)
    enc["chunks"] = chunk_shape(name, enc.pop("chunks", None), v)
    shards = enc.get("shards")
    if isinstance(shards, str) and shards == "dask" and isinstance(v.data, da.Array):
        enc["shards"] = block_grid(v.data)
    elif isinstance(shards, (int, np.integer)) and not isinstance(shards, bool):
        enc["shards"] = (int(shards),) * v.ndim
    return enc


def _fits(chunks: Any, ndim: int) -> bool:
    """Whether ``encoding["chunks"]`` can describe an array of rank ``ndim``."""
    if chunks is None or isinstance(chunks, (str, int, np.integer)) or not chunks:
        return True
    try:
        return len(chunks) == ndim
    except TypeError:
        return True  # not a sequence: chunk_shape says what is wrong with it


def chunk_shape(name: Hashable, enc_chunks: Any, v: Variable) -> Any:
    """The chunk shape: ``encoding["chunks"]``, else the dask chunks (the first of
    each dimension; the writer aligns the rest), else ``"auto"``."""
    if isinstance(enc_chunks, str) and enc_chunks == "dask":  # the dask blocks as they are
        return block_grid(v.data) if isinstance(v.data, da.Array) else _from_variable(v)
    if isinstance(enc_chunks, str) and enc_chunks == "auto":
        return "auto"
    if enc_chunks is None or (not isinstance(enc_chunks, (int, np.integer)) and not enc_chunks):
        return _from_variable(v)
    if isinstance(enc_chunks, (int, np.integer)) and not isinstance(enc_chunks, bool):
        return (int(enc_chunks),) * v.ndim
    try:
        chunks = tuple(enc_chunks)
    except TypeError:
        chunks = (enc_chunks,)
    for c in chunks:
        regular = isinstance(c, (int, np.integer)) and not isinstance(c, bool)
        edges = isinstance(c, (list, tuple)) and all(isinstance(e, (int, np.integer)) for e in c)
        if not (regular or edges):
            raise TypeError(
                f"variable {name!r}: zarr chunk sizes specified in encoding['chunks'] must be ints, or sequences "
                f"of edge lengths (a rectilinear grid); found encoding['chunks']={enc_chunks!r}"
            )
    return tuple(int(c) if isinstance(c, (int, np.integer)) else tuple(int(e) for e in c) for c in chunks)


def _from_variable(v: Variable) -> Any:
    if v.chunks:
        return tuple(max(1, c[0]) if c else 1 for c in v.chunks)
    return "auto"


def creation_arguments(name: Hashable, v: Variable, fmt: int, strict: bool) -> dict[str, Any]:
    """Everything :meth:`zarrdask.Group.create_array` needs for ``v``'s new array."""
    fill_value, attributes = fill_value_and_attributes(name, v, fmt)
    create = dict(array_encoding(name, v, fmt, strict), shape=v.shape, dtype=_dtype(v.dtype),
                  fill_value=fill_value, zarr_format=fmt)
    if fmt == 3:
        create["dimension_names"] = list(v.dims)
    else:
        attributes[DIMENSION_KEY] = list(v.dims)
    create["attributes"] = attributes
    return create


def _dtype(dtype: np.dtype) -> Any:
    return str if check_vlen_dtype(dtype) is str else dtype
