"""One adapter per implementation, each importing only its own library.

Every adapter offers the same operations: ``configure(threads)`` (before any
other call), ``create`` + ``write``, ``open``, ``read_all``, ``read_window``
and ``dask_array`` (``None`` when the implementation has no dask integration).
Thread limits are set the same way everywhere: ``threads`` worker threads for
chunk I/O and codecs, blosc's own internal threads off.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .cases import DTYPE, Case

IMPLS = ("zarrdask", "zarr-python", "zarrs", "tensorstore")


def _numcodecs_single_thread() -> None:
    import numcodecs.blosc

    numcodecs.blosc.set_nthreads(1)
    numcodecs.blosc.use_threads = False


class Impl:
    name = ""

    def configure(self, threads: int) -> None:
        raise NotImplementedError

    def config_summary(self) -> dict[str, Any]:
        return {}

    def create(self, path: str, case: Case, size: int) -> Any:
        raise NotImplementedError

    def write(self, handle: Any, data: np.ndarray) -> None:
        raise NotImplementedError

    def open(self, path: str, case: Case) -> Any:
        raise NotImplementedError

    def read_all(self, handle: Any) -> np.ndarray:
        raise NotImplementedError

    def read_window(self, handle: Any, i: int, j: int, h: int, w: int) -> np.ndarray:
        raise NotImplementedError

    def dask_array(self, path: str, case: Case) -> Any:
        return None

    def dask_unavailable_reason(self) -> str:
        return "no dask integration"


# -- zarrdask -------------------------------------------------------------------------
class Zarrdask(Impl):
    name = "zarrdask"

    def configure(self, threads: int) -> None:
        # ZARRDASK_THREADS is set in the worker's environment as well
        _numcodecs_single_thread()
        import zarrdask
        import zarrdask.config

        zarrdask.config.set(threads=threads)
        zarrdask.open_array  # the format core and its codecs, which `import zarrdask` loads on first use
        self.zarrdask = zarrdask

    def config_summary(self) -> dict[str, Any]:
        import zarrdask.config

        return {"zarrdask.config.threads": zarrdask.config.get("threads"), "version": self.zarrdask.__version__}

    def _codec_kwargs(self, case: Case) -> dict[str, Any]:
        if case.zarr_format == 2:
            assert case.codec == "blosc-lz4"
            return {"compressors": {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}}
        comp = {
            "zstd1": [{"name": "zstd", "configuration": {"level": 1, "checksum": False}}],
            "blosc-lz4": [{"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 4, "blocksize": 0}}],
            "none": None,
        }[case.codec]
        return {"compressors": comp}

    def create(self, path: str, case: Case, size: int) -> Any:
        return self.zarrdask.create_array(
            path, shape=(size, size), dtype=DTYPE, chunks=case.chunks, shards=case.shards,
            zarr_format=case.zarr_format, fill_value=0.0, overwrite=True, **self._codec_kwargs(case),
        )

    def write(self, handle: Any, data: np.ndarray) -> None:
        handle[...] = data

    def open(self, path: str, case: Case) -> Any:
        return self.zarrdask.open_array(path, mode="r")

    def read_all(self, handle: Any) -> np.ndarray:
        return handle[...]

    def read_window(self, handle: Any, i: int, j: int, h: int, w: int) -> np.ndarray:
        return handle[i : i + h, j : j + w]

    def dask_array(self, path: str, case: Case) -> Any:
        from_zarr = getattr(self.zarrdask, "from_zarr", None)
        if from_zarr is None:
            return None
        return from_zarr(path)

    def dask_unavailable_reason(self) -> str:
        return "zarrdask.from_zarr does not exist yet"


# -- zarr-python 3 (its default codec pipeline) ------------------------------------------
class ZarrPython(Impl):
    name = "zarr-python"

    def configure(self, threads: int) -> None:
        _numcodecs_single_thread()
        import zarr

        # zarr 3.1: codecs and LocalStore I/O run through asyncio.to_thread on the
        # loop's default executor, which is a ThreadPoolExecutor(threading.max_workers)
        # (created on first use, so this must come first). async.concurrency bounds
        # the coroutines in flight, not threads; it stays at zarr's default.
        zarr.config.set({"threading.max_workers": threads})
        self.zarr = zarr

    def config_summary(self) -> dict[str, Any]:
        z = self.zarr
        return {
            "threading.max_workers": z.config.get("threading.max_workers"),
            "async.concurrency": z.config.get("async.concurrency"),
            "codec_pipeline.path": z.config.get("codec_pipeline.path"),
            "version": z.__version__,
        }

    def _codec_kwargs(self, case: Case) -> dict[str, Any]:
        import numcodecs
        from zarr.codecs import BloscCodec, ZstdCodec

        if case.zarr_format == 2:
            assert case.codec == "blosc-lz4"
            return {"compressors": numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE, blocksize=0)}
        comp = {
            "zstd1": [ZstdCodec(level=1, checksum=False)],
            "blosc-lz4": [BloscCodec(cname="lz4", clevel=5, shuffle="shuffle", typesize=4, blocksize=0)],
            "none": None,
        }[case.codec]
        return {"compressors": comp}

    def create(self, path: str, case: Case, size: int) -> Any:
        return self.zarr.create_array(
            store=path, shape=(size, size), dtype=DTYPE, chunks=case.chunks, shards=case.shards,
            zarr_format=case.zarr_format, fill_value=0.0, overwrite=True, **self._codec_kwargs(case),
        )

    def write(self, handle: Any, data: np.ndarray) -> None:
        handle[...] = data

    def open(self, path: str, case: Case) -> Any:
        return self.zarr.open_array(path, mode="r")

    def read_all(self, handle: Any) -> np.ndarray:
        return handle[...]

    def read_window(self, handle: Any, i: int, j: int, h: int, w: int) -> np.ndarray:
        return handle[i : i + h, j : j + w]

    def dask_array(self, path: str, case: Case) -> Any:
        import dask.array as da

        return da.from_zarr(self.zarr.open_array(path, mode="r"))


# -- zarr-python 3 with the zarrs (Rust) codec pipeline --------------------------------
class ZarrsPipeline(ZarrPython):
    """zarr-python with ``codec_pipeline.path = "zarrs.ZarrsCodecPipeline"``.

    The zarrs pipeline sizes its own (rayon) thread pool from
    ``threading.max_workers``, so the same setting gives it ``threads`` threads.
    ``codec_pipeline.strict``: an unsupported case raises instead of silently
    falling back to zarr-python's default pipeline (which would be measured
    under the zarrs name).
    """

    name = "zarrs"

    def configure(self, threads: int) -> None:
        _numcodecs_single_thread()
        import zarr
        import zarrs  # noqa: F401  (fails here, not later, when zarrs is missing)

        zarr.config.set({
            "threading.max_workers": threads,
            "codec_pipeline.path": "zarrs.ZarrsCodecPipeline",
            "codec_pipeline.strict": True,
        })
        self.zarr = zarr

    def config_summary(self) -> dict[str, Any]:
        from importlib.metadata import version

        out = super().config_summary()
        out["zarrs"] = version("zarrs")
        out["codec_pipeline.strict"] = self.zarr.config.get("codec_pipeline.strict")
        return out


# -- tensorstore ----------------------------------------------------------------------
class Tensorstore(Impl):
    name = "tensorstore"

    def configure(self, threads: int) -> None:
        _numcodecs_single_thread()  # not used by tensorstore; kept for symmetry
        import tensorstore as ts

        self.ts = ts
        # no cache_pool: tensorstore keeps no decoded chunks, like the others
        self.context_spec = {
            "data_copy_concurrency": {"limit": threads},
            "file_io_concurrency": {"limit": threads},
        }
        self.context = ts.Context(self.context_spec)

    def config_summary(self) -> dict[str, Any]:
        from importlib.metadata import version

        return {"context": self.context_spec, "version": version("tensorstore")}

    @staticmethod
    def _driver(case: Case) -> str:
        return "zarr" if case.zarr_format == 2 else "zarr3"

    def _metadata(self, case: Case, size: int) -> dict[str, Any]:
        if case.zarr_format == 2:
            assert case.codec == "blosc-lz4"
            return {
                "shape": [size, size], "chunks": list(case.chunks), "dtype": "<f4", "fill_value": 0.0,
                "order": "C", "filters": None, "dimension_separator": ".",
                "compressor": {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0},
            }
        codecs: list[dict[str, Any]] = [{"name": "bytes", "configuration": {"endian": "little"}}]
        if case.codec == "zstd1":
            codecs.append({"name": "zstd", "configuration": {"level": 1, "checksum": False}})
        elif case.codec == "blosc-lz4":
            codecs.append({"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 4, "blocksize": 0}})
        if case.shards is not None:
            codecs = [{
                "name": "sharding_indexed",
                "configuration": {
                    "chunk_shape": list(case.chunks),
                    "codecs": codecs,
                    "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
                    "index_location": "end",
                },
            }]
        return {
            "shape": [size, size], "data_type": "float32", "fill_value": 0.0,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(case.stored_chunks)}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "codecs": codecs,
        }

    def create(self, path: str, case: Case, size: int) -> Any:
        spec = {"driver": self._driver(case), "kvstore": {"driver": "file", "path": path}, "metadata": self._metadata(case, size)}
        return self.ts.open(spec, context=self.context, create=True, delete_existing=True).result()

    def write(self, handle: Any, data: np.ndarray) -> None:
        handle.write(data).result()

    def open(self, path: str, case: Case) -> Any:
        spec = {"driver": self._driver(case), "kvstore": {"driver": "file", "path": path}}
        return self.ts.open(spec, context=self.context, open=True, read=True).result()

    def read_all(self, handle: Any) -> np.ndarray:
        return handle.read().result()

    def read_window(self, handle: Any, i: int, j: int, h: int, w: int) -> np.ndarray:
        return handle[i : i + h, j : j + w].read().result()

    def dask_unavailable_reason(self) -> str:
        return "tensorstore has no dask integration"


def get(name: str) -> Impl:
    return {"zarrdask": Zarrdask, "zarr-python": ZarrPython, "zarrs": ZarrsPipeline, "tensorstore": Tensorstore}[name]()
