"""``Array.info``: a summary of an array, printed as a table with zarr-python's labels."""

from __future__ import annotations

from typing import Any

from ..metadata.dtypes import display_name

__all__ = ["ArrayInfo"]


class ArrayInfo:
    """A summary of an array (``Array.info``); ``repr`` prints it as a table. Its
    labels are zarr-python's (``No. bytes``, ``Storage ratio``, …); ``zarrdask
    info`` on the command line uses the same ones."""

    def __init__(self, array: Any) -> None:
        a = array
        self.items: dict[str, Any] = {
            "Name": a.name,
            "Type": "Array",
            "Zarr format": a.zarr_format,
            "Data type": display_name(a.dtype, a.zarr_format),
            "Shape": a.shape,
            **({"Chunk grid": a.chunk_grid} if a.chunk_grid != "regular" else {}),
            "Chunk shape": a.chunks,
            "Shard shape": a.shards,
            "Order": a.order,
            "Read-only": a.read_only,
            "Store type": type(a.store).__name__,
            "Filters": a.filters,
            "Serializer": a.serializer,
            "Compressors": a.compressors,
            "Fill value": a.fill_value,
            "No. bytes": a.nbytes,
            "No. chunks": a.nchunks,
        }
        if a.store.listable:
            self.items["Chunks initialized"] = f"{a.nchunks_initialized:,} of {a.nchunks:,}"
            stored = a.nbytes_stored
            self.items["No. bytes stored"] = stored
            if stored:
                self.items["Storage ratio"] = round(a.nbytes / stored, 2)

    def __getitem__(self, key: str) -> Any:
        return self.items[key]

    def __repr__(self) -> str:
        width = max(map(len, self.items))
        return "\n".join(f"{k:<{width}} : {v}" for k, v in self.items.items())

