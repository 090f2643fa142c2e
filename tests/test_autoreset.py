"""The three auto-reset modes, call by call, ported from Gymnasium's
``tests/vector/test_autoreset_mode.py`` onto a batched counter env, plus reset masks and
time limits in each mode. docs/autoreset.md shows the same tables."""

from __future__ import annotations

import numpy as np
import pytest

from batchenv import AutoresetMode
from batchenv.testing import CounterEnv

ACTIONS = np.array([1, 2, 3])


def expect(result, obs, rewards, terminated, truncated=(False, False, False)):
    o, r, te, tr, info = result
    np.testing.assert_array_equal(o, obs)
    np.testing.assert_array_equal(r, rewards)
    np.testing.assert_array_equal(te, terminated)
    np.testing.assert_array_equal(tr, truncated)
    return info


def make(mode, **kwargs):
    env = CounterEnv(3, max_count=[2, 3, 3], autoreset_mode=mode, **kwargs)
    assert env.metadata["autoreset_mode"] == mode
    obs, info = env.reset(seed=0)
    np.testing.assert_array_equal(obs, [0, 0, 0])
    assert info == {}
    return env


def test_next_step_table():
    env = make(AutoresetMode.NEXT_STEP)
    assert expect(env.step(ACTIONS), [1, 1, 1], [1, 2, 3], [False, False, False]) == {}
    assert expect(env.step(ACTIONS), [2, 2, 2], [1, 2, 3], [True, False, False]) == {}
    # env 0 resets: its action is ignored, reward 0, flags False, obs = start obs
    assert expect(env.step(ACTIONS), [0, 3, 3], [0, 2, 3], [False, True, True]) == {}
    assert expect(env.step(ACTIONS), [1, 0, 0], [1, 0, 0], [False, False, False]) == {}


def assert_final(info, final_obs, mask):
    np.testing.assert_array_equal(info["_final_obs"], mask)
    np.testing.assert_array_equal(info["_final_info"], mask)
    assert info["final_info"] == {}
    assert info["final_obs"].dtype == object
    for i, m in enumerate(mask):
        if m:
            assert info["final_obs"][i] == final_obs[i]
        else:
            assert info["final_obs"][i] is None
    assert set(info) == {"final_obs", "_final_obs", "final_info", "_final_info"}


def test_same_step_table():
    env = make(AutoresetMode.SAME_STEP)
    assert expect(env.step(ACTIONS), [1, 1, 1], [1, 2, 3], [False, False, False]) == {}
    info = expect(env.step(ACTIONS), [0, 2, 2], [1, 2, 3], [True, False, False])
    assert_final(info, [2, 0, 0], [True, False, False])
    info = expect(env.step(ACTIONS), [1, 0, 0], [1, 2, 3], [False, True, True])
    assert_final(info, [0, 3, 3], [False, True, True])
    info = expect(env.step(ACTIONS), [0, 1, 1], [1, 2, 3], [True, False, False])
    assert_final(info, [2, 0, 0], [True, False, False])


def test_disabled_table():
    env = make(AutoresetMode.DISABLED)
    assert expect(env.step(ACTIONS), [1, 1, 1], [1, 2, 3], [False, False, False]) == {}
    terminated = np.array([True, False, False])
    expect(env.step(ACTIONS), [2, 2, 2], [1, 2, 3], terminated)
    obs, info = env.reset(options={"reset_mask": terminated})
    np.testing.assert_array_equal(obs, [0, 2, 2])
    assert info == {}
    expect(env.step(ACTIONS), [1, 3, 3], [1, 2, 3], [False, True, True])
    obs, info = env.reset(options={"reset_mask": np.array([False, True, True])})
    np.testing.assert_array_equal(obs, [1, 0, 0])
    expect(env.step(ACTIONS), [2, 1, 1], [1, 2, 3], [True, False, False])


def test_disabled_finished_env_stays_frozen():
    """Beyond Gymnasium (which asserts): stepping a finished env returns its terminal obs,
    reward 0 and False flags, and changes nothing, until a masked reset."""
    env = make(AutoresetMode.DISABLED)
    env.step(ACTIONS)
    expect(env.step(ACTIONS), [2, 2, 2], [1, 2, 3], [True, False, False])
    frozen = env.get_state()[0]
    expect(env.step(ACTIONS), [2, 3, 3], [0, 2, 3], [False, True, True])
    expect(env.step(ACTIONS), [2, 3, 3], [0, 0, 0], [False, False, False])
    expect(env.step(ACTIONS), [2, 3, 3], [0, 0, 0], [False, False, False])
    assert env.get_state()[0] == frozen
    obs, _ = env.reset(options={"reset_mask": np.array([False, True, False])})
    np.testing.assert_array_equal(obs, [2, 0, 3])
    expect(env.step(ACTIONS), [2, 1, 3], [0, 2, 0], [False, False, False])


@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_time_limit_truncates_in_every_mode(mode):
    env = CounterEnv(2, max_count=[10, 2], max_episode_steps=3, autoreset_mode=mode)
    env.reset(seed=1)
    a = np.array([1, 1])
    expect(env.step(a), [1, 1], [1, 1], [False, False], [False, False])
    _, _, te, tr, _ = env.step(a)
    np.testing.assert_array_equal(te, [False, True])
    np.testing.assert_array_equal(tr, [False, False])
    o, _, te, tr, info = env.step(a)
    np.testing.assert_array_equal(tr[0], True)  # env 0 hits the limit on step 3
    assert not te[0]
    if mode is AutoresetMode.SAME_STEP:
        assert info["final_obs"][0] == 3 and o[0] == 0
    else:
        assert o[0] == 3


def test_terminated_and_truncated_on_the_same_step_are_both_reported():
    env = CounterEnv(1, max_count=3, max_episode_steps=3)
    env.reset(seed=0)
    env.step(np.array([0]))
    env.step(np.array([0]))
    _, _, te, tr, _ = env.step(np.array([0]))
    assert te[0] and tr[0]


@pytest.mark.parametrize("mode", list(AutoresetMode))
def test_reset_mask_touches_only_masked_envs(mode):
    env = CounterEnv(4, max_count=100, autoreset_mode=mode)
    env.reset(seed=3)
    for _ in range(5):
        env.step(np.array([1, 1, 1, 1]))
    before = env.get_state()
    mask = np.array([False, True, False, True])
    options = {"reset_mask": mask}
    obs, info = env.reset(options=options)
    assert options == {"reset_mask": mask}, "reset must not mutate the caller's options"
    np.testing.assert_array_equal(obs, [5, 0, 5, 0])
    after = env.get_state()
    np.testing.assert_array_equal(after[~mask], before[~mask])
    np.testing.assert_array_equal(after["elapsed_steps"], [5, 0, 5, 0])
    expect(env.step(np.array([2, 2, 2, 2])), [6, 1, 6, 1], [2, 2, 2, 2],
           [False] * 4, [False] * 4)


def test_next_step_reset_mask_clears_a_pending_autoreset():
    env = CounterEnv(2, max_count=[1, 9])
    env.reset(seed=0)
    expect(env.step(np.array([1, 1])), [1, 1], [1, 1], [True, False], [False, False])
    env.reset(options={"reset_mask": np.array([True, False])})
    # env 0 was reset by the mask: the next step is a normal step, not an auto-reset
    expect(env.step(np.array([4, 4])), [1, 2], [4, 4], [True, False], [False, False])
