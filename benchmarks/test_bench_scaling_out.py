"""More than one core or more than one env per call: the sharded and the concurrent envs.

    python -m pytest benchmarks/test_bench_scaling_out.py --benchmark-only

* ``sharded BatchPong state n=65536`` and ``sharded BatchPong pixels n=4096``: BatchPong
  (``copy=False``, as a trainer runs it) in one process against ``ShardedVectorEnv`` with 2
  worker processes (``backend="process"``) and with ``local_shard=True`` (the driver steps
  shard 0 itself beside one worker). On 2 cores the ceiling is about 2x, less whatever else
  the machine runs.
* ``ConcurrentVectorEnv ...``: Gymnasium envs stepped by ``ConcurrentVectorEnv`` (threads,
  asyncio) against Gymnasium's ``SyncVectorEnv``: 16 CartPoles (a cheap CPU-bound step: the
  per-call cost of the executor) and 32 envs whose step waits 10 ms (``time.sleep``, or
  ``asyncio.sleep`` for the asyncio executor), as an env waiting on I/O does.
"""

from __future__ import annotations

import asyncio
import time

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import SyncVectorEnv

from batchenv import BatchPong
from batchenv.concurrent import AsyncEnv, ConcurrentVectorEnv
from batchenv.sharded import ShardedVectorEnv

WAIT = 0.010  # seconds each step of the waiting envs waits
SHARDED = {"state": 65536, "pixels": 4096}


@pytest.mark.parametrize("system", ["one process", "2 worker processes",
                                    "local_shard (driver + 1 worker)"])
@pytest.mark.parametrize("obs_type", list(SHARDED))
def test_sharded(measure, obs_type, system):
    n = SHARDED[obs_type]
    if system == "one process":
        env = BatchPong(n, obs_type=obs_type, copy=False)
    else:
        env = ShardedVectorEnv(BatchPong, n, num_workers=2, copy=False, obs_type=obs_type,
                               local_shard=system.startswith("local_shard"))
    try:
        env.reset(seed=0)
        measure(measure.batch(env), group=f"sharded BatchPong {obs_type} n={n}", label=system,
                env_steps=n, vs=None if system == "one process" else "one process")
    finally:
        env.close()


class WaitEnv(gym.Env):
    """A step that waits ``WAIT`` seconds on ``time.sleep``, like a blocking request."""

    observation_space = spaces.Box(-1.0, 1.0, (4,), np.float32)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(4, np.float32), {}

    def step(self, action):
        time.sleep(WAIT)
        return np.zeros(4, np.float32), 1.0, False, False, {}


class AsyncWaitEnv(AsyncEnv):
    """A step that waits ``WAIT`` seconds on ``asyncio.sleep``, like a request to a server."""

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


CASES = {"CartPole n=16": (16, cartpole, cartpole),
         "10 ms wait n=32": (32, WaitEnv, AsyncWaitEnv)}


@pytest.mark.parametrize("system", ["SyncVectorEnv", "thread", "asyncio"])
@pytest.mark.parametrize("case", list(CASES))
def test_concurrent(measure, case, system):
    n, make, make_async = CASES[case]
    if system == "SyncVectorEnv":
        env = SyncVectorEnv([make] * n)
        label = "Gymnasium SyncVectorEnv"
    else:
        env = ConcurrentVectorEnv([make_async if system == "asyncio" else make] * n,
                                  executor=system)
        label = f"ConcurrentVectorEnv, {system}"
    try:
        env.reset(seed=0)
        actions = np.zeros(n, dtype=np.int64)
        measure(lambda: env.step(actions), group=f"ConcurrentVectorEnv {case}", label=label,
                env_steps=n, peer=system == "SyncVectorEnv")
    finally:
        env.close()
