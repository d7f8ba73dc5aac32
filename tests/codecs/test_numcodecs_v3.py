"""numcodecs codecs under ``numcodecs.<id>`` names, checked against zarr-python 3."""

from __future__ import annotations

import pickle

import numcodecs
import numpy as np
import pytest

from zarrdask.codecs import numcodecs_registry
from zarrdask.codecs import numcodecs_v3 as nv3
from zarrdask.codecs.abc import ChunkSpec
from zarrdask.codecs.bytes_codec import BytesCodec
from zarrdask.codecs.chain import CodecChain, PendingCodecChain
from zarrdask.codecs.chain_validate import assign_kinds
from zarrdask.codecs.registry import codec_from_json
from zarrdask.errors import ChecksumError, CodecError, CorruptChunkError, MetadataError, UnknownCodecError

from ._helpers import decode_with, encode_with, spec_of, zarr_python_write

zn = pytest.importorskip("zarr.codecs.numcodecs")
pytestmark = pytest.mark.filterwarnings("ignore:Numcodecs codecs are not in the Zarr:UserWarning")

FLOATS = np.linspace(-50, 50, 60, dtype="float64").reshape(6, 10)
BOOLS = (np.arange(30).reshape(5, 6) % 3 == 0)
AA, AB, BB = nv3.NumcodecsArrayArrayCodec, nv3.NumcodecsArrayBytesCodec, nv3.NumcodecsBytesBytesCodec

# (zarr-python filter factory, data); zarrdask gets the JSON zarr-python wrote
FILTERS = [
    (lambda: zn.Delta(dtype="float64"), FLOATS),
    (lambda: zn.Delta(dtype="float64", astype="float32"), FLOATS),
    (lambda: zn.FixedScaleOffset(offset=1, scale=10, astype="int16"), FLOATS),
    (lambda: zn.FixedScaleOffset(offset=1, scale=10, dtype="float64", astype="int32"), FLOATS),
    (lambda: zn.Quantize(digits=3), FLOATS),
    (lambda: zn.BitRound(keepbits=10), FLOATS),
    (lambda: zn.AsType(encode_dtype="float32", decode_dtype="float64"), FLOATS),
    (lambda: zn.PackBits(), BOOLS),
]

COMPRESSORS = [
    lambda: zn.Zlib(level=3),
    lambda: zn.BZ2(level=4),
    lambda: zn.LZMA(),
    lambda: zn.LZ4(),
    lambda: zn.Zstd(level=2),
    lambda: zn.Blosc(),
    lambda: zn.Blosc(cname="zstd", clevel=3, shuffle=2),
    lambda: zn.Shuffle(),
    lambda: zn.CRC32(),
    lambda: zn.Adler32(),
    lambda: zn.Fletcher32(),
    lambda: zn.JenkinsLookup3(),
    lambda: zn.CRC32C(),
]

IDS = numcodecs_registry.numcodecs_ids()


def needs(*ids):
    """Skip unless numcodecs has all of ``ids`` (zfpy needs numcodecs >= 0.15 with numpy 2)."""
    missing = [i for i in ids if i not in IDS]
    return pytest.mark.skipif(bool(missing), reason=f"numcodecs {numcodecs.__version__} lacks {missing}")


SERIALIZERS = [
    pytest.param(lambda: zn.PCodec(level=3), marks=needs("pcodec"), id="pcodec"),
    pytest.param(lambda: zn.ZFPY(mode=4, tolerance=0.01), marks=needs("zfpy"), id="zfpy"),
]


def _ours(doc_list, data):
    """zarrdask's codecs for zarr-python's JSON, placed as an opened array places them."""
    return list(CodecChain.from_codecs([codec_from_json(d) for d in doc_list], spec=spec_of(data)).codecs)


@pytest.mark.parametrize("make, data", FILTERS, ids=lambda f: getattr(f, "__name__", ""))
def test_filters_match_zarr_python(make, data):
    raw, docs = zarr_python_write(data, filters=[make()])
    codecs = _ours(docs, data)
    assert [c.to_json() for c in codecs] == docs  # JSON read and written back unchanged
    assert codecs[0].kind == "array_array"
    assert encode_with(codecs, data) == raw  # the same chunk bytes
    decoded = decode_with(codecs, raw, spec_of(data))
    assert decoded.shape == data.shape and decoded.dtype == data.dtype
    expected = decode_with(codecs, encode_with(codecs, data), spec_of(data))
    np.testing.assert_array_equal(decoded, expected)


@pytest.mark.parametrize("make", COMPRESSORS, ids=lambda f: "")
def test_compressors_match_zarr_python(make):
    data = (np.arange(3000, dtype="int32") % 101).reshape(30, 100)
    raw, docs = zarr_python_write(data, compressors=[make()])
    codecs = _ours(docs, data)
    assert [c.to_json() for c in codecs] == docs
    assert codecs[1].kind == "bytes_bytes"
    assert encode_with(codecs, data) == raw
    np.testing.assert_array_equal(decode_with(codecs, raw, spec_of(data)), data)


@pytest.mark.parametrize("make", SERIALIZERS)
@pytest.mark.parametrize("filters, compressors", [([], []), ([lambda: zn.BitRound(keepbits=12)], [lambda: zn.Zlib()])])
def test_serializers_match_zarr_python(make, filters, compressors):
    raw, docs = zarr_python_write(
        FLOATS, filters=[f() for f in filters] or None, serializer=make(), compressors=[c() for c in compressors] or None
    )
    codecs = _ours(docs, FLOATS)  # a run of numcodecs codecs only: the probe finds the serializer
    assert [c.kind for c in codecs] == ["array_array"] * len(filters) + ["array_bytes"] + ["bytes_bytes"] * len(compressors)
    assert [c.to_json() for c in codecs] == docs
    assert encode_with(codecs, FLOATS) == raw
    decoded = decode_with(codecs, raw, spec_of(FLOATS))
    np.testing.assert_array_equal(decoded, decode_with(codecs, encode_with(codecs, FLOATS), spec_of(FLOATS)))
    np.testing.assert_allclose(decoded, FLOATS, atol=0.05)


@pytest.mark.parametrize(
    "make, data, zarrdask_config",
    [
        (lambda: zn.FixedScaleOffset(offset=1, scale=10, astype="int16"), FLOATS, {"offset": 1, "scale": 10, "astype": "int16"}),
        (lambda: zn.Quantize(digits=3), FLOATS, {"digits": 3}),
        (lambda: zn.AsType(encode_dtype="float32"), FLOATS, {"encode_dtype": "float32"}),
    ],
)
def test_evolve_fills_what_zarr_python_fills(make, data, zarrdask_config):
    _, docs = zarr_python_write(data, filters=[make()])
    ours = type(codec_from_json(docs[0])).from_config(zarrdask_config)
    assert ours.complete(spec_of(data)).to_json() == docs[0]


def test_shuffle_elementsize_from_the_data_type():
    data = np.arange(100, dtype="float64")
    raw, docs = zarr_python_write(data, compressors=[zn.Shuffle()])
    assert docs[1] == {"name": "numcodecs.shuffle", "configuration": {"elementsize": 8}}
    unset = nv3.Shuffle()
    assert unset.complete(spec_of(data)).to_json() == docs[1]
    assert encode_with([BytesCodec(), unset], data) == raw


@pytest.mark.parametrize(
    "codec, data, encoded_shape, encoded_dtype",
    [
        # numcodecs' own output: delta and fixedscaleoffset flatten, the others keep the shape
        (nv3.Delta(dtype="float64", astype="float32"), FLOATS, (60,), "float32"),
        (nv3.FixedScaleOffset(offset=0, scale=1, astype="int8"), FLOATS, (60,), "int8"),
        (nv3.Quantize(digits=2, dtype="float64"), FLOATS, (6, 10), "float64"),
        (AA("bitround", keepbits=5), FLOATS, (6, 10), "int64"),  # bitround returns the bits as integers
        (nv3.AsType(encode_dtype="float32", decode_dtype="float64"), FLOATS, (6, 10), "float32"),
        (nv3.PackBits(), BOOLS, (1 + 4,), "uint8"),
        (AA("categorize", labels=["a", "bc"], dtype="<U2", astype="u1"), np.array([["a", "bc"], ["x", "a"]]), (4,), "uint8"),
    ],
    ids=repr,
)
def test_filter_resolve_and_round_trip(codec, data, encoded_shape, encoded_dtype):
    spec = spec_of(data, fill_value=data.reshape(-1)[0])
    codec.validate(spec)
    resolved = codec.encoded_spec(spec)
    assert resolved.shape == encoded_shape and resolved.dtype == np.dtype(encoded_dtype)
    encoded = codec.encode(data, spec)
    assert encoded.shape == encoded_shape and encoded.dtype == np.dtype(encoded_dtype)
    decoded = codec.decode(encoded, spec)
    assert decoded.shape == data.shape and decoded.dtype == data.dtype
    if data.dtype.kind in "bU":
        np.testing.assert_array_equal(decoded, np.where(np.isin(data, ["x"]), "", data) if data.dtype.kind == "U" else data)
    else:
        np.testing.assert_allclose(decoded, data, atol=0.6)
    assert pickle.loads(pickle.dumps(codec)) == codec


def test_filter_dtype_must_match_the_chunk():
    with pytest.raises(CodecError, match="int32"):
        nv3.Delta(dtype="float64").validate(ChunkSpec((3,), np.dtype("int32"), 0))
    with pytest.raises(CodecError, match="bool"):
        nv3.PackBits().validate(ChunkSpec((3,), np.dtype("int32"), 0))
    with pytest.raises(CodecError, match="numcodecs.bitround.*int32.*float"):
        AA("bitround", keepbits=3).validate(ChunkSpec((3,), np.dtype("int32"), 0))
    with pytest.raises(CodecError, match="numcodecs.zlib.*array → array.*bytes"):
        AA("zlib").validate(ChunkSpec((3,), np.dtype("int32"), 0))


def test_filter_completes_dtype_per_chunk_spec():
    codec = nv3.Delta()
    for dtype in ("int16", "float32"):
        data = np.arange(10, dtype=dtype)
        np.testing.assert_array_equal(codec.decode(codec.encode(data, spec_of(data)), spec_of(data)), data)


def _default_codecs_of_kind(kind):
    """Every numcodecs id that builds without configuration and classifies as ``kind`` for int32."""
    out = []
    for codec_id in numcodecs_registry.numcodecs_ids():
        if codec_id in nv3.SPECIAL_CLASSES:
            continue
        try:
            codec = numcodecs.get_codec({"id": codec_id})
            found = nv3.classify(codec, np.dtype("int32"))
        except Exception:
            continue
        if found == kind:
            out.append(codec_id)
    return out


BYTES_BYTES_IDS = _default_codecs_of_kind("bytes_bytes")
CHECKSUM_IDS = {"crc32", "adler32", "fletcher32", "jenkins_lookup3", "crc32c"} & set(IDS)


def test_bytes_codecs_found_by_the_probe():
    assert {"zlib", "bz2", "lzma", "lz4", "gzip", "zstd", "blosc", "base64"} <= set(BYTES_BYTES_IDS)
    assert CHECKSUM_IDS <= set(BYTES_BYTES_IDS)
    assert {c for c in BYTES_BYTES_IDS if BB(c).checksum_size is not None} == CHECKSUM_IDS


@pytest.mark.parametrize("codec_id", BYTES_BYTES_IDS)
def test_bytes_codecs_round_trip_and_out(codec_id):
    codec = nv3.numcodecs_codec(codec_id, kind="bytes_bytes")
    assert type(codec) is BB
    spec = ChunkSpec((500,), np.dtype("int32"), 0)
    codec = codec.complete(spec)
    raw = (np.arange(500, dtype="int32") % 13).tobytes()
    encoded = codec.encode(raw, spec)
    assert bytes(codec.decode(encoded, spec, "k")) == raw
    out = bytearray(len(raw))
    codec.decode(encoded, spec, "k", out=memoryview(out))
    assert bytes(out) == raw
    with pytest.raises(CorruptChunkError, match="'k'"):
        codec.decode(encoded, spec, "k", out=memoryview(bytearray(len(raw) + 1)))
    if codec.checksum_size is not None:
        assert codec.encoded_size(len(raw)) == len(encoded) == len(raw) + 4
    else:
        assert codec.encoded_size(len(raw)) is None
    assert codec.to_json()["name"] == f"numcodecs.{codec_id}" and "configuration" in codec.to_json()
    assert pickle.loads(pickle.dumps(codec)) == codec


@pytest.mark.parametrize("codec_id", sorted(CHECKSUM_IDS))
def test_checksum_mismatch(codec_id):
    spec = ChunkSpec((100,), np.dtype("uint8"), 0)
    encoded = bytearray(bytes(BB(codec_id).encode(bytes(range(100)), spec)))
    encoded[50] ^= 0xFF
    with pytest.raises(ChecksumError, match="c/9"):
        BB(codec_id).decode(bytes(encoded), spec, "c/9")


def test_compressor_garbage():
    with pytest.raises(CorruptChunkError, match="c/1"):
        BB("zlib").decode(b"garbage", ChunkSpec((1,), np.dtype("u1"), 0), "c/1")


@needs("pcodec")
def test_serializer_garbage_and_wrong_type():
    spec = ChunkSpec((2, 3), np.dtype("float64"), 0)
    with pytest.raises(CorruptChunkError, match="c/2.*numcodecs.pcodec"):
        AB("pcodec").decode(b"garbage", spec, "c/2")
    encoded = AB("pcodec").encode(np.arange(6, dtype="int16").reshape(2, 3), spec_of(np.zeros((2, 3), "int16")))
    with pytest.raises(CorruptChunkError, match="c/3.*int16, expected float64"):
        AB("pcodec").decode(encoded, spec, "c/3")


def test_configuration_errors():
    with pytest.raises(CodecError, match="numcodecs.zlib"):
        BB("zlib", level=3, bogus=1)
    with pytest.raises(CodecError, match="encode_dtype"):
        nv3.AsType()
    with pytest.raises(CodecError, match="id"):
        BB("zlib", id="bz2")
    with pytest.raises(CodecError, match="id"):
        nv3.Delta(id="zlib")
    assert BB("zlib", id="zlib", level=1).to_json() == {"name": "numcodecs.zlib", "configuration": {"level": 1}}


def test_from_numcodecs():
    codec = nv3.from_numcodecs(numcodecs.Delta(dtype="<f8", astype="<f4"))
    assert codec.to_json() == {"name": "numcodecs.delta", "configuration": {"dtype": "<f8", "astype": "<f4"}}
    categorize = nv3.from_numcodecs(numcodecs.Categorize(["a"], dtype="U1"))
    assert isinstance(categorize, nv3.NumcodecsKindless)  # kind decided by its place
    assert isinstance(nv3.from_numcodecs(numcodecs.Categorize(["a"], dtype="U1"), "array_array"), AA)


def test_numpy_values_become_json():
    codec = nv3.FixedScaleOffset(offset=np.float64(1.5), scale=np.int64(10), dtype=np.dtype("f8"), astype=np.int16)
    assert codec.get_config() == {"offset": 1.5, "scale": 10, "dtype": "float64", "astype": "int16"}


# -- which kind ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "config, dtype, kind",
    [
        ({"id": "zlib"}, "f8", "bytes_bytes"),
        ({"id": "crc32"}, "f8", "bytes_bytes"),  # encodes to an array, but acts on the bytes
        ({"id": "blosc"}, "f8", "bytes_bytes"),  # records the item size, decodes back to bytes
        ({"id": "bitround", "keepbits": 4}, "f8", "array_array"),
        ({"id": "categorize", "labels": ["1"], "dtype": "<U1"}, "<U1", "array_array"),
        ({"id": "pcodec"}, "f8", "array_bytes"),
        ({"id": "zfpy", "mode": 4, "tolerance": 0.1}, "f4", "array_bytes"),
        ({"id": "json2"}, "i4", "array_bytes"),
        ({"id": "json2"}, "u1", "array_bytes"),
        ({"id": "vlen-utf8"}, "T", "array_bytes"),
        ({"id": "vlen-utf8"}, "O", "array_bytes"),
        ({"id": "vlen-bytes"}, "O", "array_bytes"),
        ({"id": "pickle"}, "f8", "array_bytes"),
    ],
)
def test_classify(config, dtype, kind):
    if config["id"] not in IDS:
        pytest.skip(f"numcodecs {numcodecs.__version__} has no {config['id']}")
    assert nv3.classify(numcodecs.get_codec(config), np.dtype(dtype)) == kind


def _unplaced(*names):
    return [codec_from_json({"name": f"numcodecs.{n}", "configuration": {}}) for n in names]


@needs("pcodec", "zfpy")
def test_position_places_numcodecs_codecs():
    z1, z2, z3 = _unplaced("zlib", "bz2", "lz4")
    placed = assign_kinds([z1, BytesCodec(), z2, z3])
    assert [c.kind for c in placed] == ["array_array", "array_bytes", "bytes_bytes", "bytes_bytes"]
    (only,) = assign_kinds(_unplaced("pcodec"))
    assert isinstance(only, AB)
    t = codec_from_json({"name": "transpose", "configuration": {"order": [1, 0]}})
    crc = codec_from_json("crc32c")
    bitround = codec_from_json({"name": "numcodecs.bitround", "configuration": {"keepbits": 8}})
    placed = assign_kinds([bitround, t, *_unplaced("zfpy"), crc, *_unplaced("zlib")])
    assert [c.kind for c in placed] == ["array_array", "array_array", "array_bytes", "bytes_bytes", "bytes_bytes"]


@needs("zfpy")
def test_a_run_needs_the_data_type():
    run = [codec_from_json({"name": "numcodecs.bitround", "configuration": {"keepbits": 8}}), *_unplaced("zfpy", "zlib")]
    assert assign_kinds(run) is None
    pending = CodecChain.from_codecs(run)
    assert isinstance(pending, PendingCodecChain) and pending.to_json() == [c.to_json() for c in run]
    with pytest.raises(CodecError, match="not bound"):
        pending.encode(FLOATS, spec_of(FLOATS))
    chain = pending.bind(spec_of(FLOATS))
    assert [c.kind for c in chain.codecs] == ["array_array", "array_bytes", "bytes_bytes"]
    with pytest.raises(MetadataError, match="data type"):
        from zarrdask.codecs.chain_validate import validate_chain

        validate_chain(run, key="a/zarr.json")


def test_a_run_without_a_serializer():
    with pytest.raises(MetadataError, match=r"a/zarr.json: codecs\[1\] \('numcodecs.zlib'\) acts on the bytes"):
        assign_kinds(
            [codec_from_json({"name": "numcodecs.bitround", "configuration": {"keepbits": 8}}), *_unplaced("zlib", "bz2")],
            key="a/zarr.json",
            spec=spec_of(FLOATS),
        )


@needs("zfpy")
def test_a_sharding_codec_places_its_inner_run():
    doc = {
        "name": "sharding_indexed",
        "configuration": {
            "chunk_shape": [3, 5],
            "codecs": [{"name": "numcodecs.zfpy", "configuration": {"mode": 4, "tolerance": 0.01}},
                       {"name": "numcodecs.zlib", "configuration": {}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
            "index_location": "end",
        },
    }
    sharding = codec_from_json(doc)
    assert isinstance(sharding.codec_chain, PendingCodecChain)
    placed = CodecChain.from_codecs([sharding], spec=spec_of(FLOATS)).array_bytes
    assert [c.kind for c in placed.codec_chain.codecs] == ["array_bytes", "bytes_bytes"]
    assert placed.to_json() == doc
    np.testing.assert_allclose(placed.decode(placed.encode(FLOATS, spec_of(FLOATS)), spec_of(FLOATS)), FLOATS, atol=0.01)


# -- what to install -------------------------------------------------------------------
def test_missing_optional_codec_names_what_to_install(monkeypatch):
    ids = [i for i in numcodecs_registry.numcodecs_ids() if i != "pcodec"]
    monkeypatch.setattr(numcodecs_registry, "numcodecs_ids", lambda: ids)
    real = numcodecs_registry._installed
    monkeypatch.setattr(numcodecs_registry, "_installed", lambda p: None if p == "pcodec" else real(p))
    with pytest.raises(UnknownCodecError) as e:
        codec_from_json({"name": "numcodecs.pcodec", "configuration": {"level": 3}}, key="a/zarr.json")
    message = str(e.value)
    assert message.startswith("a/zarr.json: codec 'numcodecs.pcodec': ")
    assert "optional package pcodec" in message and 'pip install "numcodecs[pcodec]"' in message
    with pytest.raises(UnknownCodecError, match=r'\.zarray: .*pip install "numcodecs\[pcodec\]"'):
        numcodecs_registry.get_numcodec({"id": "pcodec"}, where=".zarray")


def test_missing_codec_with_a_trailing_format_version():
    # msgpack2 comes with numcodecs' "msgpack" extra
    message = numcodecs_registry.missing_codec_message("msgpack2")
    assert "'msgpack'" in message and 'numcodecs[msgpack]' in message


# -- the module docstring's example configurations -------------------------------------------
DOC_EXAMPLES = [
    pytest.param(
        [{"name": "numcodecs.delta", "configuration": {"dtype": "float64", "astype": "float32"}},
         {"name": "bytes", "configuration": {"endian": "little"}},
         {"name": "numcodecs.zlib", "configuration": {"level": 3}}],
        ["array_array", "array_bytes", "bytes_bytes"], id="delta-bytes-zlib"),
    pytest.param(
        [{"name": "numcodecs.bitround", "configuration": {"keepbits": 8}},
         {"name": "numcodecs.zfpy", "configuration": {"mode": 4, "tolerance": 0.01}},
         {"name": "numcodecs.zlib", "configuration": {}}],
        ["array_array", "array_bytes", "bytes_bytes"], id="bitround-zfpy-zlib", marks=needs("zfpy")),
    pytest.param([{"name": "numcodecs.pcodec", "configuration": {"level": 3}}], ["array_bytes"], id="pcodec",
                 marks=needs("pcodec")),
    pytest.param(
        [{"name": "bytes", "configuration": {"endian": "little"}},
         {"name": "numcodecs.shuffle", "configuration": {"elementsize": 8}}],
        ["array_bytes", "bytes_bytes"], id="bytes-shuffle"),
]


@pytest.mark.parametrize("docs, kinds", DOC_EXAMPLES)
def test_module_docstring_examples(docs, kinds):
    """Placed as the docstring says, and the same chunk bytes as zarr-python for that JSON."""
    import zarr.registry

    assert all(json_doc.get("name") for json_doc in docs)
    ours = _ours(docs, FLOATS)
    assert [c.kind for c in ours] == kinds
    theirs = [zarr.registry.get_codec_class(d["name"]).from_dict(d) for d in docs]
    at = kinds.index("array_bytes")
    raw, written = zarr_python_write(FLOATS, filters=theirs[:at] or None, serializer=theirs[at],
                                     compressors=theirs[at + 1:] or None)
    assert written == docs
    assert encode_with(ours, FLOATS) == raw
