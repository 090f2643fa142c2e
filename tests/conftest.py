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



@pytest.fixture(params=["numba", pytest.param("numpy", marks=pytest.mark.slow)])
def long_run_kernels(request: pytest.FixtureRequest) -> str:
    """``kernels`` for the long scripted parity runs against ``minatar`` (the reference's
    Python loop is most of their time): the per-env form in README's command, the numpy
    kernels in the ``slow`` pass (CI runs both). The fast run still holds the numpy kernels
    to the per-env form bit for bit, in every mode and in late-game states
    (tests/test_minatar_perenv.py), and to ``minatar`` in every short parity test."""
    if request.param == "numba":
        pytest.importorskip("numba")
    return request.param
