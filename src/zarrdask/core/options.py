"""How the chunk engine runs one read or write: :class:`EngineOptions`.

The options travel explicitly with every call, from the caller down to the
engine (as zarrs' ``CodecOptions`` travel with every codec call), never
through thread state: an :class:`~zarrdask.Array` method takes
``options=EngineOptions(...)`` and hands it to the engine; the dask
integration passes ``EngineOptions(threads=1)`` from every task (dask runs
the tasks in parallel already), the rechunk workflow
``EngineOptions(threads=1, one_chunk=True, memory_budget=...)`` (its memory
plan declares each task's memory; the engine keeps a read within it).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["EngineOptions"]


@dataclass(frozen=True)
class EngineOptions:
    """Options of one read or write of the chunk engine.

    Parameters
    ----------
    threads : int, optional
        Threads decoding and encoding chunks (and everything the codecs and
        stores fan out under them); ``None`` (the default): the setting
        ``threads``. ``1`` runs the whole operation in the calling thread,
        as a dask task should.
    one_chunk : bool, default False
        Fetch, and encode and store, one chunk per store call, and free read
        buffers instead of keeping them for the next read: besides the data
        read or written, the operation holds at most one chunk's stored bytes
        and one decoded or encoded chunk (a rechunk task,
        :func:`zarrdask.workflows.plan.task_overhead`).
    io_concurrency : int, optional
        Requests in flight at once on stores whose requests wait on a
        network (capability ``"streaming"``); ``None``: the setting
        ``io_concurrency`` (also the most there can be).
    memory_budget : int, optional
        Bytes a read may hold at once: its output, the stored bytes of the
        chunks in flight and the chunks being decoded (and for chunks read in
        part, their byte ranges and decoded parts). Fewer requests are kept in
        flight, and parts of chunks are read in smaller batches, so that the
        estimate (stored bytes counted as large as the decoded ones, for
        data that does not compress) stays within it; at least one chunk is
        always in flight. ``None`` (the default): no budget, only
        ``io_concurrency`` limits the requests in flight.

    Examples
    --------
    >>> import numpy as np, zarrdask
    >>> a = zarrdask.create_array({}, shape=(4, 4), dtype="i2", chunks=(2, 2))
    >>> a.set_basic_selection(..., np.ones((4, 4)), options=EngineOptions(threads=1))
    >>> int(a.get_basic_selection(..., options=EngineOptions(threads=1)).sum())
    16
    """

    threads: int | None = None
    one_chunk: bool = False
    io_concurrency: int | None = None
    memory_budget: int | None = None

    def __post_init__(self) -> None:
        for name in ("threads", "io_concurrency", "memory_budget"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ValueError(f"EngineOptions: {name} must be a positive integer or None, found {value!r}")

    @property
    def serial(self) -> bool:
        """Whether the operation runs in the calling thread (``threads=1``)."""
        return self.threads == 1


#: the options of a call that gives none
DEFAULT = EngineOptions()
