"""ConcurrentVectorEnv in DISABLED mode: an env that finished stands still until it is reset,
whether it terminated or was truncated (docs/concurrency.md, "Auto-reset"). The oracle is the
documented rule, checked against the sub-envs themselves (their TimeLimit step counters)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

from batchenv import ConcurrentVectorEnv


@pytest.mark.parametrize("executor", ["thread", "asyncio"])
def test_a_truncated_env_stands_still_until_reset(executor):
    limit = 3  # CartPole cannot terminate within 3 steps from its start states
    env = ConcurrentVectorEnv([lambda: gym.make("CartPole-v1", max_episode_steps=limit)] * 2,
                              executor=executor, autoreset_mode=AutoresetMode.DISABLED)
    try:
        env.reset(seed=0)
        for _ in range(limit):
            obs, reward, terminated, truncated, _ = env.step(np.array([0, 1]))
        assert truncated.all() and not terminated.any()
        final = obs.copy()
        for _ in range(2):
            obs, reward, terminated, truncated, _ = env.step(np.array([1, 0]))
            np.testing.assert_array_equal(obs, final)
            np.testing.assert_array_equal(reward, [0.0, 0.0])
            assert not terminated.any() and not truncated.any()
        # the sub-envs were not stepped past their time limit
        assert env.get_attr("_elapsed_steps") == (limit, limit)
        obs, _ = env.reset(options={"reset_mask": np.array([True, False])})
        np.testing.assert_array_equal(obs[1], final[1])
        _, _, _, truncated, _ = env.step(np.array([0, 0]))
        assert truncated.tolist() == [False, False]  # env 1 still waits, env 0 runs again
    finally:
        env.close()
