"""The base class's own cost: a do-nothing env (empty kernels), per step and per call.

    python benchmarks/bench_core.py [--repeats 7]

Prints the median microseconds per ``step`` of ``batchenv.testing.NullEnv`` at several batch
sizes, with validation on and off and with ``copy=False``; at num_envs=1 this is the floor
under every batchenv env (target: under 20 us). Figures: docs/performance.md.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from batchenv.testing import NullEnv


def us_per_step(env: NullEnv, steps: int, repeats: int) -> float:
    actions = np.zeros(env.num_envs, dtype=np.int64)
    env.reset(seed=0)
    for _ in range(100):
        env.step(actions)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(steps):
            env.step(actions)
        times.append((time.perf_counter() - start) / steps)
    return statistics.median(times) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 256, 4096, 65536])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    print(f"{'num_envs':>9} {'default (us)':>13} {'validate=False':>15} {'copy=False':>11}")
    for n in args.sizes:
        steps = max(50, 200_000 // max(n, 100))
        row = [us_per_step(NullEnv(n, **kw), steps, args.repeats)
               for kw in ({}, {"validate": False}, {"copy": False})]
        print(f"{n:>9} " + " ".join(f"{x:>{w}.1f}" for x, w in zip(row, (13, 15, 11))))


if __name__ == "__main__":
    main()
