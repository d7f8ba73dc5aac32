"""Kerchunk references to netCDF4 files open in zarrdask equal to the source file.

Every way users hand references over (``_sources.FORMS``), kerchunk's JSON in
both layouts (version 1, and version 0: the bare key → reference mapping),
inlined chunks (base64 and raw text), the parquet layout, and a multi-file
combine; where xarray's engine="zarr" opens the references too, zarrdask's
dataset is identical to its.
"""

from __future__ import annotations

import json
import warnings

import pytest

from ._sources import (
    FORMS,
    dump,
    kerchunk_refs,
    open_references,
    open_with_zarr_python,
    xr,
)

pytest.importorskip("kerchunk")


def load(ds):
    with ds:
        return ds.load()


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("layout", ["v1", "v0"])
def test_json_references_open_equal_to_the_source(source, tmp_path, form, layout):
    refs = kerchunk_refs(source.path, inline_threshold=0)
    fo = dump(refs if layout == "v1" else refs["refs"], tmp_path / "refs.json")
    xr.testing.assert_identical(load(open_references(fo, form)), source.expected)


@pytest.mark.parametrize("form", ["mapper", "url"])
def test_references_as_a_dict(source, form):
    refs = kerchunk_refs(source.path, inline_threshold=0)
    xr.testing.assert_identical(load(open_references(refs, form)), source.expected)


@pytest.mark.parametrize("form", FORMS)
def test_inlined_chunks_base64_and_text(source, tmp_path, form):
    refs = kerchunk_refs(source.path, inline_threshold=300)
    inline = [v for k, v in refs["refs"].items() if isinstance(v, str) and "/.z" not in k and not k.startswith(".z")]
    assert any(v.startswith("base64:") for v in inline)  # binary chunks
    assert any(not v.startswith("base64:") for v in inline)  # chunks that are ASCII text, inlined raw
    assert any(isinstance(v, list) for v in refs["refs"].values())  # and byte ranges of the file
    fo = dump(refs, tmp_path / "refs.json")
    xr.testing.assert_identical(load(open_references(fo, form)), source.expected)


def test_vlen_utf8_strings_with_a_null_fill_value(source, tmp_path):
    """kerchunk translates HDF5 variable-length strings into a v2 ``|O`` array
    with the ``vlen-utf8`` filter and ``fill_value: null`` (VirtualiZarr#1053's case)."""
    import zarrdask

    refs = kerchunk_refs(source.path, inline_threshold=0)
    zarray = json.loads(refs["refs"]["station/.zarray"])
    assert (zarray["dtype"], zarray["fill_value"], zarray["filters"]) == ("|O", None, [{"id": "vlen-utf8"}])
    array = zarrdask.open_array("reference://", path="station", storage_options={"fo": refs}, mode="r")
    assert list(array[:]) == list(source.expected.station.values)
    assert list(array[2:4]) == ["station-2", "station-3"]


@pytest.mark.parametrize("form", ["mapper", "url", "filesystem"])
def test_parquet_references(source, tmp_path, form):
    df = pytest.importorskip("kerchunk.df")
    pytest.importorskip("fastparquet")
    refs = kerchunk_refs(source.path, inline_threshold=300)
    df.refs_to_dataframe(refs, str(tmp_path / "refs.parq"), record_size=4)  # several records per variable
    # remote_protocol as kerchunk's documentation gives it (without it, fsspec
    # guesses the protocol from the first references, and fails on inline rows)
    ds = open_references(str(tmp_path / "refs.parq"), form, lazy=True, remote_protocol="file")
    xr.testing.assert_identical(load(ds), source.expected)


def test_multi_file_combine(sources, tmp_path):
    combine = pytest.importorskip("kerchunk.combine")
    refs = [kerchunk_refs(s.path, inline_threshold=0) for s in sources]
    combined = combine.MultiZarrToZarr(refs, concat_dims=["time"], identical_dims=["lat", "lon", "station"],
                                       inline_threshold=0).translate()
    targets = {v[0] for v in combined["refs"].values() if isinstance(v, list)}
    assert targets == {str(s.path) for s in sources}
    expected = xr.concat([s.expected for s in sources], dim="time", data_vars="minimal", coords="minimal",
                         compat="override")
    fo = dump(combined, tmp_path / "combined.json")
    for form in ("mapper", "url"):
        xr.testing.assert_identical(load(open_references(fo, form)), expected)


@pytest.mark.parametrize("inline_threshold", [0, 300])
def test_identical_to_engine_zarr(source, tmp_path, inline_threshold):
    fo = dump(kerchunk_refs(source.path, inline_threshold=inline_threshold), tmp_path / "refs.json")
    xr.testing.assert_identical(load(open_references(fo, "mapper")), load(open_with_zarr_python(fo)))


def test_no_consolidated_metadata_warning(source, tmp_path):
    """References hold every document already: nothing to consolidate, no warning."""
    fo = dump(kerchunk_refs(source.path), tmp_path / "refs.json")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load(open_references(fo, "url"))
    assert not [w for w in caught if "consolidated" in str(w.message)]
