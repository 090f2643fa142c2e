"""Step time of this checkout's envs against another git revision's, in one process.

    python benchmarks/ab_versions.py                 # against main
    python benchmarks/ab_versions.py --ref HEAD~3 --rounds 15
    python benchmarks/ab_versions.py --ref HEAD~3 --perenv --clock cpu   # per-env kernels

The other revision's ``batchenv`` package is extracted with ``git archive`` into a temporary
directory and imported under its own module names, so both versions run side by side, their
timed blocks interleaved (old, new, new, old, ...): every round sees the same machine load.
Prints the median seconds per ``step`` of each and the ratio new/old (below 1: new is
faster). Cases: BatchPong 4096 and 65536 (state observation), BatchCartPole 4096, the
other classic-control envs and BatchAsterix (its numpy kernels) at 4096; with ``--perenv``,
BatchPong and three MinAtar games as per-env kernels (numba, one thread) at 256 and 4096;
all with the defaults (NEXT_STEP, validation, copies) and random actions drawn beforehand.
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CASES: list[tuple[str, str, int, dict[str, Any]]] = [  # label, class name, num_envs, kwargs
    ("BatchPong 4096", "BatchPong", 4096, {}),
    ("BatchPong 65536", "BatchPong", 65536, {}),
    ("BatchCartPole 4096", "BatchCartPole", 4096, {}),
    ("BatchMountainCar 4096", "BatchMountainCar", 4096, {}),
    ("BatchMountainCarContinuous 4096", "BatchMountainCarContinuous", 4096, {}),
    ("BatchAcrobot 4096", "BatchAcrobot", 4096, {}),
    ("BatchPendulum 4096", "BatchPendulum", 4096, {}),
    ("BatchAsterix 4096 (numpy kernels)", "BatchAsterix", 4096, {"kernels": "numpy"}),
]
#: ``--perenv``: the per-env kernels (compiled by numba, one thread), for changes to
#: batchenv/perenv.py.
PER_ENV_CASES: list[tuple[str, str, int, dict[str, Any]]] = [
    (f"{cls} per-env {n}", cls, n, {"kernels": "numba"})
    for cls in ("BatchPong", "BatchBreakout", "BatchAsterix", "BatchSeaquest")
    for n in (256, 4096)
]


def load_package(root: str) -> ModuleType:
    """Import the ``batchenv`` package found in ``root`` and detach it (and its submodules)
    from ``sys.modules``, so that another ``batchenv`` can be imported next to it."""
    saved = {k: m for k, m in sys.modules.items() if k == "batchenv" or k.startswith("batchenv.")}
    for k in saved:
        del sys.modules[k]
    sys.path.insert(0, root)
    try:
        pkg = importlib.import_module("batchenv")
    finally:
        sys.path.remove(root)
        for k in [k for k in sys.modules if k == "batchenv" or k.startswith("batchenv.")]:
            del sys.modules[k]
        sys.modules.update(saved)
    return pkg


def extract(ref: str, into: str) -> str:
    """``git archive ref batchenv`` extracted under ``into``; returns the root."""
    data = subprocess.run(["git", "archive", ref, "batchenv"], cwd=ROOT, check=True,
                          capture_output=True).stdout
    path = os.path.join(into, "batchenv.tar")
    with open(path, "wb") as f:
        f.write(data)
    with tarfile.open(path) as tar:
        tar.extractall(into, filter="data")
    return into


def stepper(pkg: ModuleType, cls: str, n: int, **kwargs: Any) -> Callable[[], None]:
    env = getattr(pkg, cls)(n, **kwargs)
    env.reset(seed=0)
    env.action_space.seed(0)
    actions = [env.action_space.sample() for _ in range(16)]
    step, t = env.step, [0]

    def run() -> None:
        step(actions[t[0] & 15])
        t[0] += 1

    for _ in range(200):  # warm up past the first episode ends
        run()
    return run


def timed(run: Callable[[], None], seconds: float,
          clock: Callable[[], float] = time.perf_counter) -> float:
    calls, start = 0, clock()
    while True:
        run()
        run()
        calls += 2
        elapsed = clock() - start
        if elapsed >= seconds:
            return elapsed / calls


def compare(runs: dict[str, Callable[[], None]], rounds: int, block: float,
            clock: Callable[[], float] = time.perf_counter) -> dict[str, float]:
    """Median seconds per call of each run, blocks interleaved round by round."""
    times: dict[str, list[float]] = {k: [] for k in runs}
    order = list(runs)
    for _ in range(rounds):
        for k in order:
            times[k].append(timed(runs[k], block, clock))
        order.reverse()  # old, new, new, old, ...: neither always runs first
    return {k: statistics.median(v) for k, v in times.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default="main", help="git revision to compare against")
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--block", type=float, default=0.2, help="seconds per timed block")
    parser.add_argument("--only", default="", help="comma-separated class names")
    parser.add_argument("--perenv", action="store_true",
                        help="the per-env kernels' cases instead (PER_ENV_CASES)")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                        help="cpu: this process's CPU time (steadier on a loaded machine)")
    args = parser.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    with tempfile.TemporaryDirectory() as tmp:
        old = load_package(extract(args.ref, tmp))
        new = load_package(ROOT)
        print(f"old: {args.ref} ({old.__file__})\nnew: {new.__file__}")
        print(f"{'case':34s} {'old µs':>9s} {'new µs':>9s} {'new/old':>8s}")
        for label, cls, n, kw in PER_ENV_CASES if args.perenv else CASES:
            if args.only and cls not in args.only.split(","):
                continue
            med = compare({"old": stepper(old, cls, n, **kw), "new": stepper(new, cls, n, **kw)},
                          args.rounds, args.block, clock)
            print(f"{label:34s} {med['old'] * 1e6:9.1f} {med['new'] * 1e6:9.1f} "
                  f"{med['new'] / med['old']:8.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
