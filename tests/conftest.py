"""Shared fixtures."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["numpy", "numba"])
def kernels(request: pytest.FixtureRequest) -> str:
    """Both layers of a MinAtar game (its ``kernels=`` argument): the numpy kernels, and the
    numba loops (the extra ``fast``, which CI installs)."""
    if request.param == "numba":
        pytest.importorskip("numba")
    return request.param

