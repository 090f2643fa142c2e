"""pytest-benchmark timings of ConcurrentVectorEnv's step (a few seconds in all):

    python -m pytest benchmarks/test_bench_concurrent.py --benchmark-group-by=param:case

``cartpole16``: per-step overhead on a cheap CPU-bound env (compare with ``sync``);
``wait10ms32``: 32 envs whose step waits 10 ms (ideal: 10 ms per step).
For the ratios the issue asks about, run ``python benchmarks/bench_concurrent.py``.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from gymnasium.vector import SyncVectorEnv

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_concurrent import AsyncWaitEnv, WaitEnv, cartpole  # noqa: E402

from batchenv.concurrent import ConcurrentVectorEnv  # noqa: E402

CASES = {
    "cartpole16": (16, cartpole, cartpole),
    "wait10ms32": (32, WaitEnv, AsyncWaitEnv),
}


@pytest.mark.parametrize("case, system", [
    ("cartpole16", "sync"), ("cartpole16", "thread"), ("cartpole16", "asyncio"),
    # (SyncVectorEnv would wait 32 x 10 ms per step: see bench_concurrent.py)
    ("wait10ms32", "thread"), ("wait10ms32", "asyncio"),
])
def test_step(benchmark, case, system):
    n, fn, afn = CASES[case]
    if system == "sync":
        env = SyncVectorEnv([fn] * n)
    else:
        env = ConcurrentVectorEnv([afn if system == "asyncio" else fn] * n, executor=system)
    env.reset(seed=0)
    actions = np.zeros(n, dtype=np.int64)
    for _ in range(3):
        env.step(actions)
    try:
        benchmark.pedantic(env.step, args=(actions,), rounds=200 if n == 16 else 30,
                           iterations=1, warmup_rounds=1)
    finally:
        env.close()
