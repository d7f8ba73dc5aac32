"""One vocabulary binds a codec spec to a chunk spec (``encoded_spec``,
``complete``, ``bind``, ``as_kind``); the former names (``resolve``,
``evolve``, ``place``, ``placed``) still work, with a DeprecationWarning,
and a codec written against them is bound under the new ones."""

from __future__ import annotations

import numpy as np
import pytest

from zarrdask.codecs import abc, chain_validate
from zarrdask.codecs.abc import ArrayArrayCodec, ChunkSpec
from zarrdask.codecs.blosc_codec import BloscCodec
from zarrdask.codecs.bytes_codec import BytesCodec
from zarrdask.codecs.chain import CodecChain
from zarrdask.codecs.numcodecs_v3 import NumcodecsKindless, NumcodecsUnplaced
from zarrdask.codecs.transpose import TransposeCodec

SPEC = ChunkSpec((4, 6), np.dtype("f4"), 0.0)


def test_the_former_names_are_deprecated_aliases():
    t = TransposeCodec(order=(1, 0))
    with pytest.warns(DeprecationWarning, match=r"resolve\(\) is deprecated: use encoded_spec\(\)"):
        assert t.resolve(SPEC) == t.encoded_spec(SPEC)
    blosc = BloscCodec()
    with pytest.warns(DeprecationWarning, match="evolve"):
        assert blosc.evolve(SPEC) == blosc.complete(SPEC)
    chain = CodecChain([t], BytesCodec(), [blosc])
    with pytest.warns(DeprecationWarning, match="place"):
        assert chain.place(SPEC) == chain.bind(SPEC)
    kindless = NumcodecsKindless("zlib", level=1)
    with pytest.warns(DeprecationWarning, match="placed"):
        assert kindless.placed("bytes_bytes") == kindless.as_kind("bytes_bytes")
    with pytest.warns(DeprecationWarning, match="assign_kinds"):
        assert chain_validate.place_codecs([kindless, BytesCodec()]) == chain_validate.assign_kinds(
            [kindless, BytesCodec()]
        )
    assert abc.UnplacedCodec is abc.KindlessCodec and NumcodecsUnplaced is NumcodecsKindless


def test_a_codec_written_against_the_former_names_is_bound_under_the_new_ones():
    with pytest.warns(DeprecationWarning, match=r"resolve\(\) is deprecated: define encoded_spec\(\)"):

        class Flatten(ArrayArrayCodec):
            name = "test.flatten"

            def resolve(self, spec):
                return spec.with_shape((int(np.prod(spec.shape)),))

            def encode(self, chunk, spec):
                return chunk.reshape(-1)

            def decode(self, chunk, spec):
                return chunk.reshape(spec.shape)

    chain = CodecChain([Flatten()], BytesCodec(), [])
    assert chain.encoded_spec(SPEC).shape == (24,)
    data = np.arange(24, dtype="f4").reshape(4, 6)
    np.testing.assert_array_equal(chain.decode(chain.encode(data, SPEC), SPEC), data)
