"""What outside clients hit where BatchEnv differed from Gymnasium's SyncVectorEnv (issue 12):
each test runs the client's calls on a BatchEnv and on a SyncVectorEnv of the equivalent
single env, side by side, with Gymnasium's SyncVectorEnv as the oracle."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector import AutoresetMode, SyncVectorEnv

import batchenv
from batchenv import BatchCartPole, BatchPong, StepBeforeResetError
from batchenv.core import BatchEnv
from batchenv.testing import CounterEnv


class ScalarCounter(gym.Env):
    """The single env CounterEnv batches, written as Gymnasium envs are: the observation
    (steps since reset) is a Python int, the reward the action, terminated at max_count."""

    observation_space = spaces.Discrete(64)
    action_space = spaces.Discrete(5)

    def __init__(self, max_count: int = 3) -> None:
        self.max_count = max_count

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.count = 0
        return 0, {}

    def step(self, action: Any):
        self.count += 1
        return self.count, float(action), self.count == self.max_count, False, {}


def sync_cartpoles(n: int, **kwargs: Any) -> SyncVectorEnv:
    return SyncVectorEnv([lambda: gym.make("CartPole-v1", **kwargs) for _ in range(n)])


# ------------------------------------------------------------------ call / get_attr / set_attr
def test_call_render_returns_one_frame_per_env_like_sync():
    mode = "rgb_array"
    ours, sync = BatchCartPole(3, render_mode=mode), sync_cartpoles(3, render_mode=mode)
    ours.reset(seed=0)
    sync.reset(seed=0)
    frames, sync_frames = ours.call("render"), sync.call("render")
    assert type(frames) is tuple and len(frames) == len(sync_frames) == 3
    for frame, sync_frame in zip(frames, sync_frames):
        assert type(frame) is type(sync_frame)
        assert frame.shape == sync_frame.shape and frame.dtype == sync_frame.dtype
    # without a render_mode: one None per env, as Sync's envs give
    no_mode = CounterEnv(2)
    no_mode.reset()
    with pytest.warns(UserWarning):
        assert no_mode.call("render") == (None, None)


def test_get_attr_returns_the_shared_value_once_per_env_like_sync():
    mode = "rgb_array"
    ours, sync = BatchCartPole(3, render_mode=mode), sync_cartpoles(3, render_mode=mode)
    assert data_equivalence(ours.get_attr("render_mode"), sync.get_attr("render_mode"))
    assert ours.call("render_mode") == sync.call("render_mode") == ("rgb_array",) * 3
    pong = BatchPong(4, points_to_win=5)
    params = pong.get_attr("params")
    assert len(params) == 4 and all(p is pong.params for p in params)
    assert params[0].points_to_win == 5
    for envs in (ours, sync):
        with pytest.raises(AttributeError):
            envs.get_attr("no_such_attribute")


def test_call_runs_a_method_once_on_the_batch():
    env = CounterEnv(3)
    env.reset(seed=0)
    env.step(np.ones(3, dtype=np.int64))
    states = env.call("get_state")
    assert len(states) == 3 and all(s is states[0] for s in states)  # one call, one result
    np.testing.assert_array_equal(states[0]["count"], [1, 1, 1])


def test_set_attr_like_sync_one_value_or_equal_per_env_values():
    ours, sync = BatchCartPole(3), sync_cartpoles(3)
    for envs in (ours, sync):
        envs.set_attr("tag", "a")
        assert envs.get_attr("tag") == ("a", "a", "a")
        envs.set_attr("tag", ["b", "b", "b"])
        assert envs.get_attr("tag") == ("b", "b", "b")
        with pytest.raises(ValueError, match="3"):
            envs.set_attr("tag", ["c", "c"])
    # it takes effect: a time limit of 2 truncates at the second step
    ours.set_attr("max_episode_steps", 2)
    ours.reset(seed=0)
    ours.step(np.zeros(3, dtype=np.int64))
    assert ours.step(np.zeros(3, dtype=np.int64))[3].all()
    # one batch, one attribute: different per-env values are refused (Sync takes them)
    with pytest.raises(ValueError, match=r"env indices \[2\]"):
        ours.set_attr("tag", ["d", "d", "e"])
    assert ours.get_attr("tag") == ("b", "b", "b")


# ------------------------------------------------------------------ np_random_seed
def test_np_random_seed_per_env_like_sync():
    ours, sync = BatchCartPole(4), sync_cartpoles(4)
    for envs in (ours, sync):  # before any reset: fresh seeds, the same on every call
        before = envs.np_random_seed
        assert type(before) is tuple and len(before) == 4
        assert all(type(s) is int for s in before) and len(set(before)) == 4
        assert envs.np_random_seed == before
        envs.reset()  # an unseeded first reset keeps the seeds it was shown
        assert envs.np_random_seed == before

    steps: list[tuple[dict[str, Any], tuple]] = [
        ({"seed": 42}, (42, 43, 44, 45)),
        ({}, (42, 43, 44, 45)),  # no seed: streams and seeds kept
        ({"seed": [7, None, 9, None]}, (7, 43, 9, 45)),
        ({"seed": [1, 2, 3, 4], "options": {"reset_mask": np.array([1, 0, 1, 0], bool)}},
         (1, 43, 3, 45)),  # a masked reset reseeds only the masked envs
    ]
    for kwargs, expected in steps:
        ours.reset(**kwargs)
        sync.reset(**kwargs)
        assert ours.np_random_seed == sync.np_random_seed == expected
        assert ours.get_attr("np_random_seed") == sync.get_attr("np_random_seed") == expected


def test_np_random_seed_before_reset_is_the_seed_the_first_reset_uses():
    a = BatchPong(3)
    seeds = a.np_random_seed
    obs, _ = a.reset()
    again, _ = BatchPong(3).reset(seed=list(seeds))
    np.testing.assert_array_equal(obs, again)


def test_np_random_seed_unknown_after_restoring_another_seeds_snapshot():
    env, other = CounterEnv(3), CounterEnv(3)
    env.reset(seed=5)
    other.reset(seed=100)
    env.set_state(other.get_state()[:1], mask=np.array([True, False, False]))
    assert env.np_random_seed == (-1, 6, 7)  # Gymnasium's "-1: unknown seed"
    fresh = CounterEnv(2)
    fresh.set_state(CounterEnv(2).get_state())
    assert fresh.np_random_seed == (-1, -1)


# ------------------------------------------------------------------ first reset with a mask
def test_first_reset_with_an_all_true_mask_is_a_full_reset_like_sync():
    mask = np.ones(3, dtype=bool)
    sync = sync_cartpoles(3)
    sync_obs, _ = sync.reset(seed=4, options={"reset_mask": mask})
    ours = BatchCartPole(3)
    obs, _ = ours.reset(seed=4, options={"reset_mask": mask})
    expected, _ = BatchCartPole(3).reset(seed=4)
    np.testing.assert_array_equal(obs, expected)
    assert obs.shape == sync_obs.shape
    ours.step(np.zeros(3, dtype=np.int64))  # the batch has state: step works

    partial = BatchCartPole(3)
    with pytest.raises(StepBeforeResetError, match="full reset"):
        partial.reset(options={"reset_mask": np.array([True, False, True])})
    with pytest.raises(StepBeforeResetError):
        partial.step(np.zeros(3, dtype=np.int64))


# ------------------------------------------------------------------ Box actions overflowing
def box_action_envs() -> list[str]:
    ids = [env_id for env_id in gym.registry if env_id.startswith("batchenv/")]
    boxed = [env_id for env_id in ids
             if isinstance(gym.make_vec(env_id, num_envs=1).single_action_space, spaces.Box)]
    assert boxed  # MountainCarContinuous and Pendulum at least
    return boxed


@pytest.mark.parametrize("env_id", box_action_envs())
def test_box_actions_that_overflow_the_action_dtype_are_refused(env_id):
    env = gym.make_vec(env_id, num_envs=4)
    env.reset(seed=0)
    before = env.unwrapped.get_state()
    shape = env.action_space.shape
    for big in (1e300, -1e300):
        actions = np.zeros(shape)
        actions[2] = big
        with pytest.raises(ValueError, match=r"overflow the action dtype float32.*\[2\]"):
            env.step(actions)
        with pytest.raises(ValueError, match=r"NaN or inf.*\[1, 2\]"):
            actions[1] = np.nan
            env.step(actions)
    after = env.unwrapped.get_state()
    assert after.tobytes() == before.tobytes()  # nothing stepped
    # finite in float32: clipped, as before; MountainCarContinuous's reward charges the
    # unclipped action (-0.1 a**2, as Gymnasium's), beyond float32's range, so float64
    # rewards hold it
    wide = gym.make_vec(env_id, num_envs=4, reward_dtype=np.float64)
    wide.reset(seed=0)
    _, reward, *_ = wide.step(np.full(shape, 1e30))
    assert reward.dtype == np.float64 and np.isfinite(reward).all()


class IntBoxEnv(BatchEnv):
    """A Box action of dtype int8: actions must fit int8 before the cast."""

    state_dtype = np.dtype([("last", np.int64)])
    single_action_space = spaces.Box(-5, 5, (1,), np.int8)
    single_observation_space = spaces.Box(-5, 5, (1,), np.int64)

    def reset_envs(self, s, rng):
        s.last[:] = 0

    def step_envs(self, s, action, rng):
        s.last[:] = action[:, 0]
        return np.zeros(len(s)), np.zeros(len(s), dtype=bool)

    def observe(self, s, out):
        out[:, 0] = s.last


def test_integer_box_actions_that_do_not_fit_the_dtype_are_refused():
    env = IntBoxEnv(3)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"do not fit the action dtype int8.*\[1\]"):
        env.step(np.array([[0], [300], [1]]))  # would wrap to 44, then clip to 5
    obs, *_ = env.step(np.array([[0], [-9], [1]]))
    np.testing.assert_array_equal(obs[:, 0], [0, -5, 1])  # in range of int8: clipped


# ------------------------------------------------------------------ final_obs entry types
@pytest.mark.parametrize("mode", [AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP])
def test_counter_steps_equal_sync_of_scalar_counters_data_equivalence(mode):
    """Every reset and step result, info included (final_obs entries are Python ints, as
    the single env returns them), is data_equivalence-equal to SyncVectorEnv's."""
    n, max_counts = 3, [2, 3, 4]
    # float64 rewards, as SyncVectorEnv's (data_equivalence compares dtypes)
    ours = CounterEnv(n, max_count=max_counts, autoreset_mode=mode, reward_dtype=np.float64)
    sync = SyncVectorEnv([lambda m=m: ScalarCounter(m) for m in max_counts],
                         autoreset_mode=mode)
    assert data_equivalence(ours.reset(seed=0), sync.reset(seed=0), exact=True)
    rng = np.random.default_rng(0)
    ended = 0
    for _ in range(12):
        actions = rng.integers(0, 5, n)
        result, expected = ours.step(actions), sync.step(actions)
        assert data_equivalence(result, expected, exact=True), (result, expected)
        if "final_obs" in result[4]:
            ended += 1
            assert all(type(x) is int for x in result[4]["final_obs"] if x is not None)
    assert ended >= 3 or mode is AutoresetMode.NEXT_STEP


# ------------------------------------------------------------------ unknown options keys
def test_unknown_options_keys_are_refused_listing_the_accepted_ones():
    env = CounterEnv(3)
    env.reset(seed=0)
    env.step(np.ones(3, dtype=np.int64))
    before = env.get_state()
    with pytest.raises(ValueError, match=r"\['reset_mak'\] \(did you mean 'reset_mask'\?\).*"
                                         r"accepts only the keys \['reset_mask'\]"):
        env.reset(options={"reset_mak": np.ones(3, dtype=bool)})
    with pytest.raises(ValueError, match=r"\['other'\]; .*\['reset_mask'\]"):
        env.reset(options={"reset_mask": np.ones(3, dtype=bool), "other": 1})
    assert env.get_state().tobytes() == before.tobytes()


def test_registered_envs_answer_the_sync_api():
    env = batchenv.make("CartPole-v1", 2)
    env.reset(seed=1)
    assert env.np_random_seed == (1, 2) and env.get_attr("num_envs") == (2, 2)
