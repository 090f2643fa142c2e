"""``reward_dtype``: every reward a vector env returns has it (float32 by default, float64
on request), whatever the kernels' form, the auto-reset mode, ``copy`` or sharding; the
float32 rewards are the float64 ones cast; anything else is refused before anything is
made."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import batchenv
from batchenv import BatchBreakout, BatchCartPole, BatchPendulum, BatchPong, ShardedVectorEnv
from batchenv.concurrent import ConcurrentVectorEnv

MODES = ["NextStep", "SameStep", "Disabled"]
DTYPES = [np.float32, np.float64]


def rewards_of(env, steps, seed=0):
    """Every reward array ``steps`` random steps return (resetting DISABLED envs that end)."""
    env.reset(seed=seed)
    env.action_space.seed(seed)
    out = []
    for _ in range(steps):
        _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        out.append(reward)
        done = terminated | truncated
        if env.autoreset_mode is gym.vector.AutoresetMode.DISABLED and done.any():
            env.reset(options={"reset_mask": done})
    return out


@pytest.mark.parametrize("copy", [True, False])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("cls", "kwargs"), [
    (BatchCartPole, {}),  # numpy kernels
    (BatchPendulum, {}),  # numpy kernels, non-integer rewards
    (BatchBreakout, {"kernels": "numba"}),  # per-env kernels, compiled
    (BatchBreakout, {"kernels": "numpy"}),
    (BatchPong, {"kernels": "numba", "points_to_win": 1}),
], ids=["cartpole", "pendulum", "breakout-numba", "breakout-numpy", "pong-numba"])
def test_every_reward_has_the_reward_dtype(cls, kwargs, mode, copy):
    for dtype in [None, *DTYPES]:
        chosen = {} if dtype is None else {"reward_dtype": dtype}
        env = cls(6, autoreset_mode=mode, copy=copy, max_episode_steps=9, **kwargs, **chosen)
        want = np.float32 if dtype is None else dtype
        assert env.reward_dtype == want
        for reward in rewards_of(env, 20):
            assert reward.dtype == want and reward.shape == (6,)


@pytest.mark.parametrize(("cls", "kwargs"), [
    (BatchPendulum, {}), (BatchBreakout, {"kernels": "numba"}),
    (BatchBreakout, {"kernels": "python"}), (BatchPong, {"kernels": "numpy"}),
], ids=["pendulum", "breakout-numba", "breakout-python", "pong-numpy"])
def test_float32_rewards_are_the_float64_rewards_cast(cls, kwargs):
    """Same seed, same actions: the kernels compute one reward, converted once."""
    wide = rewards_of(cls(5, reward_dtype=np.float64, **kwargs), 40)
    narrow = rewards_of(cls(5, **kwargs), 40)
    for w, n in zip(wide, narrow):
        assert np.array_equal(w.astype(np.float32), n)
    assert any(w.any() for w in wide)  # some reward was not zero


@pytest.mark.parametrize("bad", [np.float16, np.int32, "int64", None, bool, complex])
def test_other_reward_dtypes_are_refused_naming_the_keyword(bad):
    with pytest.raises(TypeError, match="reward_dtype must be np.float32 or np.float64"):
        BatchCartPole(2, reward_dtype=bad)
    with pytest.raises(TypeError, match="reward_dtype"):
        ConcurrentVectorEnv([lambda: gym.make("CartPole-v1")], reward_dtype=bad)


def test_names_of_the_dtypes_are_accepted():
    assert BatchCartPole(2, reward_dtype="float64").reward_dtype == np.float64
    assert BatchCartPole(2, reward_dtype="float32").reward_dtype == np.float32


@pytest.mark.parametrize("dtype", DTYPES)
def test_make_and_make_vec_forward_reward_dtype(dtype):
    for env in (batchenv.make("CartPole-v1", 3, reward_dtype=dtype),
                gym.make_vec("batchenv/CartPole-v1", num_envs=3, reward_dtype=dtype)):
        assert rewards_of(env, 2)[-1].dtype == dtype


def test_concurrent_env_is_float64_by_default_as_sync_and_float32_on_request():
    sync = gym.vector.SyncVectorEnv([lambda: gym.make("Pendulum-v1")] * 3)
    ours = ConcurrentVectorEnv([lambda: gym.make("Pendulum-v1")] * 3)
    narrow = batchenv.make("Pendulum-v1", 3, vectorization="thread", reward_dtype=np.float32)
    expected = rewards_of(sync, 5)
    for got, want in zip(rewards_of(ours, 5), expected):
        assert got.dtype == np.float64 and np.array_equal(got, want)
    for got, want in zip(rewards_of(narrow, 5), expected):
        assert got.dtype == np.float32 and np.array_equal(got, want.astype(np.float32))
    for vectorization in ("sync", "process"):  # Gymnasium's own: float64, no keyword
        with pytest.raises(ValueError, match="reward_dtype.*float64 rewards"):
            batchenv.make("Pendulum-v1", 2, vectorization=vectorization,
                          reward_dtype=np.float32)


def stay(obs):
    """A policy for ``collect``: every paddle stays."""
    return np.zeros(len(obs), dtype=np.int64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
def test_sharded_rewards_have_the_reward_dtype_in_step_and_collect(dtype, mode):
    """One shard in this process, one in a worker: the shared-memory buffers have the
    dtype, and equal an unsharded batch's rewards."""
    kwargs = {"reward_dtype": dtype, "autoreset_mode": mode, "points_to_win": 1}
    env = ShardedVectorEnv(BatchPong, 4, num_workers=2, local_shard=True, **kwargs)
    try:
        assert env.reward_dtype == dtype
        plain = BatchPong(4, **kwargs)
        for got, want in zip(rewards_of(env, 30), rewards_of(plain, 30)):
            assert got.dtype == dtype and np.array_equal(got, want)
        env.async_reset(seed=0)  # EnvPool's calls: the reset's zero rewards too
        for _ in range(3):  # half 0's reset, half 1's reset, half 0's step
            _, reward, *_, info = env.recv()
            assert reward.dtype == dtype
            env.send(np.zeros(len(info["env_id"]), dtype=np.int64))
        env.reset(seed=0)
        trajectories = env.collect(stay, 3)
        assert trajectories.rewards.dtype == dtype and trajectories.rewards.shape == (3, 4)
    finally:
        env.close()


def test_the_single_env_returns_full_precision_python_floats():
    """``gymnasium.make``'s env returns a Python float, as Gymnasium's envs: the float64
    reward, not a float32 one widened."""
    env = gym.make("batchenv/Pendulum-v1")
    batch = BatchPendulum(1, reward_dtype=np.float64)
    env.reset(seed=0)
    batch.reset(seed=0)
    action = np.array([0.5], np.float32)
    _, reward, *_ = env.step(action)
    expected = batch.step(action[None])[1][0]
    assert type(reward) is float and reward == expected
    assert reward != float(np.float32(reward))  # more digits than float32 has


@pytest.mark.parametrize("dtype", DTYPES)
def test_async_reset_rewards_have_the_reward_dtype(dtype):
    """EnvPool's calls on a vector env: the reset's zero rewards are in the step's dtype."""
    for env in (BatchCartPole(3, reward_dtype=dtype),
                ConcurrentVectorEnv([lambda: gym.make("CartPole-v1")] * 3, reward_dtype=dtype)):
        env.async_reset(seed=0)
        assert env.recv()[1].dtype == dtype
        env.send(np.ones(3, dtype=np.int64))
        assert env.recv()[1].dtype == dtype
