"""Write modes and regions of the xarray writer, checked as xarray checks them.

- **mode**: ``None`` is ``"a"`` with ``append_dim``, ``"r+"`` with ``region`` and
  ``"w-"`` otherwise; ``append_dim`` takes ``"a"``/``"a-"``, ``region`` takes
  ``"a"``/``"a-"``/``"r+"`` (``ValueError`` otherwise).
- **region**: ``"auto"`` or a dict of dimension → ``slice`` (step 1) or
  ``"auto"`` (``TypeError`` for anything else); ``"auto"`` is looked up in the
  stored coordinate (``KeyError`` for values it does not hold, ``ValueError``
  when they are not one contiguous run). Every variable must share a dimension
  with a non-empty region, and ``append_dim`` must not be one of its dimensions.
  A region write does not write index coordinates (they are what locates it).
"""

from __future__ import annotations

from typing import Any, Callable, Hashable, Mapping

import numpy as np
import pandas as pd
import xarray as xr
from xarray.core.variable import Variable

MODES = ("w", "w-", "a", "a-", "r+")


def resolve_mode(mode: str | None, append_dim: Hashable | None, region: Any) -> str:
    """The write mode: ``mode``, or its default for ``append_dim`` and ``region``."""
    if mode is None:
        mode = "a" if append_dim is not None else "r+" if region is not None else "w-"
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES!r}, found {mode!r}")
    if append_dim is not None and mode not in ("a", "a-"):
        raise ValueError(f"append_dim={append_dim!r} needs mode 'a' or 'a-' (or mode=None), found mode={mode!r}")
    if region is not None and mode not in ("a", "a-", "r+"):
        raise ValueError(f"region needs mode 'a', 'a-' or 'r+' (or mode=None), found mode={mode!r}")
    return mode


def resolve_region(
    region: Any, ds: xr.Dataset, mode: str, append_dim: Hashable | None,
    stored_coordinate: Callable[[Hashable], Variable | None],
) -> dict[Hashable, slice] | None:
    """``{dim: slice}`` for a region write (``"auto"`` looked up through
    ``stored_coordinate``, which gives a dimension's stored coordinate, decoded,
    or ``None``), checked against the dataset; ``None`` without a region."""
    if region is None:
        return None
    if isinstance(region, str) and region == "auto":
        region = dict.fromkeys(ds.dims, "auto")
    if not isinstance(region, Mapping):
        raise TypeError(f"region must be a dict of dimension → slice or 'auto', or 'auto'; found {region!r}")
    region = dict(region)
    if any(isinstance(s, str) and s == "auto" for s in region.values()):
        if mode not in ("r+", "a"):
            raise ValueError(f"region='auto' needs mode 'r+' or 'a', found mode={mode!r}")
        for dim, sel in region.items():
            if isinstance(sel, str) and sel == "auto":
                region[dim] = _auto(dim, ds, stored_coordinate)
    for dim, sel in region.items():
        if dim not in ds.dims:
            raise ValueError(f"region names dimension {dim!r}, which the dataset does not have (it has {list(ds.dims)!r})")
        if not isinstance(sel, slice):
            raise TypeError(f"region[{dim!r}] must be a slice object (or 'auto'), found {sel!r}")
        if sel.step not in (None, 1):
            raise ValueError(f"region[{dim!r}]: the step on all slices in region must be 1 or None, found {sel!r}")
    unrelated = [k for k, v in ds.variables.items() if not set(region).intersection(v.dims)]
    if region and unrelated:
        raise ValueError(
            f"variables {unrelated!r} have none of the region's dimensions {list(region)!r}, so a region "
            f"write would overwrite them whole; drop them first (ds.drop_vars({unrelated!r}))"
        )
    if append_dim is not None and append_dim in region:
        raise ValueError(f"append_dim={append_dim!r} is also a dimension of the region; give it in one of them only")
    return region


def _auto(dim: Hashable, ds: xr.Dataset, stored_coordinate: Callable[[Hashable], Variable | None]) -> slice:
    if dim not in ds.indexes:
        return slice(0, ds.sizes[dim])
    stored = stored_coordinate(dim)
    if stored is None:
        raise KeyError(f"region[{dim!r}]='auto' needs the coordinate {dim!r} in the store, but it is not stored")
    positions = pd.Index(np.asarray(stored.values)).get_indexer(ds.indexes[dim])
    if (positions < 0).any():
        raise KeyError(
            f"region[{dim!r}]='auto': some of the dataset's {dim!r} values are not in the stored coordinate; "
            "a region write cannot change dimensions or coordinates"
        )
    if len(positions) and (np.diff(positions) != 1).any():
        raise ValueError(f"region[{dim!r}]='auto': the dataset's {dim!r} values are not a contiguous run of the stored ones")
    start = int(positions[0]) if len(positions) else 0
    return slice(start, start + len(positions))
