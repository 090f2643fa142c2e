"""Struct of arrays vs array of records: BatchPong's step kernels on both layouts.

    python benchmarks/bench_layout.py [--repeats 7]

Both layouts hold the same schema (``BatchPong.full_state_dtype``); the kernels are the same
code, reading fields as attributes. Records: every field is a strided view into one
structured array. Struct of arrays (batchenv's ``State``): every field contiguous.
Prints env-steps/s (median of repeats) of ``step_envs`` alone, and the ratio, for several
batch sizes. Figures: docs/layout.md.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from batchenv import BatchPong
from batchenv.random import BatchRandom
from batchenv.state import State, to_records


class RecordState:
    """The same fields as attribute views into one array of records (AoS)."""

    def __init__(self, records: np.ndarray) -> None:
        self.records = records
        for name in records.dtype.names:
            setattr(self, name, records[name])

    def __len__(self) -> int:
        return len(self.records)


def time_steps(env: BatchPong, s, actions: np.ndarray, steps: int) -> float:
    rng = BatchRandom(s.rng_key, s.rng_counter)
    start = time.perf_counter()
    for t in range(steps):
        env.step_envs(s, actions[t % len(actions)], rng)
    return (time.perf_counter() - start) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 4096, 65536])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    print(f"{'num_envs':>9} {'records (M/s)':>14} {'struct of arrays (M/s)':>23} {'ratio':>6}")
    for n in args.sizes:
        env = BatchPong(n)
        env.reset(seed=0)
        steps = max(20, 2_000_000 // n)
        actions = np.random.default_rng(0).integers(0, 3, (16, n))
        soa: State = env.state
        aos = RecordState(to_records(soa))
        t_soa, t_aos = [], []
        for _ in range(args.repeats):  # interleaved, so both see the same machine load
            t_aos.append(time_steps(env, aos, actions, steps))
            t_soa.append(time_steps(env, soa, actions, steps))
        a, s = statistics.median(t_aos), statistics.median(t_soa)
        print(f"{n:>9} {n / a / 1e6:>14.1f} {n / s / 1e6:>23.1f} {a / s:>6.2f}")


if __name__ == "__main__":
    main()
