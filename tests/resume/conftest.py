"""Every test starts with the gate of :mod:`tests.resume._sources` open and its counts empty."""

from __future__ import annotations

import pytest

from . import _sources as S


@pytest.fixture(autouse=True)
def _fresh_gate():
    S.reset()
    yield
    S.reset()
