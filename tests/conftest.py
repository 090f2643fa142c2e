"""Shared fixtures."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["numba", "python"])
def kernels(request: pytest.FixtureRequest) -> str:
    """Both ways a MinAtar game runs its rules (its ``kernels=`` argument): its per-env
    kernels compiled by numba (the extra ``fast``, which CI installs), and the same
    kernels as a Python loop (what runs without numba)."""
    if request.param == "numba":
        pytest.importorskip("numba")
    return request.param


@pytest.fixture(params=["numba", pytest.param("python", marks=pytest.mark.slow)])
def long_run_kernels(request: pytest.FixtureRequest) -> str:
    """``kernels`` for the long scripted parity runs against ``minatar``: compiled in
    README's command, as a Python loop (several times the reference's own time) in the
    ``slow`` pass (CI runs both). The fast run still holds the Python loop to the
    compiled loop bit for bit, in every mode (tests/test_minatar_perenv.py), and to
    ``minatar`` in every test that takes ``kernels``."""
    if request.param == "numba":
        pytest.importorskip("numba")
    return request.param
