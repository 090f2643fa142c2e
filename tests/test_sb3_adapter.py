"""batchenv.adapters.to_sb3: Stable-Baselines3's VecEnv contract, checked against a reference
env stepped from the same snapshots, and SB3's PPO learning BatchCartPole through it."""

from __future__ import annotations

import gymnasium
import gymnasium as gym
import numpy as np
import pytest

# stable-baselines3 is in the `test` extra: a missing install fails here, loudly, instead of
# skipping every test of this module
from _splitmix import key_of, unit, words
from gymnasium.vector import AutoresetMode, VectorWrapper
from gymnasium.wrappers.vector import RecordEpisodeStatistics
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import VecEnv, VecMonitor, VecNormalize

from batchenv import BatchCartPole, BatchPong
from batchenv.adapters import to_sb3

#: (major, minor) of the installed Gymnasium: CI runs the suite on the newest and the oldest
#: supported (.ci/run); where Gymnasium's own behaviour differs, tests expect each's.
GYM_VERSION = tuple(int(x) for x in gymnasium.__version__.split(".")[:2])

MODES = [AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP, AutoresetMode.DISABLED]
X_LIMIT, THETA_LIMIT = 2.4, 12 * 2 * np.pi / 360  # CartPole-v1's termination thresholds


def test_is_an_sb3_vecenv_with_single_env_spaces():
    env = BatchPong(5)
    venv = to_sb3(env)
    assert isinstance(venv, VecEnv)
    assert venv.num_envs == 5
    assert venv.observation_space == env.single_observation_space
    assert venv.action_space == env.single_action_space
    assert venv.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    with pytest.raises(TypeError, match="VectorEnv"):
        to_sb3(gym.make("CartPole-v1"))


@pytest.mark.parametrize("mode", MODES)
def test_reset_returns_observations_only_seeded_like_gymnasium(mode):
    venv = to_sb3(BatchCartPole(4, autoreset_mode=mode))
    assert venv.seed(7) == [7, 8, 9, 10]
    obs = venv.reset()
    assert isinstance(obs, np.ndarray) and obs.shape == (4, 4) and obs.dtype == np.float32
    # env i seeded 7 + i: CartPole's documented start state, each variable uniform in
    # [-0.05, 0.05) from the first four draws of seed 7 + i's stream (tests/_splitmix.py)
    expected = np.array([[np.float32(unit(w) * 0.1 - 0.05) for w in words(key_of(7 + i), 0, 4)]
                         for i in range(4)], dtype=np.float32)
    np.testing.assert_array_equal(obs, expected)
    assert len(venv.reset_infos) == 4
    again = venv.reset()  # seeds are used once: the streams go on
    assert not np.array_equal(again, obs)
    venv.seed(7)
    np.testing.assert_array_equal(venv.reset(), expected)


@pytest.mark.parametrize("copy", [True, False])
@pytest.mark.parametrize("mode", MODES)
def test_step_contract_and_terminal_observation_is_the_true_final_obs(mode, copy):
    """Every step, a reference env restored from a snapshot of the adapted env takes the
    same actions without auto-reset: its observations are the true next observations."""
    n, limit = 8, 30
    env = BatchCartPole(n, autoreset_mode=mode, copy=copy, max_episode_steps=limit)
    reference = BatchCartPole(n, autoreset_mode=AutoresetMode.DISABLED,
                              max_episode_steps=limit)
    venv = to_sb3(env)
    venv.seed(0)
    obs = venv.reset()
    rng = np.random.default_rng(0)
    terminated_seen = truncated_seen = 0
    for _ in range(250):
        actions = rng.integers(0, 2, n)
        reference.set_state(env.get_state())
        true_next, _, ref_term, ref_trunc, _ = reference.step(actions)
        previous = obs
        previous_copy = obs.copy()

        obs, rewards, dones, infos = venv.step(actions)

        assert obs.shape == (n, 4) and obs.dtype == np.float32
        assert rewards.shape == (n,) and rewards.dtype == np.float32
        assert dones.shape == (n,) and dones.dtype == np.bool_
        assert isinstance(infos, list) and len(infos) == n
        assert len({id(info) for info in infos}) == n  # one dict per env
        np.testing.assert_array_equal(previous, previous_copy)  # returned arrays are ours
        np.testing.assert_array_equal(rewards, 1.0)
        np.testing.assert_array_equal(dones, ref_term | ref_trunc)
        live = ~dones
        np.testing.assert_array_equal(obs[live], true_next[live])
        for i in np.flatnonzero(live):
            assert "terminal_observation" not in infos[i]
        for i in np.flatnonzero(dones):
            final = infos[i]["terminal_observation"]
            np.testing.assert_array_equal(final, true_next[i])
            assert infos[i]["TimeLimit.truncated"] == bool(ref_trunc[i] and not ref_term[i])
            if ref_term[i]:  # the pole fell or the cart left: the final state shows it
                terminated_seen += 1
                assert abs(final[0]) > X_LIMIT or abs(final[2]) > THETA_LIMIT
            else:
                truncated_seen += 1
            # and the returned observation starts the next episode
            assert np.all(np.abs(obs[i]) <= 0.05)
    assert terminated_seen > 10 and truncated_seen > 0


@pytest.mark.parametrize("mode", MODES)
def test_time_limit_truncated_only_when_not_terminated(mode):
    """An episode that terminates on its last allowed step is not a time-limit end."""
    env = BatchCartPole(2, autoreset_mode=mode, max_episode_steps=1)
    venv = to_sb3(env)
    venv.reset()
    state = env.get_state()
    state["theta"] = [0.2, 0.0]  # env 0 falls in this step, env 1 stays up
    state["theta_dot"] = [2.0, 0.0]
    env.set_state(state)
    _, _, dones, infos = venv.step(np.array([0, 0]))
    assert dones.tolist() == [True, True]
    assert [info["TimeLimit.truncated"] for info in infos] == [False, True]


def test_episode_statistics_reach_sb3_like_monitor_infos():
    venv = to_sb3(RecordEpisodeStatistics(BatchCartPole(6, autoreset_mode="SameStep")))
    venv.seed(1)
    venv.reset()
    lengths = np.zeros(6, dtype=int)
    ended = 0
    # Gymnasium < 1.4's wrapper ignores the auto-reset mode: in SAME_STEP it drops the first
    # step of every episode after an env's first (docs/integrations.md, Gymnasium versions)
    lost = np.zeros(6, dtype=int)
    for _ in range(100):
        _, _, dones, infos = venv.step(np.ones(6, dtype=np.int64))  # always push right
        lengths += 1
        for i in np.flatnonzero(dones):
            ended += 1
            assert infos[i]["episode"]["l"] == lengths[i] - lost[i]
            assert infos[i]["episode"]["r"] == lengths[i] - lost[i]  # +1 per step
            lengths[i] = 0
            lost[i] = GYM_VERSION < (1, 4)
    assert ended >= 6
    # SB3's own VecMonitor reads the same episodes
    monitored = VecMonitor(to_sb3(BatchCartPole(3)))
    monitored.reset()
    infos = []
    while not any("episode" in info for info in infos):
        _, _, _, infos = monitored.step(np.zeros(3, dtype=np.int64))
    assert all(info["episode"]["r"] > 0 for info in infos if "episode" in info)


def test_get_attr_set_attr_env_method_env_is_wrapped():
    env = BatchCartPole(4, max_episode_steps=500)
    venv = to_sb3(RecordEpisodeStatistics(env))
    venv.reset()
    assert venv.get_attr("num_envs") == [4, 4, 4, 4]
    assert venv.get_attr("max_episode_steps", indices=[1, 3]) == [500, 500]  # inner env's
    assert venv.get_attr("render_mode", indices=2) == [None]
    assert venv.has_attr("get_state") and not venv.has_attr("no_such_attribute")
    with pytest.raises(AttributeError):
        venv.get_attr("no_such_attribute")

    states = venv.env_method("get_state")
    assert len(states) == 4 and states[0].shape == (4,)
    np.testing.assert_array_equal(states[0], env.get_state())
    assert len(venv.env_method("get_state", indices=[2])) == 1

    venv.set_attr("max_episode_steps", 3)
    assert env.max_episode_steps == 3
    for _ in range(3):
        _, _, dones, infos = venv.step(np.array([0, 1, 0, 1]))
    assert dones.all() and all(info["TimeLimit.truncated"] for info in infos)
    with pytest.raises(ValueError, match="indices=None"):
        venv.set_attr("max_episode_steps", 9, indices=[0])

    assert venv.env_is_wrapped(RecordEpisodeStatistics) == [True] * 4
    assert venv.env_is_wrapped(Monitor, indices=[0]) == [False]
    assert to_sb3(env).env_is_wrapped(RecordEpisodeStatistics) == [False] * 4


def test_render_tiles_one_frame_per_env():
    venv = to_sb3(BatchPong(4, render_mode="rgb_array"))
    venv.reset()
    frames = venv.get_images()
    assert len(frames) == 4
    height, width, _ = frames[0].shape
    image = venv.render("rgb_array")
    assert image.shape == (2 * height, 2 * width, 3) and image.dtype == np.uint8
    with pytest.warns(UserWarning, match="render_mode"):
        assert to_sb3(BatchPong(2)).render() is None  # no render_mode: SB3 warns, None


def test_works_under_sb3_wrappers_and_column_actions():
    venv = VecNormalize(to_sb3(BatchCartPole(4, autoreset_mode="SameStep")))
    obs = venv.reset()
    assert obs.shape == (4, 4)
    seen_terminal = False
    for _ in range(60):
        obs, _, dones, infos = venv.step(np.zeros((4, 1), dtype=np.int64))  # (n, 1) actions
        for i in np.flatnonzero(dones):
            seen_terminal = True
            assert infos[i]["terminal_observation"].shape == (4,)
    assert seen_terminal


def test_gymnasium_sync_vector_env_next_step():
    """The adapter is not batchenv-specific: Gymnasium's SyncVectorEnv (NEXT_STEP)."""
    venv = to_sb3(gym.make_vec("CartPole-v1", num_envs=3, vectorization_mode="sync"))
    venv.seed(5)
    venv.reset()
    done_count = 0
    for _ in range(80):
        obs, _, dones, infos = venv.step(np.ones(3, dtype=np.int64))
        for i in np.flatnonzero(dones):
            done_count += 1
            final = infos[i]["terminal_observation"]
            assert abs(final[0]) > X_LIMIT or abs(final[2]) > THETA_LIMIT
            assert np.all(np.abs(obs[i]) <= 0.05)
    assert done_count >= 3


@pytest.mark.slow  # a learning run
def test_sb3_ppo_learns_batch_cartpole():
    import torch
    from stable_baselines3 import PPO
    from stable_baselines3.common.evaluation import evaluate_policy

    torch.set_num_threads(1)

    def eval_env():
        venv = VecMonitor(to_sb3(BatchCartPole(16, autoreset_mode="SameStep")))
        venv.seed(10_000)
        return venv

    model = PPO("MlpPolicy", VecMonitor(to_sb3(BatchCartPole(16, autoreset_mode="SameStep"))),
                n_steps=64, batch_size=256, n_epochs=10, learning_rate=1e-3, gamma=0.98,
                gae_lambda=0.8, seed=0, device="cpu")
    # the untrained policy as it acts in training (sampled): a deterministic untrained
    # policy can balance by luck (its greedy action may follow the pole's angular velocity)
    before, _ = evaluate_policy(model, eval_env(), n_eval_episodes=32, deterministic=False)

    # a random policy, for scale: CartPole-v1 lasts about 22 steps
    random_env = eval_env()
    random_env.reset()
    rng = np.random.default_rng(0)
    random_returns: list[float] = []
    while len(random_returns) < 32:
        _, _, _, infos = random_env.step(rng.integers(0, 2, 16))
        random_returns += [info["episode"]["r"] for info in infos if "episode" in info]
    random_mean = float(np.mean(random_returns))
    assert 10 < random_mean < 40

    model.learn(total_timesteps=20_000)
    after, _ = evaluate_policy(model, eval_env(), n_eval_episodes=32)
    assert after > 200 and after > 5 * random_mean and after > before + 100, (
        before, after, random_mean)


# ---------------------------------------------------------------- SB3's image pipeline
class _Recorder(VectorWrapper):
    """Keeps what the env returned last (the observations SB3 must see next) and the final
    observation of every env whose episode ended at the last step: the oracle for what the
    adapter and SB3's wrappers hand the policy."""

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        self.last = np.array(obs)
        return obs, info

    def step(self, actions):
        obs, reward, terminated, truncated, info = self.env.step(actions)
        self.last = np.array(obs)
        done = np.flatnonzero(terminated | truncated)
        same_step = self.env.metadata["autoreset_mode"] is AutoresetMode.SAME_STEP
        self.final = {int(i): np.array(info["final_obs"][i] if same_step else obs[i])
                      for i in done}
        self.time_limit = truncated & ~terminated
        return obs, reward, terminated, truncated, info


@pytest.mark.parametrize(("mode", "channel_axis"), [(mode, None) for mode in MODES]
                         + [(AutoresetMode.SAME_STEP, "last")])
def test_sb3_ppo_cnn_policy_on_stacked_pong_pixels(mode, channel_axis):
    """The client's pipeline: VecTransposeImage(VecFrameStack(to_sb3(BatchPong(pixels)), 4))
    under PPO's CnnPolicy, in every auto-reset mode. At every step the policy's observation
    is (4, 84, 84) with the env's latest frame in the last channel, a finished episode's
    terminal_observation ends with the env's true final frame, and the rollout buffer holds
    the frames the policy was given."""
    import torch  # in the `test` extra (through `sb3`): no skip
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.torch_layers import NatureCNN
    from stable_baselines3.common.vec_env import VecFrameStack, VecTransposeImage

    torch.set_num_threads(1)
    n, n_steps = 2, 48
    layout = {} if channel_axis is None else {"channel_axis": channel_axis}  # None: the
    recorder = _Recorder(BatchPong(n, obs_type="pixels", autoreset_mode=mode,  # client's
                                   points_to_win=1, max_episode_steps=40, **layout))  # call
    venv = VecTransposeImage(VecFrameStack(to_sb3(recorder), 4))
    assert venv.observation_space == gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
    venv.seed(3)

    class Check(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.seen: list[np.ndarray] = []
            self.ends = 0

        def _on_step(self) -> bool:
            new_obs, infos = self.locals["new_obs"], self.locals["infos"]
            assert new_obs.shape == (n, 4, 84, 84) and new_obs.dtype == np.uint8
            np.testing.assert_array_equal(new_obs[:, -1], recorder.last.reshape(n, 84, 84))
            done = np.flatnonzero(self.locals["dones"])
            assert sorted(recorder.final) == done.tolist()
            for i in done:
                terminal = infos[i]["terminal_observation"]
                assert terminal.shape == (4, 84, 84)
                np.testing.assert_array_equal(terminal[-1], recorder.final[i].reshape(84, 84))
                assert infos[i]["TimeLimit.truncated"] == recorder.time_limit[i]
                self.ends += 1
            self.seen.append(new_obs.copy())
            return True

    check = Check()
    model = PPO("CnnPolicy", venv, n_steps=n_steps, batch_size=48, n_epochs=1, seed=0,
                device="cpu")
    assert isinstance(model.policy.features_extractor, NatureCNN)
    model.learn(total_timesteps=3 * n * n_steps, callback=check)
    assert len(check.seen) == 3 * n_steps
    assert check.ends >= 2  # episodes ended (40-step limit, 1-point games)
    # the rollout buffer's observation t + 1 is what the policy got after step t
    stored = model.rollout_buffer.observations  # flattened env-major by the update
    stored = stored.reshape(n, n_steps, 4, 84, 84).swapaxes(0, 1)
    np.testing.assert_array_equal(stored[1:], np.stack(check.seen[-n_steps:-1]))


def test_channel_first_pong_pixels_stack_without_transposing():
    """EnvPool's layout: (1, 84, 84) frames stack channel-first to (4, 84, 84), which PPO's
    CnnPolicy takes without VecTransposeImage."""
    from stable_baselines3.common.preprocessing import is_image_space
    from stable_baselines3.common.vec_env import VecFrameStack

    env = BatchPong(2, obs_type="pixels", channel_axis="first")
    assert to_sb3(env).observation_space.shape == (1, 84, 84)
    stacked = VecFrameStack(to_sb3(env), 4)
    assert stacked.observation_space.shape == (4, 84, 84)
    assert is_image_space(stacked.observation_space, check_channels=False)
    stacked.seed(0)
    obs = stacked.reset()
    frame, _ = BatchPong(2, obs_type="pixels").reset(seed=0)
    np.testing.assert_array_equal(obs[:, -1], frame)


def test_grayscale_images_get_a_channel_axis_only_when_asked_and_only_images():
    pixels = BatchPong(2, obs_type="pixels")
    assert to_sb3(pixels).observation_space.shape == (84, 84, 1)
    assert to_sb3(pixels, add_channel_axis=False).observation_space.shape == (84, 84)
    assert to_sb3(BatchPong(2, obs_type="tiles")).observation_space.shape == (30, 40)  # 0..2
    venv = to_sb3(pixels)
    venv.seed(1)
    obs = venv.reset()
    expected, _ = BatchPong(2, obs_type="pixels").reset(seed=1)
    np.testing.assert_array_equal(obs, expected[..., None])
