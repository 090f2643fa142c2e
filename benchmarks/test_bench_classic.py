"""Classic control: batchenv's envs beside Gymnasium's vector envs of the same ids.

    python -m pytest benchmarks/test_bench_classic.py --benchmark-only

Groups ``<id> n=N``: ``gymnasium.make_vec("batchenv/<id>", N)`` against
``gymnasium.make_vec("<id>", N, vectorization_mode="sync")`` (a ``SyncVectorEnv`` of N
Gymnasium envs, up to 4096: at 65536 one of its steps takes seconds) and, for CartPole,
Gymnasium's numpy-vectorized ``CartPoleVectorEnv`` (``vectorization_mode=
"vector_entry_point"``) and ``BatchCartPole(fast_trig=False)`` (bit for bit with Gymnasium's
sine and cosine; the default is within one ulp of them). Both sides run with their defaults
(NEXT_STEP auto-reset, actions checked, results copied) and random actions.
"""

from __future__ import annotations

import gymnasium as gym
import pytest

import batchenv

IDS = ["CartPole-v1", "MountainCar-v0", "MountainCarContinuous-v0", "Acrobot-v1",
       "Pendulum-v1"]
SIZES = [256, 4096, pytest.param(65536, marks=pytest.mark.slow)]


def stepped(measure, env, env_id: str, n: int, label: str, peer: bool = False) -> None:
    env.reset(seed=0)
    measure(measure.batch(env), group=f"{env_id} n={n}", label=label, env_steps=n, peer=peer)
    env.close()


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("env_id", IDS)
def test_batchenv(measure, env_id, n):
    stepped(measure, gym.make_vec(f"batchenv/{env_id}", num_envs=n), env_id, n, "batchenv")


@pytest.mark.parametrize("n", [256, 4096])
@pytest.mark.parametrize("env_id", IDS)
def test_gymnasium_sync_vector_env(measure, env_id, n):
    env = gym.make_vec(env_id, num_envs=n, vectorization_mode="sync")
    stepped(measure, env, env_id, n, "Gymnasium SyncVectorEnv", peer=True)


@pytest.mark.parametrize("n", SIZES)
def test_gymnasium_cartpole_vector_env(measure, n):
    env = gym.make_vec("CartPole-v1", num_envs=n, vectorization_mode="vector_entry_point")
    stepped(measure, env, "CartPole-v1", n, "Gymnasium CartPoleVectorEnv", peer=True)


@pytest.mark.parametrize("n", SIZES)
def test_batchenv_cartpole_bit_for_bit(measure, n):
    env = batchenv.BatchCartPole(n, fast_trig=False)
    stepped(measure, env, "CartPole-v1", n, "batchenv, fast_trig=False")
