"""What xarray reads while it opens a dataset, read beforehand in one batch.

``xr.open_dataset`` reads some values before it returns, even with
``chunks={}``: every index coordinate (a one-dimensional variable named like
its dimension) is loaded to build the dataset's default indexes (xarray's
"Indexes" documentation), and CF time decoding reads the first and the last
value of every variable it decodes as datetimes (``units`` of the form
"<unit> since <date>", and the variables named by their ``bounds`` or
``climatology`` attribute, which inherit those units: CF conventions 7.1 "Cell
Boundaries", 7.4 "Climatological Statistics"). xarray does this one variable
after another, so on a remote store each read is a round trip of its own.

The backend asks for all of them at once, after the metadata and before
xarray builds anything: one concurrent batch of requests for a dataset, or for
every group of a DataTree, and xarray then finds the values in memory.
Variables decoded as times are read whole only when small
(:data:`SMALL_BYTES`); index coordinates are read whole by xarray anyway.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Protocol, Sequence

import numpy as np

from .._pool import io_map

#: the size up to which a variable xarray reads a value or two of (to decode
#: times) is read whole at open, with the index coordinates
SMALL_BYTES = 1 << 20


class Loadable(Protocol):
    def load(self) -> None: ...


def _is_time_units(attrs: Mapping[str, Any]) -> bool:
    units = attrs.get("units")
    return isinstance(units, str) and " since " in units


def read_at_open(
    variables: Mapping[str, tuple[tuple[Any, ...], Mapping[str, Any], tuple[int, ...], np.dtype]],
    *, decode_times: Any = True, drop_variables: Iterable[str] | str | None = (),
) -> tuple[list[str], list[str]]:
    """The names of the variables xarray reads while opening a dataset with
    ``variables`` (``{name: (dims, attrs, shape, dtype)}``, attributes still
    CF-encoded), in their order: ``(index coordinates, others)``, the others
    being, when times are decoded, the small variables with time units or
    named as bounds of one."""
    dropped = {drop_variables} if isinstance(drop_variables, str) else set(drop_variables or ())
    indexes = [n for n, (dims, _, shape, _) in variables.items()
               if len(dims) == 1 and dims[0] == n and len(shape) == 1 and n not in dropped]
    wanted: set[str] = set()
    if decode_times is not False:
        times = [n for n, (_, attrs, _, _) in variables.items() if _is_time_units(attrs)]
        bounds = [variables[n][1].get(k) for n in times for k in ("bounds", "climatology")]
        for name in [*times, *(b for b in bounds if isinstance(b, str) and b in variables)]:
            _, _, shape, dtype = variables[name]
            if int(np.prod(shape, dtype=np.int64)) * max(np.dtype(dtype).itemsize, 1) <= SMALL_BYTES:
                wanted.add(name)
    return indexes, [n for n in variables if n in wanted and n not in dropped and n not in indexes]


def load_all(arrays: Sequence[Loadable]) -> None:
    """:meth:`load` every array, all reads in flight together."""
    io_map(lambda a: a.load(), list(arrays))
