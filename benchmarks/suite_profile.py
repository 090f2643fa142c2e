"""Where README's test command spends its time: per test file, per worker, and what numba
compiles (the per-env loops, ``run``, by class and test), as a pytest plugin and a report.

    BATCHENV_CACHE_DIR=$(mktemp -d) PYTHONPATH=benchmarks \\
        python -m pytest -n auto -q -p suite_profile      # cold: an empty compile cache
    python benchmarks/suite_profile.py                    # the report of that run

Each pytest process (the xdist workers) writes ``suite_profile_<worker>.json`` into
``$SUITE_PROFILE_DIR`` (default: the system's temporary directory): every test's wall and
CPU time of its call phase (this process only: a child process's CPU is not in it), and
numba's compile events (``numba.core.event``, "numba:compile") with the test that caused
them. A compile event's time includes the compiles it caused (a rule compiled while ``run``
is typed), so the report sums ``run``'s events for the loops' share and lists the others
apart. Not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

_DIR = Path(os.environ.get("SUITE_PROFILE_DIR", tempfile.gettempdir()))
_tests: list[tuple[str, float, float, float]] = []  # node id, start, wall, CPU
_compiles: list[tuple[str, str, str, float]] = []  # node id, function, signature, CPU
_current = ["<collection>"]


def _listen_to_numba() -> None:
    try:
        from numba.core import event
    except ImportError:
        return
    started: dict[int, list[float]] = collections.defaultdict(list)

    class Compiles(event.Listener):
        def on_start(self, ev: Any) -> None:
            started[id(ev.data.get("dispatcher"))].append(time.process_time())

        def on_end(self, ev: Any) -> None:
            stack = started[id(ev.data.get("dispatcher"))]
            t0 = stack.pop() if stack else time.process_time()
            dispatcher = ev.data.get("dispatcher")
            name = getattr(dispatcher, "__qualname__", "?")
            if name == "run":  # the module of a class's loops names the class
                py_func = getattr(dispatcher, "py_func", None)
                name = f"run {py_func.__globals__.get('__name__', '?') if py_func else '?'}"
            _compiles.append((_current[0], name, str(ev.data.get("args")),
                              time.process_time() - t0))

    event.register("numba:compile", Compiles())


def pytest_configure(config: Any) -> None:
    _listen_to_numba()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: Any) -> Any:
    _current[0] = item.nodeid
    t0, c0 = time.time(), time.process_time()
    yield
    _tests.append((item.nodeid, t0, time.time() - t0, time.process_time() - c0))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: Any) -> Any:
    _current[0] = item.nodeid
    yield


def pytest_sessionfinish(session: Any) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    if worker == "main" and not _tests:
        return  # the xdist controller: its workers ran the tests
    with open(_DIR / f"suite_profile_{worker}.json", "w") as f:
        json.dump({"tests": _tests, "compiles": _compiles}, f)


def report(directory: Path, top: int) -> None:
    runs = {p.stem.removeprefix("suite_profile_"): json.loads(p.read_text())
            for p in sorted(directory.glob("suite_profile_*.json"))}
    if not runs:
        raise SystemExit(f"no suite_profile_*.json in {directory}: run pytest with "
                         "-p suite_profile first (see this module's docstring)")
    by_file: collections.Counter[str] = collections.Counter()
    waited: collections.Counter[str] = collections.Counter()
    for worker, run in runs.items():
        tests = run["tests"]
        start = min(t[1] for t in tests)
        end = max(t[1] + t[2] for t in tests)
        print(f"{worker}: {len(tests)} tests, {end - start:.1f} s from its first test to its "
              f"last; in tests {sum(t[2] for t in tests):.1f} s wall, "
              f"{sum(t[3] for t in tests):.1f} s CPU")
        for nodeid, _, wall, cpu in tests:
            by_file[nodeid.split("::")[0]] += cpu
            waited[nodeid.split("::")[0]] += max(wall - cpu, 0.0)
    print(f"\nCPU in tests by file (top {top}; 'waited': wall not on this process's CPU)")
    for name, cpu in by_file.most_common(top):
        print(f"  {cpu:6.1f} s  waited {waited[name]:5.1f} s  {name}")
    loops = [(w, *c) for w, run in runs.items() for c in run["compiles"]
             if c[1].startswith("run ")]
    print(f"\nnumba compiled the per-env loop `run` {len(loops)} times, "
          f"{sum(c[4] for c in loops):.1f} CPU-s in all (the rules it calls included):")
    for worker, nodeid, name, _, cpu in sorted(loops, key=lambda c: -c[4]):
        module = name.removeprefix("run ")  # a cached module, or the class's loops in memory
        cls = (module.removeprefix("_batchenv_loops_").rsplit("_", 1)[0]
               if module.startswith("_batchenv_loops_")
               else module.partition("<loops of ")[2].rstrip(">").rsplit(".", 1)[-1])
        print(f"  {cpu:5.1f} s  {worker}  {cls[:28]:28s}  {nodeid[:100]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, default=_DIR)
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()
    report(args.dir, args.top)


if __name__ == "__main__":
    main()
