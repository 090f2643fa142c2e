"""Where a per-env step's time goes: the floor (a game with no rules) at 4096 envs, timed
piece by piece by CPU time (``time.process_time``), beside the numpy floor's whole step and
a hand-written numba loop doing only the base class's per-env bookkeeping.

    python benchmarks/probe_perenv_step.py [--num-envs 4096]

docs/performance.md ("Per-env kernels: BatchPong, the floors, threads") quotes it. Medians
of 7 blocks, microseconds per call.
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
def bookkeeping(elapsed, awaiting, x, reward, terminated, truncated, obs, final, max_steps,
                lo, hi):  # type: ignore[no-untyped-def]
    """The fused loop's per-env work for a game with no rules, written by hand."""
    for i in range(lo, hi):
        final[i] = False
        if awaiting[i]:
            continue
        e = elapsed[i] + 1
        elapsed[i] = e
        over = max_steps > 0 and e >= max_steps
        reward[i] = 0.0
        terminated[i] = False
        truncated[i] = over
        if over:
            awaiting[i] = True
        row = obs[i]
        row[0] = x[i]


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
    checked = env._action_check(action)
    args = (runner.p, runner.fields(env.state), checked, env._reward, env._terminated,
            env._truncated, np.empty_like(env._obs), runner.final_obs, runner.final, 0,
            env.max_episode_steps)
    loop = runner._fused(args, env._obs, True)
    ref = NumpyFloor(n)
    ref.reset(seed=0)
    ref.step(action)
    s = env.state
    hand = (s.elapsed_steps.copy(), np.zeros(n, np.bool_), s.x.copy(), np.zeros(n),
            np.zeros(n, np.bool_), np.zeros(n, np.bool_), np.zeros((n, 1), np.float32),
            np.zeros(n, np.bool_), 10**9)
    bookkeeping(*hand, 0, n)
    print(f"num_envs={n}, CPU microseconds per call (median of 7 blocks)")
    print(f"  per-env floor: env.step          {micros(lambda: env.step(action)):8.2f}")
    print(f"    action validation              {micros(lambda: env._action_check(action)):8.2f}")
    print(f"    Runner.step                    {micros(lambda: runner.step(env, checked)):8.2f}")
    print(f"      the compiled loop            {micros(lambda: loop(*args, 0, n)):8.2f}")
    print(f"      finding it for these types   "
          f"{micros(lambda: runner._fused(args, env._obs, True)):8.2f}")
    print(f"      the fresh observation array  "
          f"{micros(lambda: np.empty_like(env._obs)):8.2f}")
    print(f"  hand-written bookkeeping loop    {micros(lambda: bookkeeping(*hand, 0, n)):8.2f}")
    print(f"  numpy floor: env.step            {micros(lambda: ref.step(action)):8.2f}")


if __name__ == "__main__":
    main()
