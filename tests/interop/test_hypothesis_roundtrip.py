"""Hypothesis: random shape, chunks, dtype, fill value and selection; a write
then a read agrees with numpy.

For Zarr v2 and v3 in a ``zarrdask.MemoryStore()``: an array starts as its
fill value (a numpy reference too), a random value is written to a random
selection of each, and the whole array (and the selection) read back equal
the reference.

- basic selections: integers (negative too), slices with any steps (negative
  included) and bounds (out of range included), Ellipsis;
- orthogonal selections (``.oindex``): per dimension an integer array
  (unsorted, negative; with duplicates for reads only — numpy's result for a
  duplicated index in an assignment is "last one wins", which zarr does not
  promise), a boolean mask, a slice or an integer.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

zarrdask = pytest.importorskip("zarrdask")

from ._util import assert_array_same  # noqa: E402

# ZARRDASK_HYPOTHESIS_EXAMPLES=2000 for a longer bug hunt
EXAMPLES = int(os.environ.get("ZARRDASK_HYPOTHESIS_EXAMPLES", "100"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

DTYPES_V3 = ["bool", "int8", "uint16", "int32", "int64", "float32", "float64", "complex64"]
DTYPES_V2 = DTYPES_V3 + [">i4", ">f8", "<M8[ns]", "|S3", "<U2"]


# -- strategies ---------------------------------------------------------------------------------
@st.composite
def array_setups(draw: st.DrawFn) -> dict[str, Any]:
    zarr_format = draw(st.sampled_from([2, 3]))
    ndim = draw(st.integers(0, 3))
    shape = tuple(draw(st.lists(st.integers(0, 9), min_size=ndim, max_size=ndim)))
    chunks = tuple(draw(st.integers(1, max(s, 1) + 2)) for s in shape)
    dtype = np.dtype(draw(st.sampled_from(DTYPES_V2 if zarr_format == 2 else DTYPES_V3)))
    fill = draw(scalars(dtype))
    kw: dict[str, Any] = {}
    if zarr_format == 2:
        kw["order"] = draw(st.sampled_from(["C", "F"]))
        kw["dimension_separator"] = draw(st.sampled_from([".", "/"]))
        kw["compressors"] = draw(st.sampled_from([None, {"id": "zlib", "level": 1}, "auto"]))
    else:
        kw["compressors"] = draw(st.sampled_from([
            None, "auto", [{"name": "gzip", "configuration": {"level": 1}}], [{"name": "crc32c"}],
        ]))
        if ndim >= 2 and draw(st.booleans()):
            kw["filters"] = [{"name": "transpose", "configuration": {"order": list(reversed(range(ndim)))}}]
        kw["chunk_key_encoding"] = draw(st.sampled_from([
            {"name": "default", "separator": "/"}, {"name": "default", "separator": "."},
            {"name": "v2", "separator": "."},
        ]))
    kw["write_empty_chunks"] = draw(st.booleans())
    return {"zarr_format": zarr_format, "shape": shape, "chunks": chunks, "dtype": dtype, "fill_value": fill, **kw}


def scalars(dtype: np.dtype) -> st.SearchStrategy[Any]:
    if dtype.kind == "M":
        return st.integers(-(2**63), 2**63 - 1).map(lambda i: np.array(i, "i8").view(dtype)[()])
    if dtype.kind == "f":
        return hnp.from_dtype(dtype, allow_subnormal=False)
    if dtype.kind == "c":
        return hnp.from_dtype(dtype, allow_subnormal=False)
    return hnp.from_dtype(dtype)


def values(dtype: np.dtype, shape: tuple[int, ...]) -> st.SearchStrategy[np.ndarray]:
    if dtype.kind == "M":
        return hnp.arrays("i8", shape, elements=st.integers(-(2**63), 2**63 - 1)).map(lambda a: a.view(dtype))
    if dtype.kind in "fc":
        return hnp.arrays(dtype, shape, elements=hnp.from_dtype(dtype, allow_subnormal=False))
    return hnp.arrays(dtype, shape)


@st.composite
def basic_selections(draw: st.DrawFn, shape: tuple[int, ...]) -> tuple[Any, ...]:
    sel: list[Any] = []
    for n in shape:
        kind = draw(st.sampled_from(["int", "slice", "full"] if n else ["slice", "full"]))
        if kind == "int":
            sel.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            start = draw(st.none() | st.integers(-n - 2, n + 2))
            stop = draw(st.none() | st.integers(-n - 2, n + 2))
            step = draw(st.none() | st.integers(-4, 4).filter(lambda s: s != 0))
            sel.append(slice(start, stop, step))
        else:
            sel.append(slice(None))
    # an Ellipsis standing for some (possibly zero) leading or trailing dimensions
    if draw(st.booleans()):
        k = draw(st.integers(0, len(sel)))
        if draw(st.booleans()):
            sel = [Ellipsis, *sel[k:]]
        else:
            sel = [*sel[:k], Ellipsis]
    return tuple(sel)


@st.composite
def orthogonal_selections(draw: st.DrawFn, shape: tuple[int, ...], for_write: bool) -> tuple[Any, ...]:
    sel: list[Any] = []
    for n in shape:
        kinds = ["ints", "mask", "slice"] + (["int"] if n else [])
        kind = draw(st.sampled_from(kinds))
        if kind == "ints":
            if n == 0:
                sel.append(np.array([], dtype=np.intp))
                continue
            idx = st.integers(-n, n - 1)
            if for_write:
                # unique positions (as given: unsorted, some negative)
                pos = draw(st.lists(st.integers(0, n - 1), min_size=0, max_size=n, unique=True))
                neg = [p - n if draw(st.booleans()) else p for p in pos]
                sel.append(np.array(neg, dtype=np.intp))
            else:
                sel.append(np.array(draw(st.lists(idx, min_size=0, max_size=2 * n)), dtype=np.intp))
        elif kind == "mask":
            sel.append(np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool))
        elif kind == "slice":
            start = draw(st.none() | st.integers(-n - 1, n + 1))
            stop = draw(st.none() | st.integers(-n - 1, n + 1))
            step = draw(st.none() | st.integers(1, 3))
            sel.append(slice(start, stop, step))
        else:
            sel.append(draw(st.integers(-n, n - 1)))
    return tuple(sel)


def _numpy_oindex(sel: tuple[Any, ...], shape: tuple[int, ...]) -> tuple[Any, ...]:
    """The numpy (``np.ix_``) equivalent of an orthogonal selection; integer
    dimensions are indexed with a length-1 array and dropped afterwards."""
    arrays = []
    for s, n in zip(sel, shape):
        if isinstance(s, slice):
            arrays.append(np.arange(n)[s])
        elif isinstance(s, np.ndarray) and s.dtype == bool:
            arrays.append(np.nonzero(s)[0])
        elif isinstance(s, np.ndarray):
            arrays.append(s)
        else:
            arrays.append(np.array([s]))
    return np.ix_(*arrays) if arrays else ()


def _int_axes(sel: tuple[Any, ...]) -> tuple[int, ...]:
    return tuple(i for i, s in enumerate(sel) if isinstance(s, (int, np.integer)))


def _create(setup: dict[str, Any]) -> Any:
    return zarrdask.create_array(zarrdask.MemoryStore(), **setup)


def _reference(setup: dict[str, Any]) -> np.ndarray:
    return np.full(setup["shape"], setup["fill_value"], dtype=setup["dtype"])


def _check_all(z: Any, ref: np.ndarray) -> None:
    got = z[...]
    assert_array_same(got, ref, check_dtype=False)
    if ref.ndim:  # (0-d reads give a numpy scalar, as in zarr-python; np.bytes_ loses its width)
        assert got.dtype in (ref.dtype, ref.dtype.newbyteorder("="))


# -- tests ------------------------------------------------------------------------------------
@SETTINGS
@given(data=st.data())
def test_basic_selection_write_then_read(data: st.DataObject) -> None:
    setup = data.draw(array_setups(), label="setup")
    z = _create(setup)
    ref = _reference(setup)
    _check_all(z, ref)  # all fill value
    sel = data.draw(basic_selections(setup["shape"]), label="selection")
    target_shape = ref[sel].shape
    if data.draw(st.booleans(), label="scalar value"):
        value: Any = data.draw(scalars(setup["dtype"]), label="value")
    else:
        value = data.draw(values(setup["dtype"], target_shape), label="value")
    ref[sel] = value
    z[sel] = value
    _check_all(z, ref)
    assert_array_same(np.asarray(z[sel]), ref[sel], check_dtype=False)
    # a second, independent read selection
    sel2 = data.draw(basic_selections(setup["shape"]), label="read selection")
    assert_array_same(np.asarray(z[sel2]), ref[sel2], check_dtype=False)


@SETTINGS
@given(data=st.data())
def test_orthogonal_selection_write_then_read(data: st.DataObject) -> None:
    setup = data.draw(array_setups().filter(lambda s: len(s["shape"]) >= 1), label="setup")
    shape = setup["shape"]
    z = _create(setup)
    ref = _reference(setup)
    sel = data.draw(orthogonal_selections(shape, for_write=True), label="selection")
    ix = _numpy_oindex(sel, shape)
    block_shape = ref[ix].shape
    drop = _int_axes(sel)
    out_shape = tuple(n for i, n in enumerate(block_shape) if i not in drop)
    if data.draw(st.booleans(), label="scalar value"):
        value: Any = data.draw(scalars(setup["dtype"]), label="value")
        ref[ix] = value
    else:
        value = data.draw(values(setup["dtype"], out_shape), label="value")
        ref[ix] = np.reshape(value, block_shape)
    z.oindex[sel] = value
    _check_all(z, ref)
    # read back the same selection and an independent one with duplicates
    expected = ref[ix].reshape(out_shape)
    assert_array_same(np.asarray(z.oindex[sel]), expected, check_dtype=False)
    rsel = data.draw(orthogonal_selections(shape, for_write=False), label="read selection")
    rix = _numpy_oindex(rsel, shape)
    rdrop = _int_axes(rsel)
    rshape = tuple(n for i, n in enumerate(ref[rix].shape) if i not in rdrop)
    assert_array_same(np.asarray(z.oindex[rsel]), ref[rix].reshape(rshape), check_dtype=False)


@settings(max_examples=max(EXAMPLES * 2 // 3, 1), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_reopen_after_writes(data: st.DataObject) -> None:
    """What was written is what another Array object opened on the same store reads."""
    setup = data.draw(array_setups(), label="setup")
    store = zarrdask.MemoryStore()
    z = zarrdask.create_array(store, **setup)
    ref = _reference(setup)
    for _ in range(data.draw(st.integers(1, 3), label="writes")):
        sel = data.draw(basic_selections(setup["shape"]), label="selection")
        value = data.draw(values(setup["dtype"], ref[sel].shape), label="value")
        ref[sel] = value
        z[sel] = value
    z2 = zarrdask.open_array(store, mode="r")
    assert z2.shape == setup["shape"]
    assert_array_same(z2[...], ref, check_dtype=False)


@settings(max_examples=max(EXAMPLES // 2, 1), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_writes_and_resizes(data: st.DataObject) -> None:
    """Writes interleaved with resizes. Reference semantics (zarrdask's
    ``Array.resize`` contract): the kept region keeps its values, everything
    newly exposed by growing is the fill value — also where a shrink cut into
    a chunk that a later grow brings back."""
    setup = data.draw(array_setups().filter(lambda s: len(s["shape"]) >= 1), label="setup")
    z = _create(setup)
    ref = data.draw(values(setup["dtype"], setup["shape"]), label="initial values")
    z[...] = ref
    for _ in range(data.draw(st.integers(1, 5), label="steps")):
        if data.draw(st.booleans(), label="resize?"):
            new_shape = tuple(data.draw(st.lists(st.integers(0, 9), min_size=ref.ndim, max_size=ref.ndim),
                                        label="new shape"))
            grown = np.full(new_shape, setup["fill_value"], dtype=setup["dtype"])
            keep = tuple(slice(0, min(a, b)) for a, b in zip(ref.shape, new_shape))
            grown[keep] = ref[keep]
            ref = grown
            z.resize(*new_shape)
        else:
            sel = data.draw(basic_selections(ref.shape), label="selection")
            value = data.draw(values(setup["dtype"], ref[sel].shape), label="value")
            ref[sel] = value
            z[sel] = value
        assert z.shape == ref.shape
        _check_all(z, ref)
