"""``batchenv.envpool``: EnvPool's Python API, as CleanRL's ``ppo_atari_envpool.py`` uses it
(``make(..., env_type="gym")``, ``reset() -> obs``, a 4-value ``step``, ``info["reward"]``,
``info["terminated"]``, ``info["lives"]``, single-env spaces), as the Gymnasium type gives it
(``async_reset``/``send``/``recv``), ``batch_size < num_envs``, and the options it refuses.
Each result is checked against a plain BatchPong / BatchCartPole stepped alike, with the
frames stacked as EnvPool's Atari env stacks them (``atari_env.h``, ``PushStack``)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import batchenv.envpool as envpool
from batchenv import BatchCartPole, BatchPong

N = 4


def stacked(frames: list[np.ndarray], fresh: np.ndarray | None, frame: np.ndarray, k: int
            ) -> list[np.ndarray]:
    """EnvPool's frame stack after one frame: all ``k`` slots the frame for envs that start
    an episode (``fresh``; None: all), else the oldest dropped and the frame appended."""
    if fresh is None:
        return [frame.copy() for _ in range(k)]
    out = [*frames[1:], frame.copy()]
    for j in range(k):
        out[j][fresh] = frame[fresh]
    return out


def actions_at(t: int, n: int = N) -> np.ndarray:
    return (np.arange(n) + t) % 3


def test_cleanrl_surface_gym_type_equals_batchpong_with_envpools_atari_processing():
    """``ppo_atari_envpool.py``'s calls, step by step against a BatchPong with the same
    seeds and actions: stacked pixels, 4-value step, done = terminated | truncated,
    auto-reset the step after done (reward 0, done False), info's Atari keys."""
    env = envpool.make("Pong-v5", env_type="gym", num_envs=N, episodic_life=True,
                       reward_clip=True, seed=3, points_to_win=1, max_episode_steps=60)
    env.num_envs = N  # the script sets these three attributes
    env.single_action_space = env.action_space
    env.single_observation_space = env.observation_space
    assert env.single_observation_space.shape == (4, 84, 84)
    assert env.single_observation_space.dtype == np.uint8
    assert env.single_action_space.n == 3  # BatchPong's NOOP, UP, DOWN
    plain = BatchPong(N, obs_type="pixels", points_to_win=1, max_episode_steps=60)

    obs = env.reset()
    frame, _ = plain.reset(seed=3)  # env i seeded 3 + i on both sides
    frames = stacked([], None, frame, 4)
    assert isinstance(obs, np.ndarray) and obs.shape == (N, 4, 84, 84)
    np.testing.assert_array_equal(obs, np.stack(frames, axis=1))
    was_done = np.zeros(N, dtype=bool)
    elapsed = np.zeros(N, dtype=np.int32)
    seen = {"done": 0, "truncated": 0, "fresh": 0}
    for t in range(150):
        a = actions_at(t)
        obs, reward, done, info = env.step(a)
        frame, r, te, tr, _ = plain.step(a)
        frames = stacked(frames, was_done, frame, 4)
        np.testing.assert_array_equal(obs, np.stack(frames, axis=1), err_msg=f"step {t}")
        assert obs.shape == (N, 4, 84, 84) and env.observation_space.contains(obs[0])
        np.testing.assert_array_equal(reward, np.sign(r))
        assert reward.dtype == np.float32
        np.testing.assert_array_equal(done, te | tr)
        np.testing.assert_array_equal(info["TimeLimit.truncated"], tr)
        np.testing.assert_array_equal(info["terminated"], te.astype(np.int32))
        np.testing.assert_array_equal(info["reward"], r)
        assert info["reward"].dtype == np.float32 and info["terminated"].dtype == np.int32
        np.testing.assert_array_equal(info["lives"], np.zeros(N, np.int32))  # no lives
        elapsed = np.where(was_done, 0, elapsed + 1)
        np.testing.assert_array_equal(info["elapsed_step"], elapsed)
        np.testing.assert_array_equal(info["env_id"], np.arange(N))
        np.testing.assert_array_equal(info["players"]["env_id"], np.arange(N))
        if was_done.any():  # the auto-reset step: the action ignored
            assert not reward[was_done].any() and not done[was_done].any()
            seen["fresh"] += 1
        seen["done"] += int(done.any())
        seen["truncated"] += int(tr.any())
        was_done = done
    assert seen["done"] and seen["truncated"] and seen["fresh"]
    env.close()


class ScaledPong(BatchPong):
    """BatchPong whose points are worth 2.5 (for ``reward_clip``: Pong's rewards are +-1
    already)."""

    def step_envs(self, s, action, rng):
        reward, terminated = super().step_envs(s, action, rng)
        return 2.5 * reward, terminated


@pytest.mark.parametrize("clip", [True, False])
def test_reward_clip_gives_the_sign_and_info_reward_the_raw_reward(monkeypatch, clip):
    monkeypatch.setitem(envpool._ATARI_TASKS, "Scaled-v5",
                        (ScaledPong, envpool._ATARI_TASKS["Pong-v5"][1], 27000))
    env = envpool.make_gymnasium("Scaled-v5", num_envs=N, reward_clip=clip, points_to_win=2)
    env.reset()
    scored = 0
    for t in range(200):
        _, reward, _, _, info = env.step(actions_at(t))
        assert set(np.abs(info["reward"])) <= {0.0, 2.5}
        np.testing.assert_array_equal(reward, np.sign(info["reward"]) if clip else
                                      info["reward"])
        scored += np.count_nonzero(info["reward"])
    assert scored


def test_gymnasium_type_async_loop_equals_step_and_flags_are_envpools():
    """``async_reset``/``recv``/``send`` (the Gymnasium type): the reset observations with
    zero rewards first, then each ``send``'s step, equal to ``step``'s results;
    ``terminated`` and ``truncated`` never both True (EnvPool: terminated = done & ~trunc)."""
    kw = {"num_envs": N, "seed": 7, "points_to_win": 1, "max_episode_steps": 40}
    a_env = envpool.make("Pong-v5", env_type="gymnasium", **kw)
    s_env = envpool.make_gymnasium("Pong-v5", **kw)
    assert isinstance(a_env, gym.Env) and not a_env.is_async
    first, info = s_env.reset()
    assert set(info) == {"env_id", "players", "elapsed_step", "lives", "reward", "terminated"}
    a_env.async_reset()
    obs, reward, terminated, truncated, info = a_env.recv()
    np.testing.assert_array_equal(obs, first)
    assert not reward.any() and not terminated.any() and not truncated.any()
    both = 0
    for t in range(120):
        a_env.send(actions_at(t), info["env_id"])
        got = a_env.recv()
        info = got[4]
        want = s_env.step(actions_at(t))
        for x, y in zip(got[:4], want[:4]):
            np.testing.assert_array_equal(x, y)
        assert not (got[2] & got[3]).any()
        both += int((want[4]["terminated"].astype(bool) & got[3]).any())
    with pytest.raises(ValueError, match="recv"):
        a_env.recv()  # nothing sent


def test_dict_actions_and_partial_reset():
    env = envpool.make_gymnasium("Pong-v5", num_envs=N, seed=1)
    obs, _ = env.reset()
    env.send({"action": np.ones(N, np.int32), "env_id": np.arange(N, dtype=np.int32)})
    stepped = env.recv()[0]
    assert not np.array_equal(stepped[:, :3], stepped[:, 1:])  # frames pushed
    again, info = env.reset(np.array([2, 0]))
    assert again.shape == (2, 4, 84, 84)
    np.testing.assert_array_equal(info["env_id"], [2, 0])
    np.testing.assert_array_equal(info["elapsed_step"], [0, 0])
    np.testing.assert_array_equal(again[:, 0], again[:, 3])  # a fresh stack
    _, _, _, _, info = env.step(np.zeros(N, np.int64))
    np.testing.assert_array_equal(info["elapsed_step"], [1, 2, 1, 2])


def test_async_mode_groups_equal_the_synchronous_pool_env_by_env():
    """batch_size=2 of 4: recv returns the group that waited longest (0, 1, 0, 1, ...);
    each env sees the same calls as in the synchronous pool, so the same results."""
    sync = envpool.make_gymnasium("CartPole-v1", num_envs=N, seed=5)
    pool = envpool.make_gymnasium("CartPole-v1", num_envs=N, batch_size=2, seed=5)
    assert pool.is_async and len(pool) == N
    with pytest.raises(ValueError, match="asynchronous"):
        pool.reset()
    expected = [sync.reset()[0]]
    for t in range(30):
        expected.append(sync.step(actions_at(t) % 2)[0])
    pool.async_reset()
    steps = np.zeros(N, dtype=int)
    order = []
    for _ in range(2 * 31):
        obs, reward, terminated, truncated, info = pool.recv()
        ids = info["env_id"]
        order.append(ids[0] // 2)
        np.testing.assert_array_equal(obs, expected[steps[ids[0]]][ids])
        if steps[ids[0]] < 30:
            pool.send(actions_at(steps[ids[0]])[ids] % 2, ids)
            steps[ids] += 1
    assert order[:6] == [0, 1, 0, 1, 0, 1]


def test_async_send_refusals_change_nothing():
    pool = envpool.make_gymnasium("CartPole-v1", num_envs=6, batch_size=2, seed=0)
    pool.async_reset()
    _, _, _, _, info = pool.recv()
    with pytest.raises(ValueError, match="whole groups of batch_size=2"):
        pool.send(np.zeros(1, np.int64), np.array([0]))
    with pytest.raises(ValueError, match="sent already and not received"):
        pool.send(np.zeros(2, np.int64), np.array([2, 3]))  # ready, not received
    with pytest.raises(ValueError, match=r"actions out of range"):
        pool.send(np.array([0, 5]), info["env_id"])
    pool.send(np.zeros(2, np.int64), info["env_id"][::-1])  # any order of a group's ids
    ids = [pool.recv()[4]["env_id"].tolist() for _ in range(3)]
    assert ids == [[2, 3], [4, 5], [0, 1]]
    with pytest.raises(ValueError, match="must divide num_envs"):
        envpool.make_gymnasium("CartPole-v1", num_envs=5, batch_size=2)


def test_classic_control_task_is_the_batched_env_with_envpools_common_info():
    env = envpool.make_gymnasium("CartPole-v1", num_envs=3, seed=[4, 9, 2])
    obs, info = env.reset()
    want = BatchCartPole(3).reset(seed=[4, 9, 2])[0]
    np.testing.assert_array_equal(obs, want)
    assert set(info) == {"env_id", "players", "elapsed_step"}
    _, reward, *_ = env.step(np.ones(3, np.int64))
    assert reward.dtype == np.float32
    assert env.spec.config.max_episode_steps == 500  # CartPole-v1's, as EnvPool's
    assert env.config["num_envs"] == 3 and env.all_env_ids.dtype == np.int32
    minatar = envpool.make_gymnasium("batchenv/MinAtar-Breakout-v1", num_envs=2)
    assert minatar.observation_space.shape == (10, 10, 4)


def test_make_spec_and_list_all_envs():
    spec = envpool.make_spec("Pong-v5", stack_num=2, img_height=42, img_width=42)
    assert spec.observation_space.shape == (2, 42, 42) and spec.action_space.n == 3
    assert spec.config.stack_num == 2 and spec.config.episodic_life is False
    ids = envpool.list_all_envs()
    assert {"Pong-v5", "CartPole-v1", "MinAtar/Breakout-v1", "batchenv/Pong-v0"} <= set(ids)
    for task in ("CartPole-v1", "MinAtar/Breakout-v1"):
        assert envpool.make_spec(task).config.num_envs == 1


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"frame_skip": 1}, "frame_skip=1 cannot be honoured"),
    ({"noop_max": 0}, "noop_max=0 cannot be honoured"),
    ({"gray_scale": False}, "gray_scale=False cannot be honoured"),
    ({"full_action_space": True}, "full_action_space"),
    ({"max_num_players": 2}, "max_num_players must be 1"),
    ({"render_mode": "rgb_array"}, "render_mode: rendering"),
    ({"obs_type": "state"}, "set by the task id"),
    ({"batch_size": 5}, r"batch_size must be an int in \[0, num_envs=4\]"),
    ({"num_envs": 0}, "num_envs must be an int >= 1"),
    ({"seed": [1, 2]}, "seed as a sequence must have num_envs=4"),
    ({"stack_num": 0}, "stack_num must be an int >= 1"),
    ({"autoreset_mode": "SameStep"}, "autoreset_mode is EnvPool's to set"),
])
def test_options_that_cannot_be_honoured_are_refused_by_name(kwargs, match):
    with pytest.raises(ValueError, match=match):
        envpool.make("Pong-v5", env_type="gymnasium", **{"num_envs": N, **kwargs})


def test_other_refusals():
    with pytest.raises(ValueError, match="dm_env's API is not provided"):
        envpool.make("Pong-v5", env_type="dm")
    with pytest.raises(ValueError, match="dm_env"):
        envpool.make_dm("Pong-v5")
    with pytest.raises(ValueError, match="Breakout-v5.*list_all_envs"):
        envpool.make_gym("Breakout-v5")
    with pytest.raises(ValueError, match="reward_clip"):  # Atari options on CartPole
        envpool.make_gymnasium("CartPole-v1", reward_clip=True)
    with pytest.raises(TypeError):  # the class refuses what it does not know
        envpool.make_gymnasium("Pong-v5", points_to_wn=3)
    env = envpool.make_gymnasium("Pong-v5")
    with pytest.raises(NotImplementedError, match="xla"):
        env.xla()
    with pytest.raises(ValueError, match="before reset"):
        env.send(np.zeros(1, np.int64))
    with pytest.warns(UserWarning, match="abandoned"):
        env.seed(3)


@pytest.mark.gym
def test_gym_type_gives_gym_spaces_and_takes_a_gym_wrapper():
    """With gym < 0.26 installed (CleanRL pins 0.23.1): gym's spaces, a ``gym.Env``, and
    a ``gym.Wrapper`` subclass as the script's ``RecordEpisodeStatistics`` works on it."""
    gym_ = pytest.importorskip("gym")

    class Returns(gym_.Wrapper):
        def reset(self, **kwargs):
            self.total = np.zeros(N, np.float32)
            return super().reset(**kwargs)

        def step(self, action):
            obs, reward, done, info = super().step(action)
            self.total += info["reward"]
            info["r"] = self.total.copy()
            self.total *= 1 - info["terminated"]
            return obs, reward, done, info

    env = envpool.make("Pong-v5", env_type="gym", num_envs=N, episodic_life=True,
                       reward_clip=True, seed=1, points_to_win=1)
    assert isinstance(env, gym_.Env)
    assert isinstance(env.action_space, gym_.spaces.Discrete) and env.action_space.n == 3
    assert isinstance(env.observation_space, gym_.spaces.Box)
    wrapped = Returns(env)
    obs = wrapped.reset()
    assert obs.shape == (N, 4, 84, 84)
    finished = []
    for t in range(300):
        obs, reward, done, info = wrapped.step(actions_at(t))
        finished += info["r"][done & (info["lives"] == 0)].tolist()
    assert finished and set(finished) <= {-1.0, 1.0}  # one point per game
    wrapped.close()
