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


# ----------------------------------------------------------------- xdist: compile once
# numba compiles a class's per-env loops once per process (seconds per class, no disk
# cache: docs/performance.md). Under xdist (`--dist loadgroup`, pyproject's addopts) the
# tests of one compiled class go to one worker, so each class compiles once per run, not
# once per worker. Scheduling only: no test's outcome depends on it.
_GROUPED_FILES = ("test_contract.py", "test_single.py", "test_minigrid.py", "test_random.py",
                  "test_minatar_perenv.py", "test_minatar_parity.py", "test_minatar_seaquest.py",
                  "test_minatar_space_invaders.py", "test_minatar_env.py")


def _compiled_classes() -> dict[str, str]:
    """Lower-case tokens (a class name without ``Batch``) -> the per-env class's name."""
    import batchenv
    from batchenv import perenv
    from batchenv.registration import resolve

    tokens: dict[str, str] = {}
    for env_id in batchenv.list_envs():
        resolved = resolve(env_id)
        # (BatchPong has per-env kernels too, but runs its numpy kernels unless asked)
        if resolved is not None and perenv.has_per_env_kernels(resolved.cls) \
                and resolved.cls is not batchenv.BatchPong:
            name = resolved.cls.__name__
            tokens[name.lower().removeprefix("batch")] = name
    return tokens


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.pluginmanager.hasplugin("xdist"):
        return
    tokens = _compiled_classes()
    by_length = sorted(tokens, key=len, reverse=True)  # "blockedunlockpickup" before "unlock"
    for item in items:
        if item.path.name not in _GROUPED_FILES or item.get_closest_marker("xdist_group"):
            continue
        key = item.nodeid.split("::", 1)[-1].lower().replace("-", "").replace("_", "")
        token = next((t for t in by_length if t in key), None)
        if token is not None:
            item.add_marker(pytest.mark.xdist_group(f"compiled-{tokens[token]}"))
