"""ConcurrentVectorEnv against Gymnasium's SyncVectorEnv and AsyncVectorEnv, in one run.

    python benchmarks/bench_concurrent.py            # about a minute and a half
    python benchmarks/bench_concurrent.py --repeats 3

Prints medians over repeats (systems are measured interleaved, so a load spike on a shared
machine hits them all) and the ratios the issue asks about:

(a) 200 envs whose step waits 10 ms (I/O-like: time.sleep, or asyncio.sleep for the asyncio
    executor): env-steps/s of ConcurrentVectorEnv (thread, asyncio) vs SyncVectorEnv.
(b) 32 such envs: ConcurrentVectorEnv vs AsyncVectorEnv (one process per env).
(c) CartPole-v1, 16 envs (cheap, CPU-bound): time per step vs SyncVectorEnv.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.vector import AsyncVectorEnv, SyncVectorEnv

try:
    from batchenv.concurrent import AsyncEnv, ConcurrentVectorEnv
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from batchenv.concurrent import AsyncEnv, ConcurrentVectorEnv

WAIT = 0.010  # seconds each step waits in (a) and (b)


class WaitEnv(gym.Env):
    """A step that waits WAIT seconds on time.sleep, like a blocking request."""

    observation_space = spaces.Box(-1.0, 1.0, (4,), np.float32)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(4, np.float32), {}

    def step(self, action):
        time.sleep(WAIT)
        return np.zeros(4, np.float32), 1.0, False, False, {}


class AsyncWaitEnv(AsyncEnv):
    """A step that waits WAIT seconds on asyncio.sleep, like a request to a remote server."""

    observation_space = spaces.Box(-1.0, 1.0, (4,), np.float32)
    action_space = spaces.Discrete(2)

    async def reset(self, *, seed=None, options=None):
        await super().reset(seed=seed)
        return np.zeros(4, np.float32), {}

    async def step(self, action):
        await asyncio.sleep(WAIT)
        return np.zeros(4, np.float32), 1.0, False, False, {}


def cartpole() -> gym.Env:
    return gym.make("CartPole-v1")


def make_systems(n: int, which: list[str], cpu: bool) -> dict[str, gym.vector.VectorEnv]:
    fn: Callable[[], gym.Env] = cartpole if cpu else WaitEnv
    makers = {
        "SyncVectorEnv": lambda: SyncVectorEnv([fn] * n),
        "AsyncVectorEnv": lambda: AsyncVectorEnv([fn] * n),
        "Concurrent thread": lambda: ConcurrentVectorEnv([fn] * n, executor="thread"),
        "Concurrent asyncio": lambda: ConcurrentVectorEnv(
            [fn if cpu else AsyncWaitEnv] * n, executor="asyncio"),
    }
    return {name: makers[name]() for name in which}


def measure(systems: dict, steps: dict[str, int], repeats: int) -> dict[str, float]:
    """Median seconds per step of each system; repeats interleaved across systems."""
    times: dict[str, list[float]] = {name: [] for name in systems}
    for name, env in systems.items():
        env.reset(seed=0)
        actions = np.zeros(env.num_envs, dtype=np.int64)
        for _ in range(min(3, steps[name] - 1)):  # warm up (threads started, caches)
            env.step(actions)
    for _ in range(repeats):
        for name, env in systems.items():
            actions = np.zeros(env.num_envs, dtype=np.int64)
            k = steps[name]
            start = time.perf_counter()
            for _ in range(k):
                env.step(actions)
            times[name].append((time.perf_counter() - start) / k)
    for env in systems.values():
        env.close()
    return {name: statistics.median(ts) for name, ts in times.items()}


def report(title: str, n: int, per_step: dict[str, float], baseline: str, goal: str) -> None:
    print(f"\n{title}")
    print(f"  {'system':<22}{'time/step':>12}{'env-steps/s':>14}{'vs ' + baseline:>22}")
    base = per_step[baseline]
    for name, t in per_step.items():
        if name == baseline:
            ratio = "1.00x"
        elif goal == "throughput":
            ratio = f"{base / t:.2f}x faster"
        else:
            ratio = f"{t / base:.2f}x the time"
        print(f"  {name:<22}{t * 1e3:>10.3f}ms{n / t:>14,.0f}{ratio:>22}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="repeats per measurement")
    args = parser.parse_args()
    r = max(1, args.repeats)
    print(f"Python {platform.python_version()}, numpy {np.__version__}, gymnasium "
          f"{gym.__version__}, {os.cpu_count()} CPUs, {platform.machine()}; medians of {r} "
          "repeats")
    t0 = time.perf_counter()

    n = 200
    per_step = measure(
        make_systems(n, ["SyncVectorEnv", "Concurrent thread", "Concurrent asyncio"], False),
        {"SyncVectorEnv": 1, "Concurrent thread": 20, "Concurrent asyncio": 20},
        max(1, min(r, 3)),  # SyncVectorEnv takes 2 s per step
    )
    report(f"(a) {n} envs, each step waits {WAIT * 1e3:g} ms (goal: >= 50x SyncVectorEnv)",
           n, per_step, "SyncVectorEnv", "throughput")

    n = 32
    per_step = measure(
        make_systems(n, ["AsyncVectorEnv", "Concurrent thread", "Concurrent asyncio"], False),
        {"AsyncVectorEnv": 30, "Concurrent thread": 30, "Concurrent asyncio": 30},
        r,
    )
    report(f"(b) {n} envs, each step waits {WAIT * 1e3:g} ms (goal: ahead of AsyncVectorEnv, "
           "one process per env)", n, per_step, "AsyncVectorEnv", "throughput")

    n = 16
    per_step = measure(
        make_systems(n, ["SyncVectorEnv", "Concurrent thread", "Concurrent asyncio",
                         "AsyncVectorEnv"], True),
        {"SyncVectorEnv": 1000, "Concurrent thread": 1000, "Concurrent asyncio": 1000,
         "AsyncVectorEnv": 300},
        r,
    )
    report(f"(c) CartPole-v1, {n} envs, CPU-bound (goal: <= 3x SyncVectorEnv's time per step)",
           n, per_step, "SyncVectorEnv", "time")
    print(f"\ntotal benchmark time {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
