"""Conformance suites and helpers for third-party stores and codecs.

Importing this package is cheap and does not import pytest; the suites live in
submodules that do, e.g. :mod:`zarrdask.testing.store`
(:class:`~zarrdask.testing.store.StoreConformanceTests`).
"""
