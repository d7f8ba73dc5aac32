"""Helpers shared by the codec tests: run a codec list by hand, and ask
zarr-python 3 for the chunk bytes and codec JSON it writes."""

from __future__ import annotations

import json
import warnings
from typing import Any, Sequence

import numpy as np

from zarrdask.codecs.abc import ChunkSpec, Codec
from zarrdask.codecs.chain_validate import validate_chain


def spec_of(data: np.ndarray, fill_value: Any = 0) -> ChunkSpec:
    return ChunkSpec(tuple(data.shape), data.dtype, fill_value)


def encode_with(codecs: Sequence[Codec], data: np.ndarray) -> bytes:
    """Encode one chunk through ``codecs`` following v3 core's procedure."""
    aa, ab, bb = validate_chain(codecs, key="test")
    spec = spec_of(data)
    chunk = data
    for c in aa:
        chunk, spec = c.encode(chunk, spec), c.encoded_spec(spec)
    out = ab.encode(chunk, spec)
    for c in bb:
        out = c.encode(out, spec)
    return bytes(out)


def decode_with(codecs: Sequence[Codec], raw: bytes, spec: ChunkSpec, key: str = "c/0") -> np.ndarray:
    aa, ab, bb = validate_chain(codecs, key="test")
    specs = [spec]
    for c in aa:
        specs.append(c.encoded_spec(specs[-1]))
    data: Any = raw
    for c in reversed(bb):
        data = c.decode(data, specs[-1], key)
    chunk = ab.decode(data, specs[-1], key)
    for c, s in zip(reversed(aa), reversed(specs[:-1])):
        chunk = c.decode(chunk, s)
    return chunk


def zarr_python_write(
    data: np.ndarray,
    *,
    filters: Any = None,
    serializer: Any = "auto",
    compressors: Any = None,
    fill_value: Any = None,
    document: bool = False,
) -> tuple[bytes, Any]:
    """Write ``data`` as one chunk with zarr-python 3; return (chunk bytes, codecs JSON),
    or (chunk bytes, the whole zarr.json) with ``document=True``."""
    import zarr
    from zarr.storage import MemoryStore

    store_dict: dict[str, Any] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        array = zarr.create_array(
            MemoryStore(store_dict=store_dict),
            shape=data.shape,
            chunks=data.shape,
            dtype=data.dtype,
            filters=filters,
            serializer=serializer,
            compressors=compressors,
            fill_value=fill_value,
            config={"write_empty_chunks": True},
        )
        array[...] = data
    key = "c/" + "/".join("0" * data.ndim) if data.ndim else "c"
    doc = json.loads(store_dict["zarr.json"].to_bytes())
    return store_dict[key].to_bytes(), doc if document else doc["codecs"]
