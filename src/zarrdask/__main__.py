"""``python -m zarrdask``: a short end-to-end example.

Writes a Zarr v3 and a Zarr v2 array into a local directory, reads them back,
checks the values, and prints what was stored.
"""

from __future__ import annotations

import sys
import tempfile
import time

import numpy as np

import zarrdask


def main() -> int:
    y, x = np.mgrid[0:1024, 0:1024].astype("float32")
    field = np.sin(x / 97.0) * np.cos(y / 61.0) + np.random.default_rng(0).normal(0, 0.01, x.shape).astype("float32")
    with tempfile.TemporaryDirectory(suffix=".zarr") as root:
        for zarr_format in (3, 2):
            t0 = time.perf_counter()
            root_group = zarrdask.open_group(root, mode="w", zarr_format=zarr_format)
            arr = root_group.create_array(
                "field", shape=field.shape, dtype=field.dtype, chunks=(256, 256),
                attributes={"units": "m"},
            )
            arr[...] = field
            t1 = time.perf_counter()
            back = zarrdask.open_array(root, path="field", mode="r")
            window = back[100:110, 200:210]
            ok = np.array_equal(back[...], field) and np.array_equal(window, field[100:110, 200:210])
            t2 = time.perf_counter()
            info = back.info
            print(f"Zarr v{zarr_format}: wrote {field.nbytes / 1e6:.1f} MB in {t1 - t0:.3f} s, "
                  f"read back in {t2 - t1:.3f} s, values equal: {ok}")
            print(f"  chunks {back.chunks}, {info['Chunks initialized']} chunks stored, "
                  f"storage ratio {info['Storage ratio']}, attrs {dict(back.attrs)}")
            print("  " + str(root_group.tree()).replace("\n", "\n  "))
            if not ok:
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
