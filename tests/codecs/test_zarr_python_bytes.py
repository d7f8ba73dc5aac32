"""Byte-for-byte: chunks encoded here equal the chunks zarr-python 3 stores for
the same data and codec configuration, and the codec JSON means what its
zarr.json says (compared modulo the spellings the specs make equivalent:
tests/_spec_json.py)."""

from __future__ import annotations

import numpy as np
import pytest

from zarrdask.codecs.blosc_codec import BloscCodec
from zarrdask.codecs.bytes_codec import BytesCodec
from zarrdask.codecs.crc32c_codec import Crc32cCodec
from zarrdask.codecs.gzip_codec import GzipCodec
from zarrdask.codecs.registry import codec_from_json
from zarrdask.codecs.transpose import TransposeCodec
from zarrdask.codecs.zstd_codec import ZstdCodec
from zarrdask.metadata import data_type_to_v3

from .._peers import BLOSC_TYPESIZE_REASON, zarr_python_blosc_uses_typesize
from .._spec_json import normalize_codecs
from ._helpers import decode_with, encode_with, spec_of, zarr_python_write

zc = pytest.importorskip("zarr.codecs")

RNG = np.random.default_rng(42)
INTS = (RNG.integers(-1000, 1000, size=(16, 24)) // 7).astype("int32")
FLOATS = np.round(RNG.standard_normal((8, 10, 12)), 2)
STRUCT = np.zeros(5, dtype=[("a", "<i4"), ("b", "u1")])
STRUCT["a"], STRUCT["b"] = range(5), range(10, 15)


def sample(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "U":
        return np.array(["", "a", "zarr", "ÿ€😀"], dtype=dtype)
    if dtype.kind == "M":
        return np.array([0, 1, 86400, -5], dtype=dtype)
    if dtype.kind == "b":
        return np.array([True, False, True])
    return (np.arange(-12, 12) * 37).astype(dtype).reshape(4, 6)


def zarr_json_of(codecs, spec):
    """What zarrdask records in zarr.json for these codecs (after complete)."""
    return [getattr(c, "complete", lambda s: c)(spec).to_json() for c in codecs]


def _legacy_struct(data_type) -> bool:
    """The legacy ``structured`` name, with which a ``bytes`` codec without
    ``endian`` means little-endian (zarr-extensions data-types-structured.md)."""
    return isinstance(data_type, dict) and data_type["name"] == "structured"


def check(data, ours, *, zarr_kwargs, mask=None):
    if any(isinstance(c, BloscCodec) for c in ours) and not zarr_python_blosc_uses_typesize():
        pytest.skip(BLOSC_TYPESIZE_REASON)
    raw, zarr_json = zarr_python_write(data, **zarr_kwargs, document=True)
    docs = zarr_json["codecs"]
    spec = spec_of(data)
    encoded = encode_with(ours, data)
    if mask is not None:
        raw, encoded = mask(raw), mask(encoded)
    assert encoded == raw
    # each side's codec JSON read with the data type name that side writes
    ours_legacy = _legacy_struct(data_type_to_v3(data.dtype))
    assert normalize_codecs(zarr_json_of(ours, spec), data.dtype, legacy_struct=ours_legacy) \
        == normalize_codecs(docs, data.dtype, legacy_struct=_legacy_struct(zarr_json["data_type"]))
    # and zarr-python's JSON, read here, encodes to the same bytes
    assert (mask or (lambda b: b))(encode_with([codec_from_json(d) for d in docs], data)) == raw
    decoded = decode_with(ours, zarr_python_write(data, **zarr_kwargs)[0], spec)
    assert decoded.dtype == data.dtype
    np.testing.assert_array_equal(decoded, data)


@pytest.mark.parametrize(
    "dtype", ["int16", "uint32", "int64", "float32", "float64", "complex64", "complex128", "U4", "M8[s]", "m8[ms]"]
)
@pytest.mark.parametrize("endian", ["little", "big"])
def test_bytes(dtype, endian):
    data = sample(dtype)
    check(data, [BytesCodec(endian)], zarr_kwargs={"serializer": zc.BytesCodec(endian=endian)})


@pytest.mark.parametrize("dtype", ["uint8", "int8", "bool"])
def test_bytes_single_byte_types(dtype):
    data = sample(dtype)
    check(data, [BytesCodec("little")], zarr_kwargs={"serializer": zc.BytesCodec(endian="little")})
    # `endian` does not apply to these (v3-codecs-bytes.rst); zarrdask records none
    assert BytesCodec("little").complete(spec_of(data)).to_json() == {"name": "bytes"}


@pytest.mark.parametrize("endian", ["little", None], ids=["little", "absent"])
def test_bytes_structured(endian):
    """zarr-python 3.1 records no `endian` for a structured type (legacy
    "structured": read as little-endian), 3.4 records "little" (required by
    "struct" for multi-byte fields); zarrdask encodes the same bytes either way."""
    check(STRUCT, [BytesCodec(endian)], zarr_kwargs={})
    # zarrdask keeps an explicit `endian` for a structured type with multi-byte fields
    assert BytesCodec("little").complete(spec_of(STRUCT)).to_json() == \
        {"name": "bytes", "configuration": {"endian": "little"}}


@pytest.mark.parametrize("level", [0, 1, 5, 9])
def test_gzip(level):
    # numcodecs (zarr-python) stamps the current time into MTIME (bytes 4..8);
    # zarrdask writes 0 there, everything else is identical
    check(
        INTS,
        [BytesCodec(), GzipCodec(level)],
        zarr_kwargs={"compressors": [zc.GzipCodec(level=level)]},
        mask=lambda b: b[:4] + b[8:],
    )


@pytest.mark.parametrize("level, checksum", [(0, False), (1, True), (3, False), (-5, False), (19, True)])
def test_zstd(level, checksum):
    check(
        INTS,
        [BytesCodec(), ZstdCodec(level, checksum)],
        zarr_kwargs={"compressors": [zc.ZstdCodec(level=level, checksum=checksum)]},
    )


@pytest.mark.parametrize("cname", ["lz4", "lz4hc", "blosclz", "zstd", "zlib"])
@pytest.mark.parametrize("shuffle", ["noshuffle", "shuffle", "bitshuffle", None])
def test_blosc(cname, shuffle):
    kwargs = {} if shuffle is None else {"shuffle": shuffle}
    check(
        FLOATS,
        [BytesCodec(), BloscCodec(cname=cname, clevel=5, shuffle=shuffle)],
        zarr_kwargs={"compressors": [zc.BloscCodec(cname=cname, clevel=5, **kwargs)]},
    )


@pytest.mark.parametrize("dtype", ["uint8", "int16"])
def test_blosc_typesize_and_blocksize(dtype):
    data = sample(dtype)
    check(
        data,
        [BytesCodec("little"), BloscCodec(cname="lz4", clevel=9, shuffle="shuffle", typesize=4, blocksize=64)],
        zarr_kwargs={"compressors": [zc.BloscCodec(cname="lz4", clevel=9, shuffle="shuffle", typesize=4, blocksize=64)]},
    )


def test_crc32c():
    check(INTS, [BytesCodec(), Crc32cCodec()], zarr_kwargs={"compressors": [zc.Crc32cCodec()]})


@pytest.mark.parametrize("order", [(2, 0, 1), (1, 2, 0), (2, 1, 0), (0, 1, 2)])
@pytest.mark.parametrize("endian", ["little", "big"])
def test_transpose(order, endian):
    check(
        FLOATS,
        [TransposeCodec(order), BytesCodec(endian)],
        zarr_kwargs={"filters": [zc.TransposeCodec(order=order)], "serializer": zc.BytesCodec(endian=endian)},
    )


def test_full_chain():
    check(
        FLOATS,
        [TransposeCodec((2, 0, 1)), BytesCodec("big"), BloscCodec(cname="zstd", shuffle="bitshuffle"), Crc32cCodec()],
        zarr_kwargs={
            "filters": [zc.TransposeCodec(order=(2, 0, 1))],
            "serializer": zc.BytesCodec(endian="big"),
            "compressors": [zc.BloscCodec(cname="zstd", shuffle="bitshuffle"), zc.Crc32cCodec()],
        },
    )


def test_zarr_python_default_codecs():
    # zarr-python's defaults for a new float array: bytes(little) + zstd(level 0)
    check(FLOATS, [BytesCodec(), ZstdCodec()], zarr_kwargs={"compressors": "auto"})
