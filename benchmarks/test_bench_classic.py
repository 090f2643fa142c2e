"""pytest-benchmark cases for the classic-control envs: ``pytest benchmarks/test_bench_classic.py``.

One ``step`` per benchmark round; compare runs with ``--benchmark-compare``. The ratio figures
(against Gymnasium's ``CartPoleVectorEnv`` and ``SyncVectorEnv``) come from
``benchmarks/bench_classic.py``.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import batchenv

IDS = ["CartPole-v1", "MountainCar-v0", "MountainCarContinuous-v0", "Acrobot-v1",
       "Pendulum-v1"]


def _stepper(env: gym.vector.VectorEnv):
    env.reset(seed=0)
    env.action_space.seed(0)
    actions = [np.asarray(env.action_space.sample()) for _ in range(16)]
    counter = iter(range(10**12))
    return lambda: env.step(actions[next(counter) & 15])


@pytest.mark.parametrize("n", [1, 256, 4096, 65536])
@pytest.mark.parametrize("env_id", IDS)
def test_step(benchmark, env_id, n):
    benchmark(_stepper(gym.make_vec(f"batchenv/{env_id}", num_envs=n)))


@pytest.mark.parametrize("n", [256, 4096, 65536])
def test_cartpole_bit_for_bit(benchmark, n):
    benchmark(_stepper(batchenv.BatchCartPole(n, fast_trig=False)))


@pytest.mark.parametrize("n", [256, 4096, 65536])
def test_gymnasium_cartpole_vector_env(benchmark, n):
    benchmark(_stepper(gym.make_vec("CartPole-v1", num_envs=n,
                                    vectorization_mode="vector_entry_point")))
