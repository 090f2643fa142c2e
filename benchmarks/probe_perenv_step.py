"""Where a per-env step's time goes: the floor (a game with no rules) at 4096 envs, timed
piece by piece by CPU time (``time.process_time``), beside the numpy floor's whole step and
a hand-written numba loop doing only the base class's per-env bookkeeping.

    python benchmarks/probe_perenv_step.py [--num-envs 4096]

docs/performance.md ("Per-env kernels: BatchPong, the floors, threads", and "Per-env
kernels: the step around the rules") quotes it. Medians of 7 blocks, microseconds per call.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_kernels import NumpyFloor, PerEnvFloor  # noqa: E402


def micros(f: Callable[[], Any], calls: int = 1000) -> float:
    blocks = []
    for _ in range(7):
        t = time.process_time()
        for _ in range(calls):
            f()
        blocks.append((time.process_time() - t) / calls * 1e6)
    return sorted(blocks)[3]


@numba.njit(_nrt=False, nogil=True)
def bookkeeping(elapsed, awaiting, x, reward, terminated, truncated, obs, max_steps,
                lo, hi):  # type: ignore[no-untyped-def]
    """The fused loop's per-env work for a game with no rules (NEXT_STEP), written by hand
    over plain arrays."""
    for i in range(lo, hi):
        if i < 0:
            continue
        r = 0.0
        over = False
        if awaiting[i]:
            x[i] = 0.0
            elapsed[i] = 0
            awaiting[i] = False
        else:
            e = elapsed[i] + 1
            elapsed[i] = e
            over = e >= max_steps
            if over:
                awaiting[i] = True
        reward[i] = r
        terminated[i] = False
        truncated[i] = over
        obs[i, 0] = x[i]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--num-envs", type=int, default=4096)
    n = ap.parse_args().num_envs
    env = PerEnvFloor(n)
    env.reset(seed=0)
    action = np.zeros(n, np.int64)
    for _ in range(3):
        env.step(action)
    runner = env._per_env
    form = runner.actions
    outputs = runner.pool.take()  # (the loop's arguments as Runner.step gives them)
    args = (runner.p, runner.fields(env.state), 0, runner.every, action, form.low, form.high,
            *outputs, 0, env.max_episode_steps, 1, 0, n)
    ref = NumpyFloor(n)
    ref.reset(seed=0)
    ref.step(action)
    s = env.state
    hand = (s.elapsed_steps.copy(), np.zeros(n, np.bool_), s.x.copy(), np.zeros(n),
            np.zeros(n, np.bool_), np.zeros(n, np.bool_), np.zeros((n, 1), np.float32),
            env.max_episode_steps)
    bookkeeping(*hand, 0, n)
    whole = micros(lambda: env.step(action))
    loop = micros(lambda: runner._entry(*args))
    print(f"num_envs={n}, CPU microseconds per call (median of 7 blocks)")
    print(f"  per-env floor: env.step          {whole:8.2f}")
    print(f"    the compiled loop alone        {loop:8.2f}  (its action check included)")
    print(f"    the Python around it           {whole - loop:8.2f}")
    print(f"  hand-written bookkeeping loop    {micros(lambda: bookkeeping(*hand, 0, n)):8.2f}")
    print(f"  numpy floor: env.step            {micros(lambda: ref.step(action)):8.2f}")
    del outputs


if __name__ == "__main__":
    main()
