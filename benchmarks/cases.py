"""The benchmark cases, the test data and the on-disk layout of a stored case.

Every case is one 2-D ``float32`` array of ``size x size`` elements (default
8192 x 8192 = 256 MiB). A case fixes the Zarr format, the chunk (and shard)
shape and the codecs; :mod:`benchmarks.impls` turns it into each
implementation's own way of spelling the same array.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass

import numpy as np

DTYPE = np.dtype("<f4")

# quantisation step of the test data (like a sensor with 8 fractional bits)
QUANTUM = 1 / 256


@dataclass(frozen=True)
class Case:
    name: str
    title: str
    zarr_format: int
    chunks: tuple[int, int]  # the decode unit (the inner chunk when sharded)
    shards: tuple[int, int] | None
    codec: str  # "zstd1" | "blosc-lz4" | "none"

    def scaled(self, size: int) -> Case:
        """The case for a ``size x size`` array (chunks and shards clamped to it)."""
        chunks = tuple(min(c, size) for c in self.chunks)
        shards = None if self.shards is None else tuple(min(s, size) for s in self.shards)
        if shards is not None and any(s % c for s, c in zip(shards, chunks)):
            raise ValueError(f"case {self.name}: size {size} gives shards {shards} not a multiple of {chunks}")
        return Case(self.name, self.title, self.zarr_format, chunks, shards, self.codec)  # type: ignore[arg-type]

    @property
    def stored_chunks(self) -> tuple[int, int]:
        """The shape of one stored object (a shard, or a chunk)."""
        return self.shards or self.chunks

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> Case:
        return cls(
            d["name"], d["title"], d["zarr_format"], tuple(d["chunks"]),
            None if d["shards"] is None else tuple(d["shards"]), d["codec"],
        )


CASES: dict[str, Case] = {
    c.name: c
    for c in [
        Case("v3-zstd", "v3, zstd level 1, 512x512 chunks", 3, (512, 512), None, "zstd1"),
        Case("v3-blosc", "v3, blosc lz4 clevel 5 + byte shuffle, 512x512 chunks", 3, (512, 512), None, "blosc-lz4"),
        Case("v3-raw", "v3, uncompressed, 512x512 chunks", 3, (512, 512), None, "none"),
        Case("v3-sharded", "v3, 2048x2048 shards of 256x256 chunks, zstd level 1", 3, (256, 256), (2048, 2048), "zstd1"),
        Case("v2-blosc", "v2, blosc lz4 clevel 5 + byte shuffle, 512x512 chunks", 2, (512, 512), None, "blosc-lz4"),
    ]
}


# -- test data ---------------------------------------------------------------------
def make_data(size: int, seed: int = 0) -> np.ndarray:
    """A smooth field plus Gaussian noise, quantised to 1/256.

    Around 280 with waves of amplitude 15 and 10 (a temperature-like field), plus
    noise of standard deviation 0.5, rounded to multiples of 1/256. Compresses
    about 1.7x with zstd level 1 and 2.1x with blosc lz4 + shuffle: codecs have
    real work to do (random data is stored raw, constant data trips empty-chunk
    shortcuts).
    """
    t = np.linspace(0.0, 1.0, size, dtype=np.float32)
    x, y = t[None, :], t[:, None]
    two_pi = np.float32(2 * np.pi)
    # sin(a x) cos(b y) and sin(c x + d y) as outer products (cheap, float32 throughout)
    field = np.float32(15) * np.sin(two_pi * 3 * x) * np.cos(two_pi * 2 * y)
    field += np.float32(10) * (np.sin(two_pi * 5 * x) * np.cos(two_pi * 7 * y) + np.cos(two_pi * 5 * x) * np.sin(two_pi * 7 * y))
    field += np.float32(280)
    rng = np.random.default_rng(seed)
    noise = rng.standard_normal((size, size), dtype=np.float32)
    noise *= np.float32(0.5)
    field += noise
    del noise
    field *= np.float32(1 / QUANTUM)
    np.round(field, out=field)
    field *= np.float32(QUANTUM)
    return field.astype(DTYPE, copy=False)


def data_path(workdir: str, size: int) -> str:
    return os.path.join(workdir, f"data-{size}.npy")


def ensure_data(workdir: str, size: int) -> str:
    path = data_path(workdir, size)
    if not os.path.exists(path):
        os.makedirs(workdir, exist_ok=True)
        tmp = path + ".tmp.npy"
        np.save(tmp, make_data(size))
        os.replace(tmp, path)
    return path


# -- the stored layout ---------------------------------------------------------------
def object_key(case: Case, i: int, j: int) -> str:
    """The store key of stored object (i, j) (default key encodings of both formats)."""
    return f"{i}.{j}" if case.zarr_format == 2 else f"c/{i}/{j}"


def stored_bytes(root: str) -> int:
    total = 0
    for dirpath, _, files in os.walk(root):
        for f in files:
            total += os.path.getsize(os.path.join(dirpath, f))
    return total


def numcodecs_decoder(case: Case):
    """The numcodecs codec that decodes one chunk of the case (None: uncompressed)."""
    import numcodecs

    if case.codec == "zstd1":
        return numcodecs.Zstd(level=1)
    if case.codec == "blosc-lz4":
        return numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE)
    if case.codec == "none":
        return None
    raise ValueError(case.codec)


def load_encoded_chunks(case: Case, root: str, size: int) -> list[tuple[tuple[int, int], memoryview]]:
    """Every encoded chunk of a stored case, in memory: ``[((row, col), bytes)]``.

    ``(row, col)`` is the chunk's position in the chunk grid (inner chunks for a
    sharded array, whose shard index - ``bytes`` + ``crc32c`` at the end, as
    ``create_array(shards=)`` writes it in all three implementations - is parsed
    here).
    """
    stored = case.stored_chunks
    grid = (-(-size // stored[0]), -(-size // stored[1]))
    out: list[tuple[tuple[int, int], memoryview]] = []
    for i in range(grid[0]):
        for j in range(grid[1]):
            with open(os.path.join(root, object_key(case, i, j)), "rb") as f:
                blob = f.read()
            if case.shards is None:
                out.append(((i, j), memoryview(blob)))
                continue
            per = (stored[0] // case.chunks[0], stored[1] // case.chunks[1])
            n = per[0] * per[1]
            index = np.frombuffer(blob, dtype="<u8", count=2 * n, offset=len(blob) - 16 * n - 4).reshape(n, 2)
            mv = memoryview(blob)
            for k, (offset, nbytes) in enumerate(index.tolist()):
                if offset == 2**64 - 1:
                    continue  # an empty inner chunk (none in this data)
                r, c = divmod(k, per[1])
                out.append(((i * per[0] + r, j * per[1] + c), mv[offset : offset + nbytes]))
    return out
