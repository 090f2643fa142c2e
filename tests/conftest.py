"""Shared fixtures."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["numba", "python"])
def kernels(request: pytest.FixtureRequest) -> str:
    """Both ways a MinAtar game runs its rules (its ``kernels=`` argument): its per-env
    kernels compiled by numba (the extra ``fast``, which CI installs), and the same
    kernels as a Python loop (what runs without numba; in README's command for Breakout
    only, :data:`PYTHON_FORM_IN_README`)."""
    if request.param == "numba":
        pytest.importorskip("numba")
    return request.param


@pytest.fixture(params=["numba", pytest.param("python", marks=pytest.mark.slow)])
def long_run_kernels(request: pytest.FixtureRequest) -> str:
    """``kernels`` for the long scripted parity runs against ``minatar``: compiled in
    README's command, as a Python loop (several times the reference's own time) in the
    ``slow`` pass (CI runs both). The fast run still holds Breakout's Python loop to its
    compiled loop bit for bit, in every mode (tests/test_minatar_perenv.py)."""
    if request.param == "numba":
        pytest.importorskip("numba")
    return request.param


# ---------------------------------------------------------------- one worker per env class
# The names by which a test's id names a class with per-env kernels, the most specific
# first, and the group each gives (normalized ids: lower case, without "-", "_" and "/").
_CLASS_GROUPS = (
    ("seaquest", "Seaquest"), ("asterix", "Asterix"), ("breakout", "Breakout"),
    ("freeway", "Freeway"), ("spaceinvaders", "SpaceInvaders"), ("crafter", "Crafter"),
    ("asteroids", "Asteroids"), ("pongperenv", "PongNumba"), ("pongranges", "PongNumba"),
    ("pongnumba", "PongNumba"), ("blockedunlockpickup", "BlockedUnlockPickup"),
    ("unlockpickup", "UnlockPickup"), ("unlock", "Unlock"), ("doorkey", "DoorKey"),
    ("fourrooms", "FourRooms"), ("multiroom", "MultiRoom"), ("keycorridor", "KeyCorridor"),
    ("lavagap", "LavaGap"), ("crossing", "Crossing"), ("dynamicobstacles", "DynamicObstacles"),
    ("minigridempty", "Empty"), ("batchempty", "Empty"),
)


#: The classes whose Python form (``kernels="python"``) README's command runs: one MinAtar
#: game, one MiniGrid class and BatchPong. numba compiles each rule of a Python form on its
#: first call from Python (``batchenv.perenv.rule``), a compile as long as the
#: loop's for a large class and not kept by the compile cache; the `slow` pass (CI) runs
#: the Python form of every class.
PYTHON_FORM_IN_README = frozenset({"Breakout", "Empty", "PongNumba"})


def _runs_the_python_form(item: pytest.Item) -> bool:
    """Whether a test takes ``kernels="python"`` as a parameter (the ``kernels`` fixtures, a
    ``kernels`` or ``form`` parametrization)."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    return any(value == "python" for name, value in params.items()
               if "kernels" in name or name == "form")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test that names one env class with per-env kernels in its id goes to the same
    pytest-xdist worker (``xdist_group``; pyproject's addopts give ``--dist loadgroup``):
    a worker compiles a class's loop once and keeps it, where tests of one class spread
    over both workers compiled it in each at the same moment (the compile cache serves a
    loop only once it is written). Other tests are shared out one by one.
    A test that runs a class's Python form by parameter is `slow` but for the classes of
    :data:`PYTHON_FORM_IN_README`."""
    for item in items:
        name = item.nodeid.lower().replace("-", "").replace("_", "").replace("/", "")
        group = next((g for key, g in _CLASS_GROUPS if key in name), None)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
        if group is not None and group not in PYTHON_FORM_IN_README \
                and _runs_the_python_form(item):
            item.add_marker(pytest.mark.slow)
