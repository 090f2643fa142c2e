r"""ConcurrentVectorEnv against Gymnasium's SyncVectorEnv and AsyncVectorEnv, in one run.

    python benchmarks/bench_concurrent.py            # about two minutes
    python benchmarks/bench_concurrent.py --repeats 3
    # against another version of the module, e.g. the one before a change, interleaved:
    git show 3423df6:batchenv/concurrent.py > /tmp/old_concurrent.py  # the single-module version
    python benchmarks/bench_concurrent.py --against /tmp/old_concurrent.py
    # a package version (3e2e692: the first pass), its imports renamed after its folder
    mkdir /tmp/ab && git archive 3e2e692 batchenv/concurrent | tar -x -C /tmp/ab && \
        mv /tmp/ab/batchenv/concurrent /tmp/ab/other_pkg && \
        sed -i 's/batchenv\.concurrent\b/other_pkg/g' /tmp/ab/other_pkg/*.py
    python benchmarks/bench_concurrent.py --against /tmp/ab/other_pkg --compare-only

Prints medians over repeats (systems are measured interleaved, so a load spike on a shared
machine hits them all) and the ratios the issue asks about:

(a) 200 envs whose step waits 10 ms (I/O-like: time.sleep, or asyncio.sleep for the asyncio
    executor): env-steps/s of ConcurrentVectorEnv (thread, asyncio) vs SyncVectorEnv.
(b) 32 such envs: ConcurrentVectorEnv vs AsyncVectorEnv (one process per env).
(c) CartPole-v1, 16 envs (cheap, CPU-bound): time per step vs SyncVectorEnv.
(d) for the docs' "which tool" table, 16 envs whose step is 1 ms of CPU work, either pure
    Python (holds the GIL) or C code that releases it (hashlib): threads vs processes.
(e) with --against only: 16 envs whose step does nothing, so that the ratio is the one of
    the two versions' own per-call cost.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import importlib.util
import math
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


class PythonWorkEnv(WaitEnv):
    """A step that computes for about 1 ms in pure Python, holding the GIL."""

    loops = 20_000

    def step(self, action):
        x = 0
        for k in range(self.loops):
            x += k * k
        return np.zeros(4, np.float32), float(x % 7), False, False, {}


class ReleasingWorkEnv(WaitEnv):
    """A step that computes for about 1 ms in C code releasing the GIL (hashlib on 1 MB)."""

    data = b"x" * 1_000_000

    def step(self, action):
        digest = hashlib.sha256(self.data).digest()
        return np.zeros(4, np.float32), float(digest[0]), False, False, {}


class TrivialEnv(WaitEnv):
    """A step that does nothing: what a step costs is the executor's own per-call cost."""

    def step(self, action):
        return np.zeros(4, np.float32), 1.0, False, False, {}


class AsyncTrivialEnv(AsyncWaitEnv):
    async def step(self, action):
        return np.zeros(4, np.float32), 1.0, False, False, {}


def cartpole() -> gym.Env:
    return gym.make("CartPole-v1")


CONCURRENT: list[str] = []  # the labels of our systems, filled in main()
OTHER: dict[str, type] = {}  # --against: label -> the other version's ConcurrentVectorEnv


def make_systems(n: int, which: list[str], fn: Callable[[], gym.Env],
                 afn: Callable[[], AsyncEnv] | None = None) -> dict[str, gym.vector.VectorEnv]:
    makers = {
        "SyncVectorEnv": lambda: SyncVectorEnv([fn] * n),
        "AsyncVectorEnv": lambda: AsyncVectorEnv([fn] * n),
        "Concurrent thread": lambda: ConcurrentVectorEnv([fn] * n, executor="thread"),
        "Concurrent asyncio": lambda: ConcurrentVectorEnv([afn or fn] * n, executor="asyncio"),
    }
    for label, cls in OTHER.items():  # each version of ours next to the other
        makers[f"{label} thread"] = lambda cls=cls: cls([fn] * n, executor="thread")
        makers[f"{label} asyncio"] = lambda cls=cls: cls([afn or fn] * n, executor="asyncio")
        which = [w for name in which for w in (
            (name, f"{label} {name.split()[1]}") if name.startswith("Concurrent") else (name,))]
    return {name: makers[name]() for name in which}


def calibrate() -> None:
    """Size the CPU-work envs' loops so that one step takes about 1 ms here."""
    env = PythonWorkEnv()
    start = time.perf_counter()
    for _ in range(5):
        env.step(0)
    PythonWorkEnv.loops = max(1, int(PythonWorkEnv.loops * 1e-3 / ((time.perf_counter() - start)
                                                                 / 5)))
    env = ReleasingWorkEnv()
    start = time.perf_counter()
    for _ in range(5):
        env.step(0)
    per_mb = (time.perf_counter() - start) / 5
    ReleasingWorkEnv.data = b"x" * max(4096, int(1_000_000 * 1e-3 / per_mb))


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


def compare(label: str, cls: type, rounds: int) -> None:
    """This version against another, closely interleaved: each round steps both for a few
    steps, in alternating order; prints the median and quartiles of the per-round ratios of
    time per step (< 1: this version is faster), and the ratio of the two fastest rounds (the
    least sensitive to load on a shared machine)."""
    print(f"\nthis version vs {label}: time per step ratio, median [quartiles] of {rounds} "
          "rounds; ratio of the fastest rounds")
    cases = [("(a) 200 envs waiting 10 ms", 200, WaitEnv, AsyncWaitEnv, 5),
             ("(b) 32 envs waiting 10 ms", 32, WaitEnv, AsyncWaitEnv, 5),
             ("(c) CartPole-v1, 16 envs", 16, cartpole, cartpole, 100),
             ("(d) 16 envs, 1 ms pure Python", 16, PythonWorkEnv, None, 3),
             ("(d) 16 envs, 1 ms releasing GIL", 16, ReleasingWorkEnv, None, 3),
             ("(e) 16 trivial envs (call cost)", 16, TrivialEnv, AsyncTrivialEnv, 100)]
    for title, n, fn, afn, k in cases:
        for executor in ("thread", "asyncio") if afn else ("thread",):
            env_fns = [afn if executor == "asyncio" else fn] * n
            pair = [ConcurrentVectorEnv(env_fns, executor=executor),
                    cls(env_fns, executor=executor)]
            actions = np.zeros(n, dtype=np.int64)
            for env in pair:
                env.reset(seed=0)
                for _ in range(3):
                    env.step(actions)
            ratios, fastest = [], [math.inf, math.inf]
            for r in range(rounds):
                times = [0.0, 0.0]
                for j in ((0, 1) if r % 2 else (1, 0)):
                    start = time.perf_counter()
                    for _ in range(k):
                        pair[j].step(actions)
                    times[j] = time.perf_counter() - start
                    fastest[j] = min(fastest[j], times[j])
                ratios.append(times[0] / times[1])
            for env in pair:
                env.close()
            q = statistics.quantiles(ratios, n=4)
            print(f"  {title:<30}{executor:<9}{statistics.median(ratios):.3f} "
                  f"[{q[0]:.3f}, {q[2]:.3f}]   {fastest[0] / fastest[1]:.3f}")


def report(title: str, n: int, per_step: dict[str, float], baseline: str, goal: str) -> None:
    """Print a table; ``goal`` "throughput" shows speed-ups, "time" shows time ratios."""
    print(f"\n{title}")
    column = f"speed-up vs {baseline}" if goal == "throughput" else f"time vs {baseline}"
    print(f"  {'system':<22}{'time/step':>12}{'env-steps/s':>14}{column:>30}")
    base = per_step[baseline]
    for name, t in per_step.items():
        ratio = base / t if goal == "throughput" else t / base
        print(f"  {name:<22}{t * 1e3:>10.3f}ms{n / t:>14,.0f}{ratio:>29.2f}x")
    for label in OTHER:
        for executor in ("thread", "asyncio"):
            ours, other = f"Concurrent {executor}", f"{label} {executor}"
            if ours in per_step and other in per_step:
                print(f"  time per step, this version / {label}, {executor}: "
                      f"{per_step[ours] / per_step[other]:.3f}")


def load_other(path: str):
    """The module (a file) or package (a folder) at ``path``."""
    path = os.path.abspath(path)
    if os.path.isdir(path):
        sys.path.insert(0, os.path.dirname(path))
        return importlib.import_module(os.path.basename(path))
    spec = importlib.util.spec_from_file_location("other_concurrent", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="repeats per measurement")
    parser.add_argument("--against", metavar="PATH", help="another version of "
                        "batchenv/concurrent (a module file, or a package folder whose imports "
                        "name it by its folder name) to measure interleaved with this one, as "
                        "'other thread' / 'other asyncio'")
    parser.add_argument("--compare-only", action="store_true", help="with --against: only "
                        "the closely interleaved ratios")
    args = parser.parse_args()
    if args.against:
        OTHER["other"] = load_other(args.against).ConcurrentVectorEnv
    if args.compare_only:
        calibrate()
        for label, cls in OTHER.items():
            compare(label, cls, rounds=10 * max(1, args.repeats))
        return
    r = max(1, args.repeats)
    print(f"Python {platform.python_version()}, numpy {np.__version__}, gymnasium "
          f"{gym.__version__}, {os.cpu_count()} CPUs, {platform.machine()}; medians of {r} "
          "repeats")
    t0 = time.perf_counter()
    CONCURRENT.extend(f"{label} {executor}" for label in ("Concurrent", *OTHER)
                      for executor in ("thread", "asyncio"))

    n = 200
    per_step = measure(
        make_systems(n, ["SyncVectorEnv", "Concurrent thread", "Concurrent asyncio"], WaitEnv,
                     AsyncWaitEnv),
        {"SyncVectorEnv": 1, **dict.fromkeys(CONCURRENT, 20)},
        max(1, min(r, 3)),  # SyncVectorEnv takes 2 s per step
    )
    report(f"(a) {n} envs, each step waits {WAIT * 1e3:g} ms (goal: >= 50x SyncVectorEnv)",
           n, per_step, "SyncVectorEnv", "throughput")

    n = 32
    per_step = measure(
        make_systems(n, ["AsyncVectorEnv", "Concurrent thread", "Concurrent asyncio"], WaitEnv,
                     AsyncWaitEnv),
        {"AsyncVectorEnv": 30, **dict.fromkeys(CONCURRENT, 30)},
        r,
    )
    report(f"(b) {n} envs, each step waits {WAIT * 1e3:g} ms (goal: ahead of AsyncVectorEnv, "
           "one process per env)", n, per_step, "AsyncVectorEnv", "throughput")

    n = 16
    per_step = measure(
        make_systems(n, ["SyncVectorEnv", "Concurrent thread", "Concurrent asyncio",
                         "AsyncVectorEnv"], cartpole),
        {"SyncVectorEnv": 1000, **dict.fromkeys(CONCURRENT, 1000), "AsyncVectorEnv": 300},
        r,
    )
    report(f"(c) CartPole-v1, {n} envs, CPU-bound (goal: <= 3x SyncVectorEnv's time per step)",
           n, per_step, "SyncVectorEnv", "time")

    calibrate()
    for cls, what in ((PythonWorkEnv, "pure Python, holds the GIL"),
                      (ReleasingWorkEnv, "C code releasing the GIL")):
        per_step = measure(
            make_systems(n, ["SyncVectorEnv", "Concurrent thread", "AsyncVectorEnv"], cls),
            {"SyncVectorEnv": 20, **dict.fromkeys(CONCURRENT, 20), "AsyncVectorEnv": 20},
            r,
        )
        report(f"(d) {n} envs, each step ~1 ms of CPU work, {what} (for the docs' table)",
               n, per_step, "SyncVectorEnv", "throughput")
    for label, cls in OTHER.items():
        compare(label, cls, rounds=10 * r)
    print(f"\ntotal benchmark time {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
