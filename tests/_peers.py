"""What the installed peers do, found by asking them (test helper).

zarr-python's ``blosc`` codec records ``typesize`` in ``zarr.json`` but, with
numcodecs older than 0.16 (no ``typesize`` argument), compresses with type size
1 whatever it records (zarr-python's own comment: numcodecs PR 713). Its blosc
chunks then differ from the spec's — and from zarrdask's, which compresses
with the recorded type size on every numcodecs version — while both read each
other's chunks (a blosc frame carries its type size). Tests comparing blosc
bytes with zarr-python skip with :data:`BLOSC_TYPESIZE_REASON` then.
"""

from __future__ import annotations

import functools

import numpy as np

BLOSC_TYPESIZE_REASON = (
    "zarr-python compresses blosc with type size 1 whatever it records in zarr.json "
    "(numcodecs < 0.16 has no typesize argument), so its blosc chunk bytes differ"
)


@functools.lru_cache(maxsize=None)
def zarr_python_blosc_uses_typesize() -> bool:
    """Whether zarr-python's v3 ``blosc`` compresses with the ``typesize`` it records."""
    import warnings

    import zarr
    from zarr.codecs import BloscCodec
    from zarr.storage import MemoryStore

    store: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        array = zarr.create_array(MemoryStore(store_dict=store), shape=(16,), chunks=(16,), dtype="int32",
                                  compressors=[BloscCodec(cname="lz4", shuffle="shuffle", typesize=4)])
        array[...] = np.arange(16, dtype="int32")
    return store["c/0"].to_bytes()[3] == 4
