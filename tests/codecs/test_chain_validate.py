"""Order rules of a v3 codec list (v3 core, "Codecs")."""

from __future__ import annotations

import pytest

from zarrdask.codecs.bytes_codec import BytesCodec
from zarrdask.codecs.chain_validate import validate_chain
from zarrdask.codecs.crc32c_codec import Crc32cCodec
from zarrdask.codecs.gzip_codec import GzipCodec
from zarrdask.codecs.numcodecs_v3 import Delta
from zarrdask.codecs.transpose import TransposeCodec
from zarrdask.errors import MetadataError

T, B, G, C = TransposeCodec((1, 0)), BytesCodec(), GzipCodec(), Crc32cCodec()


@pytest.mark.parametrize(
    "codecs, expected",
    [
        ([B], ([], B, [])),
        ([T, B, G, C], ([T], B, [G, C])),
        ([Delta(dtype="f8"), T, B], ([Delta(dtype="f8"), T], B, [])),
        ((B, C), ([], B, [C])),
    ],
)
def test_valid(codecs, expected):
    assert validate_chain(codecs, key="zarr.json") == expected


@pytest.mark.parametrize(
    "codecs, match",
    [
        ([], "no array→bytes codec"),
        ([T, G], r"codecs\[1\] \('gzip'\) is a bytes→bytes codec before the array→bytes codec"),
        ([G, B], r"codecs\[0\] \('gzip'\) is a bytes→bytes codec before"),
        ([B, T], r"codecs\[1\] \('transpose'\) is an array→array codec after the array→bytes codec codecs\[0\]"),
        ([B, G, B], r"codecs\[2\] \('bytes'\) is a second array→bytes codec \(the first is codecs\[0\]\)"),
        ([T], "no array→bytes codec"),
        ([B, "gzip"], r"codecs\[1\].*not a zarrdask codec"),
    ],
)
def test_invalid(codecs, match):
    with pytest.raises(MetadataError, match=match) as e:
        validate_chain(codecs, key="x/y/zarr.json")
    assert str(e.value).startswith("x/y/zarr.json: ")
