"""What a new process pays to start a per-env env: cold (numba compiles the loops and writes
them to the disk cache), warm (the loops found in the cache), and with the cache off, for
BatchPong per-env, a MinAtar game and a MiniGrid env; and plain ``import`` as the floor.

    python benchmarks/bench_loop_cache.py                 # 3 rounds (a few minutes)
    python benchmarks/bench_loop_cache.py --rounds 1 --envs pong

Each case is a fresh ``python -c`` that makes the env (64 envs), resets it and steps it 10
times: the whole start of a short script or of a sharded worker. A round runs, per env: cold
in a new empty cache directory, then warm in that same directory, then off
(``BATCHENV_CACHE_DIR=""``); the rounds interleave the envs, so every case sees the same
machine load. Figures: medians over rounds of the child's wall time and of its CPU time
(user + system, from ``os.wait4``): CPU time is the cleaner measure on a shared machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ENVS = {
    "pong": "from batchenv.envs.pong import BatchPong as E; kw = {'kernels': 'numba'}",
    "breakout": "from batchenv.envs.minatar import BatchBreakout as E; kw = {'kernels': 'numba'}",
    "doorkey": "from batchenv.envs.minigrid import BatchDoorKey as E; kw = {}",
}
STEP = ("import numpy as np; env = E(64, **kw); env.reset(seed=0); "
        "a = np.zeros((64, *env.single_action_space.shape), env.single_action_space.dtype); "
        "[env.step(a) for _ in range(10)]; "
        "assert env._per_env is not None and env.kernels == 'numba'")


def run(code: str, cache: str | None) -> tuple[float, float]:
    """(wall, cpu) seconds of a child ``python -c code`` with BATCHENV_CACHE_DIR=cache."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if cache is not None:
        env["BATCHENV_CACHE_DIR"] = cache
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-c", code], env=env)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"child failed ({status}): {code}")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--envs", nargs="+", default=list(ENVS), choices=list(ENVS))
    args = parser.parse_args()
    times: dict[str, list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for k in range(args.rounds):
            times.setdefault("import", []).append(
                run("import numba, batchenv, batchenv.envs.minatar, batchenv.envs.minigrid, "
                    "batchenv.envs.pong", ""))
            for name in args.envs:
                code = f"{ENVS[name]}; {STEP}"
                cache = str(Path(scratch) / f"{name}-{k}")
                times.setdefault(f"{name} cold", []).append(run(code, cache))
                times.setdefault(f"{name} warm", []).append(run(code, cache))
                times.setdefault(f"{name} off", []).append(run(code, ""))
    print(f"{'case':16s} {'wall s':>8s} {'cpu s':>8s}   (medians of {args.rounds} rounds)")
    for case, runs in times.items():
        print(f"{case:16s} {statistics.median(w for w, _ in runs):8.2f} "
              f"{statistics.median(c for _, c in runs):8.2f}")
    print(f"load average at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
