"""MiniGrid families beside ``minigrid`` 3.2.0's own env (one env, ``ImgObsWrapper``).

    python -m pytest benchmarks/test_bench_minigrid.py --benchmark-only

Groups ``<id> n=N``: ``batchenv.make(id, N)`` (per-env kernels compiled by numba, one
thread; the 7x7x3 partial view, as ``ImgObsWrapper`` returns it; NEXT_STEP auto-reset)
against ``ImgObsWrapper(gymnasium.make(id))`` stepped one env per call and reset at an
episode's end. Both draw random actions, so episodes end mostly by the time limit: the
resets (the maze generators) are part of both sides' time.
"""

from __future__ import annotations

import numpy as np
import pytest

import batchenv

IDS = ["MiniGrid-DoorKey-8x8-v0", "MiniGrid-FourRooms-v0", "MiniGrid-MultiRoom-N6-v0",
       "MiniGrid-KeyCorridorS3R3-v0", "MiniGrid-Dynamic-Obstacles-8x8-v0"]
SIZES = [256, 4096, pytest.param(65536, marks=pytest.mark.slow)]


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("env_id", IDS)
def test_batchenv(measure, env_id, n):
    pytest.importorskip("numba")
    env = batchenv.make(env_id, n)
    env.reset(seed=0)
    measure(measure.batch(env), group=f"{env_id} n={n}", label="batchenv", env_steps=n)
    env.close()


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("env_id", IDS)
def test_minigrid(measure, env_id, n):
    pytest.importorskip("minigrid", reason="the test extra: minigrid 3.2.0")
    import gymnasium as gym
    from minigrid.wrappers import ImgObsWrapper

    env = ImgObsWrapper(gym.make(env_id))
    actions = np.random.default_rng(0).integers(0, env.action_space.n, 4096).tolist()
    measure(measure.loop(env, actions), group=f"{env_id} n={n}", label="minigrid 3.2.0 (one env)",
            env_steps=1, peer=True, num_envs=n)
    env.close()
