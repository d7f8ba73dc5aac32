"""Registering the ``Dataset.zarrdask`` accessor without importing xarray.

``import zarrdask`` does not import xarray (a second or more): when xarray is
already imported, :mod:`zarrdask.xarray` (which registers the accessor) is
imported at once; otherwise a finder on ``sys.meta_path`` waits for ``import
xarray`` and imports :mod:`zarrdask.xarray` right after xarray's own module has
run, so ``import zarrdask; import xarray as xr; ds.zarrdask`` works in either order.
Opening a dataset with ``engine="zarrdask"`` imports it anyway (the entry point).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import Any

__all__ = ["register_accessor_with_xarray"]


def register_accessor_with_xarray() -> None:
    """Import :mod:`zarrdask.xarray` now if xarray is imported, else once it is."""
    if "xarray" in sys.modules:
        importlib.import_module("zarrdask.xarray")
    elif not any(isinstance(f, _XarrayFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _XarrayFinder())


class _XarrayFinder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the loader of ``xarray`` so that, once xarray
    is executed, zarrdask.xarray is imported; then leaves ``sys.meta_path``."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != "xarray":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _ThenRegister(spec.loader)
        return spec


class _ThenRegister(importlib.abc.Loader):
    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        importlib.import_module("zarrdask.xarray")

    def __getattr__(self, name: str) -> Any:  # get_resource_reader, is_package, ... of the real loader
        return getattr(self._loader, name)
