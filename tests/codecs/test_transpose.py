"""The ``transpose`` codec (zarr-specs v3 codecs/transpose)."""

from __future__ import annotations

import itertools
import pickle

import numpy as np
import pytest

from zarrdask.codecs.abc import ChunkSpec
from zarrdask.codecs.transpose import TransposeCodec
from zarrdask.errors import CodecError

from ._helpers import spec_of

DATA = np.arange(2 * 3 * 5, dtype="int16").reshape(2, 3, 5)


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_round_trip_3d(order):
    codec = TransposeCodec(order)
    spec = spec_of(DATA)
    codec.validate(spec)
    encoded = codec.encode(DATA, spec)
    resolved = codec.encoded_spec(spec)
    assert encoded.shape == resolved.shape == tuple(DATA.shape[i] for i in order)
    assert resolved.dtype == spec.dtype
    np.testing.assert_array_equal(encoded, np.transpose(DATA, order))
    np.testing.assert_array_equal(codec.decode(encoded, spec), DATA)


def test_spec_definition_of_positions():
    # B[B_pos] = A[A_pos] where B_pos[i] = A_pos[order[i]]
    order = (2, 0, 1)
    encoded = TransposeCodec(order).encode(DATA, spec_of(DATA))
    for a_pos in itertools.product(*map(range, DATA.shape)):
        b_pos = tuple(a_pos[order[i]] for i in range(3))
        assert encoded[b_pos] == DATA[a_pos]


def test_encode_and_decode_are_views():
    codec = TransposeCodec((1, 0))
    a = np.zeros((2, 3))
    assert np.shares_memory(codec.encode(a, spec_of(a)), a)


def test_zero_dimensional():
    codec = TransposeCodec(())
    a = np.array(3.0)
    assert codec.decode(codec.encode(a, spec_of(a)), spec_of(a)) == 3.0


def test_json():
    codec = TransposeCodec.from_config({"order": [2, 0, 1]})
    assert codec.order == (2, 0, 1)
    assert codec.to_json() == {"name": "transpose", "configuration": {"order": [2, 0, 1]}}
    assert pickle.loads(pickle.dumps(codec)) == codec
    assert TransposeCodec([np.int64(1), np.int64(0)]).order == (1, 0)


@pytest.mark.parametrize(
    "order",
    ["C", "F", [0, 0, 1], [1, 2], [0, 1, 3], [0, True], [0, 1.0], 5, [-1, 0]],
    ids=repr,
)
def test_invalid_orders(order):
    with pytest.raises(CodecError, match="order"):
        TransposeCodec(order)


def test_legacy_constants_explain_the_replacement():
    with pytest.raises(CodecError, match=r"no longer"):
        TransposeCodec.from_config({"order": "F"})


def test_configuration_errors():
    with pytest.raises(CodecError, match="required"):
        TransposeCodec.from_config({})
    with pytest.raises(CodecError, match="unknown"):
        TransposeCodec.from_config({"order": [0], "extra": 1})


def test_rank_mismatch():
    codec = TransposeCodec((1, 0))
    spec = ChunkSpec((2, 3, 4), np.dtype("f4"), 0)
    with pytest.raises(CodecError, match="3 dimensions"):
        codec.validate(spec)
    with pytest.raises(CodecError, match="3 dimensions"):
        codec.encoded_spec(spec)
    with pytest.raises(CodecError):
        codec.encode(np.zeros((2, 3, 4)), spec)
