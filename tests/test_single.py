"""``gymnasium.make(id)`` for every native id: one env of the batch behind ``gymnasium.Env``
(batchenv/single.py), checked by Gymnasium's own checker and step by step against row 0 of
a batch."""

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import batchenv
from batchenv.single import SingleEnv

IDS = batchenv.list_envs()
#: The ids whose env renders rgb_array frames.
RENDER_IDS = [i for i in IDS
              if "rgb_array" in batchenv.registry[i].load().metadata.get("render_modes", ())]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():  # v0 ids' "out of date", the checker's advice on bounds
        warnings.simplefilter("ignore")
        yield


@pytest.mark.parametrize("env_id", IDS)
def test_make_passes_gymnasium_check_env(env_id):
    env = gym.make(env_id)
    assert isinstance(env.unwrapped, SingleEnv)
    check_env(env.unwrapped, skip_render_check=True)  # raises on any failed check
    env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_make_is_row_0_of_a_batch_step_by_step(env_id):
    """Same seed, same actions: the single env's transitions are row 0 of a batch of 3 in
    DISABLED mode (no auto-reset on either side)."""
    env = gym.make(env_id)
    # float64 rewards: the single env's Python float, as Gymnasium's envs return it
    batch = batchenv.make(env_id, 3, autoreset_mode="Disabled", reward_dtype=np.float64)
    obs, _ = env.reset(seed=11)
    bobs, _ = batch.reset(seed=11)
    np.testing.assert_array_equal(np.asarray(obs), bobs[0])
    batch.action_space.seed(3)
    for _ in range(12):
        actions = batch.action_space.sample()
        obs, reward, term, trunc, _ = env.step(actions[0])
        bobs, breward, bterm, btrunc, _ = batch.step(actions)
        np.testing.assert_array_equal(np.asarray(obs), bobs[0])
        assert (reward, term, trunc) == (breward[0], bterm[0], btrunc[0])
        assert env.observation_space.contains(obs)
        if term or trunc:
            break


@pytest.mark.parametrize("env_id", RENDER_IDS)
def test_make_renders_env_0(env_id):
    env = gym.make(env_id, render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    batch = batchenv.make(env_id, 2, render_mode="rgb_array")
    batch.reset(seed=0)
    np.testing.assert_array_equal(frame, batch.render()[0])
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3


def test_make_applies_the_time_limit_of_the_id_and_of_the_caller():
    env = gym.make("batchenv/CartPole-v1", max_episode_steps=3)
    env.reset(seed=0)
    flags = [env.step(0)[2:4] for _ in range(3)]
    assert flags == [(False, False), (False, False), (False, True)]  # too short to fall
    assert gym.spec("batchenv/CartPole-v1").max_episode_steps == 500
    assert gym.make("batchenv/CartPole-v1").unwrapped.batch.max_episode_steps is None


def test_make_keeps_the_id_kwargs_and_make_vec_still_batches():
    v1 = gym.make("batchenv/MinAtar-Breakout-v1")
    assert v1.action_space.n == gym.make_vec("batchenv/MinAtar-Breakout-v1", num_envs=2,
                                             vectorization_mode="vector_entry_point"
                                             ).single_action_space.n == 3
    assert gym.make("batchenv/MinAtar-Breakout-v0").action_space.n == 6
    vec = gym.make_vec("batchenv/CartPole-v1", num_envs=2,
                       vectorization_mode="vector_entry_point")
    assert isinstance(vec, batchenv.BatchEnv)


def test_sync_vector_env_of_made_envs_equals_the_batch():
    """What RLlib's default and make_vec(vectorization_mode='sync') build: SyncVectorEnv
    of gymnasium.make copies, seeded s + i, equals the batch seeded s."""
    sync = gym.make_vec("batchenv/CartPole-v1", num_envs=4, vectorization_mode="sync")
    batch = batchenv.BatchCartPole(num_envs=4)
    np.testing.assert_array_equal(sync.reset(seed=7)[0], batch.reset(seed=7)[0])
    for _ in range(30):
        a = np.ones(4, dtype=np.int64)
        s_out, b_out = sync.step(a), batch.step(a)
        for x, y in zip(s_out[:4], b_out[:4]):
            np.testing.assert_array_equal(x, y)


def test_single_env_refuses_batch_arguments():
    with pytest.raises(TypeError, match="num_envs"):
        SingleEnv(batchenv.BatchCartPole, num_envs=2)
    with pytest.raises(TypeError, match="batch_class"):
        SingleEnv(int)
    env = SingleEnv("batchenv.envs:BatchCartPole")
    with pytest.raises(ValueError, match="options"):
        env.reset(options={"reset_mask": np.ones(1, bool)})


def test_envpool_async_api_on_a_batch_equals_step():
    """async_reset/recv/send (EnvPool's loop, as CleanRL's ppo_atari_envpool.py) give what
    reset/step give, with info['env_id'] = every env."""
    a_env = batchenv.BatchPong(num_envs=5, autoreset_mode="SameStep")
    s_env = batchenv.BatchPong(num_envs=5, autoreset_mode="SameStep")
    a_env.async_reset(seed=3)
    obs, reward, term, trunc, info = a_env.recv()
    np.testing.assert_array_equal(obs, s_env.reset(seed=3)[0])
    assert not reward.any() and not term.any() and not trunc.any()
    np.testing.assert_array_equal(info["env_id"], np.arange(5))
    rng = np.random.default_rng(0)
    for _ in range(40):
        actions = rng.integers(0, 3, 5)
        a_env.send(actions, info["env_id"])
        obs, reward, term, trunc, info = a_env.recv()
        expected = s_env.step(actions)
        for got, want in zip((obs, reward, term, trunc), expected[:4]):
            np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="recv"):
        a_env.recv()
    a_env.send(np.zeros(5, np.int64))
    with pytest.raises(ValueError, match="send"):
        a_env.send(np.zeros(5, np.int64))
    with pytest.raises(ValueError, match="env_id"):
        batchenv.BatchPong(num_envs=5).send(np.zeros(5, np.int64), np.arange(2))


def test_envpool_async_api_on_concurrent_equals_step():
    c_env = batchenv.make("CartPole-v1", 3, vectorization="thread")
    s_env = batchenv.make("CartPole-v1", 3, vectorization="thread")
    c_env.async_reset(seed=1)
    obs, *_, info = c_env.recv()
    np.testing.assert_array_equal(obs, s_env.reset(seed=1)[0])
    for _ in range(20):
        actions = np.array([0, 1, 1])
        c_env.send(actions, info["env_id"])
        obs, reward, term, trunc, info = c_env.recv()
        for got, want in zip((obs, reward, term, trunc), s_env.step(actions)[:4]):
            np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(info["env_id"], np.arange(3))
    c_env.close()
    s_env.close()


def test_envpool_async_api_on_one_worker_sharded_equals_step():
    """ShardedVectorEnv's double-buffered API with num_workers=1: one half of every row, so
    an EnvPool loop runs unchanged (it needed 2+ workers)."""
    from batchenv.sharded import ShardedVectorEnv

    env = ShardedVectorEnv(batchenv.BatchPong, 4, num_workers=1, autoreset_mode="SameStep")
    ref = batchenv.BatchPong(num_envs=4, autoreset_mode="SameStep")
    try:
        env.async_reset(seed=2)
        obs, reward, *_, info = env.recv()
        np.testing.assert_array_equal(obs, ref.reset(seed=2)[0])
        np.testing.assert_array_equal(info["env_id"], np.arange(4))
        rng = np.random.default_rng(1)
        for _ in range(30):
            actions = rng.integers(0, 3, 4)
            env.send(actions, info["env_id"])
            obs, reward, term, trunc, info = env.recv()
            for got, want in zip((obs, reward, term, trunc), ref.step(actions)[:4]):
                np.testing.assert_array_equal(got, want)
    finally:
        env.close()


def test_batched_box_prints_its_bounds_on_every_gymnasium():
    """Gymnasium < 1.3 printed our batched Box as Box(None, None, ...): it prints what
    low_repr holds, where 1.3+ makes the string when printed."""
    pixels = batchenv.BatchPong(num_envs=3, obs_type="pixels").observation_space
    assert repr(pixels) == "Box(0, 255, (3, 84, 84), uint8)"
    cart = batchenv.BatchCartPole(num_envs=2).observation_space
    reference = gym.vector.utils.batch_space(gym.make("CartPole-v1").observation_space, 2)
    assert repr(cart) == repr(reference) and "None" not in repr(cart)
