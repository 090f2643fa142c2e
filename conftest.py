"""Under CI (``CI=true``, as .ci/run runs), a skipped test is a failure unless it is on
ALLOWED_SKIPS: a missing extra or a broken import must not turn tests silently green."""

from __future__ import annotations

import fnmatch
import os
import re

import pytest
from hypothesis import settings

# No wall-clock in unit tests: hypothesis's default 200 ms deadline per example fails tests on
# a loaded machine (seen on this project's shared 2-core machine), whatever the code does.
settings.register_profile("batchenv", deadline=None)
settings.load_profile("batchenv")

pytest_plugins = ["pytester"]  # tests/test_ci_skips.py runs pytest on a small suite

#: Tests allowed to skip in CI: ``fnmatch`` patterns of node ids, each with the reason it
#: may skip there. Keep it short; prefer making the test run.
ALLOWED_SKIPS: dict[str, str] = {
    # (none today)
}


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() == "true"


def _allowed(nodeid: str) -> bool:
    return any(fnmatch.fnmatchcase(nodeid, pattern) for pattern in ALLOWED_SKIPS)


def _fail_skip(report, nodeid: str) -> None:
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
    report.outcome = "failed"
    report.longrepr = (f"{nodeid} was skipped under CI=true ({reason}); a skip in CI is a "
                       "failure unless the test is on ALLOWED_SKIPS in conftest.py")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if (_in_ci() and report.skipped and not hasattr(report, "wasxfail")
            and not _allowed(item.nodeid)):
        _fail_skip(report, item.nodeid)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    report = outcome.get_result()
    if _in_ci() and report.skipped and not _allowed(collector.nodeid):
        _fail_skip(report, collector.nodeid)


# ------------------------------------------------------------------ xdist: one worker per class
# numba compiles a per-env class's loops once per process, seconds of CPU each (CONTRIBUTING.md,
# "Tests"; docs/performance.md, "Compile time"), so README's `pytest -n auto` would pay that
# in every worker that meets the class. The scheduler below sends every test of one compiled
# class (found by name in its node id) to one worker, and every other test as a unit of its
# own (as `--dist load`). pytest-xdist's own
# `--dist loadgroup` does not group under pytest 9 here (it renames node ids, which pytest 9
# no longer reads back), so this uses xdist's documented scheduler hook instead.
_COMPILED_CLASSES = [
    # (pattern in the lower-cased node id, group); the first match wins
    (re.compile(r"blockedunlockpickup"), "minigrid-blockedunlockpickup"),
    (re.compile(r"unlockpickup"), "minigrid-unlockpickup"),
    (re.compile(r"minigrid.*unlock|unlock_parity"), "minigrid-unlock"),
    (re.compile(r"doorkey"), "minigrid-doorkey"),
    (re.compile(r"multiroom"), "minigrid-multiroom"),
    (re.compile(r"keycorridor"), "minigrid-keycorridor"),
    (re.compile(r"dynamic.?obstacles"), "minigrid-dynamicobstacles"),
    (re.compile(r"fourrooms"), "minigrid-fourrooms"),
    (re.compile(r"lavagap"), "minigrid-lavagap"),
    (re.compile(r"crossing"), "minigrid-crossing"),
    (re.compile(r"minigrid.*empty"), "minigrid-empty"),
    (re.compile(r"asterix"), "minatar-asterix"),
    (re.compile(r"breakout"), "minatar-breakout"),
    (re.compile(r"freeway"), "minatar-freeway"),
    (re.compile(r"seaquest"), "minatar-seaquest"),
    (re.compile(r"space.?invaders"), "minatar-spaceinvaders"),
    (re.compile(r"asteroids"), "asteroids"),
    (re.compile(r"crafter"), "crafter"),
    (re.compile(r"test_pong_per_env\.py|test_pong_ranges\.py|test_compiled_per_env_shards"),
     "pong-per-env"),
    (re.compile(r"test_perenv\.py"), "perenv-catch"),
    (re.compile(r"test_sharded_ray\.py"), "ray"),  # one Ray runtime per worker
]


def compile_group(nodeid: str) -> str:
    """The scheduling unit of a test: its compiled class's group, else the test itself."""
    lowered = nodeid.lower()
    for pattern, group in _COMPILED_CLASSES:
        if pattern.search(lowered):
            return group
    return nodeid


def pytest_configure(config):
    # pyproject's addopts give `--dist loadgroup` for README's `-n auto`. Without `-n` no
    # worker starts, but pytest-benchmark still reads that option as xdist being on and
    # disables itself (`--benchmark-only` then stops with a usage error): a run without
    # workers is made `--dist no`, as it is in effect.
    if not getattr(config.option, "numprocesses", None) and not getattr(config.option, "tx",
                                                                        None):
        config.option.dist = "no"


def pytest_xdist_make_scheduler(config, log):
    if config.getoption("dist") not in ("load", "loadgroup"):
        return None  # an explicit --dist loadfile/loadscope/each/worksteal is the user's
    from xdist.scheduler import LoadScopeScheduling

    class ByCompiledClass(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return compile_group(nodeid)

    return ByCompiledClass(config, log)
