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


#: One id per kind of env behind SingleEnv: numpy kernels with Discrete and Box actions,
#: per-env kernels (compiled) of three families, and Pong in each of its two forms.
KINDS = [("batchenv/CartPole-v1", {}), ("batchenv/Pendulum-v1", {}),
         ("batchenv/MinAtar-Breakout-v1", {}), ("batchenv/MiniGrid-Empty-5x5-v0", {}),
         ("batchenv/Pong-v0", {}), ("batchenv/Pong-v0", {"kernels": "numpy"})]


def _slow_form(action):
    """The same action in a form the quick path of SingleEnv.step leaves to the batch's
    checker (a float for a Discrete action, a float64 array for a float32 Box)."""
    return float(action) if np.ndim(action) == 0 else np.asarray(action, dtype=np.float64)


@pytest.mark.parametrize("env_id, kwargs", KINDS)
def test_quick_and_checked_paths_give_row_0_of_the_batch(env_id, kwargs):
    """The quick path (a plain int or an array of the space's dtype), the batch's checked
    path (any other form) and row 0 of a batch agree on every output, the state and the
    info, across episode ends, steps past the end without reset (DISABLED keeps the env
    frozen) and a time limit given to the single env."""
    quick = gym.make(env_id, max_episode_steps=None, **kwargs).unwrapped
    checked = SingleEnv(type(quick.batch), max_episode_steps=40, **kwargs)
    quick = SingleEnv(type(quick.batch), max_episode_steps=40, **kwargs)
    batch = type(quick.batch)(num_envs=2, autoreset_mode="Disabled", max_episode_steps=40,
                              reward_dtype=np.float64, **kwargs)
    quick.reset(seed=5)
    checked.reset(seed=5)
    batch.reset(seed=5)
    batch.action_space.seed(1)
    ended, frozen = 0, -1
    for t in range(160):
        actions = batch.action_space.sample()
        a = actions[0]
        a = int(a) if np.ndim(a) == 0 else a
        got = quick.step(a)
        slow = checked.step(_slow_form(a))
        want = batch.step(actions)
        assert type(got[1]) is float and type(got[2]) is bool and type(got[3]) is bool
        np.testing.assert_array_equal(got[0], want[0][0])
        np.testing.assert_array_equal(slow[0], want[0][0])
        assert got[1:4] == slow[1:4] == (want[1][0], want[2][0], want[3][0])
        assert got[4].keys() == slow[4].keys() == want[4].keys()
        for key in got[4]:
            np.testing.assert_array_equal(got[4][key], want[4][key])
        np.testing.assert_array_equal(quick.batch.get_state(), batch.get_state()[:1])
        np.testing.assert_array_equal(checked.batch.get_state(), batch.get_state()[:1])
        if got[2] or got[3]:
            ended += 1
            frozen = t + 3 if ended % 2 else t  # every other end: three frozen steps first
        if frozen == t:
            for env in (quick, checked):
                env.reset(seed=t)
            batch.reset(seed=[t, None])
    assert ended >= 2


@pytest.mark.parametrize("env_id, kwargs", KINDS)
def test_bad_single_actions_are_refused_as_the_batch_refuses_them(env_id, kwargs):
    """Every bad action gets the batch's error, and a refused step changes nothing (the
    next valid step is as if it never came)."""
    from batchenv.validation import batch_of_one

    env = gym.make(env_id, **kwargs).unwrapped
    other = gym.make(env_id, **kwargs).unwrapped
    env.reset(seed=2)
    other.reset(seed=2)
    space = env.action_space
    if isinstance(space, gym.spaces.Discrete):
        bad = [space.n, -1, np.int64(space.n + 7), 1.5, np.nan, "a", True, [0, 0]]
    else:
        bad = [np.array([np.nan], np.float32), np.array([np.inf], np.float32),
               np.array([0.0, 1.0], np.float32), "a", np.array([1e39])]
    for action in bad:
        with pytest.raises((TypeError, ValueError)) as got:
            env.step(action)
        with pytest.raises(type(got.value)) as want:
            other.batch.step(batch_of_one(space, action))
        assert str(got.value) == str(want.value)
    np.testing.assert_array_equal(env.batch.get_state(), other.batch.get_state())
    good = space.sample()
    for x, y in zip(env.step(good)[:4], other.step(good)[:4]):
        np.testing.assert_array_equal(x, y)


def test_box_actions_out_of_bounds_are_clipped_by_the_checked_path():
    env = gym.make("batchenv/Pendulum-v1").unwrapped
    batch = batchenv.make("Pendulum-v1", 1, autoreset_mode="Disabled", reward_dtype=np.float64)
    env.reset(seed=4)
    batch.reset(seed=4)
    for a in (5.0, -7.5, 2.0):
        action = np.array([a], np.float32)
        got, want = env.step(action), batch.step(action[None])
        np.testing.assert_array_equal(got[0], want[0][0])
        assert got[1] == want[1][0]
    np.testing.assert_array_equal(env.batch.get_state(), batch.get_state())


def test_fused_full_reset_equals_reset_then_observe():
    """A per-env form's full reset is one pass (reset and observe each env): the same
    state and observation as the checked form's separate passes."""
    fused = batchenv.make("MinAtar-Breakout-v1", 3)
    twin = batchenv.make("MinAtar-Breakout-v1", 3, debug=True)
    assert fused.kernel_form.fused and twin.kernel_form.checked
    for seed in (0, 9):
        np.testing.assert_array_equal(fused.reset(seed=seed)[0], twin.reset(seed=seed)[0])
        np.testing.assert_array_equal(fused.get_state(), twin.get_state())
        for _ in range(20):  # and a reset of a batch part-way through its episodes
            a = np.array([1, 2, 0])
            fused.step(a)
            twin.step(a)
        np.testing.assert_array_equal(fused.reset()[0], twin.reset()[0])
        np.testing.assert_array_equal(fused.get_state(), twin.get_state())


class RaisingCounter(batchenv.BatchEnv):
    """Counts its steps and sums its actions; its step_env raises past ``limit`` steps."""

    state_dtype = np.dtype([("count", np.int64), ("total", np.int64)])
    single_action_space = gym.spaces.Discrete(3)
    single_observation_space = gym.spaces.Box(0, 10**6, (2,), np.int64)
    kernel_params = ("limit",)

    def __init__(self, num_envs=None, *, limit=80, **kwargs):
        self.limit = limit
        super().__init__(num_envs, **kwargs)

    @staticmethod
    def reset_env(p, s, i):
        s.count[i] = 0
        s.total[i] = 0

    @staticmethod
    def step_env(p, s, i, action):
        s.count[i] += 1
        s.total[i] += action
        if s.count[i] > p.limit:
            raise ValueError("count past the limit")
        return 1.0, False

    @staticmethod
    def observe_env(p, s, i, obs):
        obs[0] = s.count[i]
        obs[1] = s.total[i]


@pytest.mark.parametrize("kernels", ["numba", "python"])
def test_a_kernel_error_on_the_quick_path_is_the_batchs_error(kernels):
    """A long-running single env's loop is called through a table of pointers
    (batchenv/_one.py), which cannot carry an exception: the kernel's own error still
    comes out, from the state the batch's step leaves, and a parameter set between steps
    is read."""
    if kernels == "numba":
        pytest.importorskip("numba")
    env = SingleEnv(RaisingCounter, limit=80, kernels=kernels)
    batch = RaisingCounter(1, limit=80, kernels=kernels, autoreset_mode="Disabled",
                           reward_dtype=np.float64)
    env.reset(seed=0)
    batch.reset(seed=0)
    for t in range(80):
        got, want = env.step(t % 3), batch.step(np.array([t % 3]))
        np.testing.assert_array_equal(got[0], want[0][0])
    form = env.batch.kernel_form
    assert (form._single.reset_call is not None) == (kernels == "numba")  # the pointer call
    with pytest.raises(ValueError, match="count past the limit"):
        batch.step(np.array([2]))
    with pytest.raises(ValueError, match="count past the limit"):
        env.step(2)
    np.testing.assert_array_equal(env.batch.get_state(), batch.get_state())
    with pytest.raises(batchenv.StepBeforeResetError, match="half-changed"):
        env.step(0)
    env.reset()
    env.batch.limit = 200  # read from the next step on
    for _ in range(150):
        obs = env.step(1)[0]
    assert obs.tolist() == [150, 150]
