"""Registering the ``Dataset.zarrdask`` / ``DataTree.zarrdask`` accessor
(:mod:`zarrdask.xarray.accessor`) without ``import zarrdask`` importing xarray.

xarray and dask.array take about a second to import, which the command line and
core reads do not need. The accessor's module imports nothing heavy (its
methods import the writer when called). It is registered:

- at ``import zarrdask`` when xarray is already imported;
- otherwise right after ``import xarray`` has run, by a finder on
  ``sys.meta_path`` that wraps xarray's loader (then leaves ``sys.meta_path``).
  Only the registration runs there: the accessor's small module is imported and
  sets one attribute on each of xarray's classes; a failure becomes a warning,
  never a broken xarray. If xarray's own import fails, the finder waits for the
  next one.

Registering twice is a no-op.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType
from typing import Any

__all__ = ["register_when_xarray_is_imported"]


def register_when_xarray_is_imported() -> None:
    """Register now if xarray is imported, else right after it is."""
    xr = sys.modules.get("xarray")
    if xr is not None:
        _register(xr)
    else:
        _wait_for_xarray()


def _wait_for_xarray() -> None:
    if not any(isinstance(f, _XarrayFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _XarrayFinder())


def _register(xr: ModuleType) -> None:
    from .xarray.accessor import register  # light: no xarray submodule, no dask

    register(xr)


class _XarrayFinder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: asks the other finders for ``xarray`` and wraps the
    loader they return; then leaves ``sys.meta_path``."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != "xarray":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _ThenRegister(spec.loader)
        return spec


class _ThenRegister(importlib.abc.Loader):
    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        # the module's own loader from here on (reloads, resources, pickling of specs)
        module.__loader__ = self._loader
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        try:
            self._loader.exec_module(module)
        except BaseException:
            _wait_for_xarray()  # xarray's import failed (still in sys.modules until this returns): wait for the next
            raise
        try:
            _register(module)
        except Exception as exc:  # never let the accessor break xarray's own import
            warnings.warn(f"zarrdask could not register the Dataset.zarrdask accessor: {exc!r}", RuntimeWarning, stacklevel=2)

    def __getattr__(self, name: str) -> Any:  # get_resource_reader, is_package, ... of the real loader
        return getattr(self._loader, name)
