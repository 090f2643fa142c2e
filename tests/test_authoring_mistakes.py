"""More mistakes an author makes (issue 23), each as the author wrote it: a step kernel that
draws for every row, per-env state kept on ``self``, arrays sized by ``num_envs``, a reward
computed in uint8, an exception inside a kernel, a small (H, W, 3) uint8 observation."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces

import batchenv
from batchenv.debug import KernelError
from batchenv.testing import ContractError, check_env


class Drifter(batchenv.BatchEnv):
    """The natural first version: every step draws a noise word for *every* row (rows
    awaiting a NEXT_STEP reset too), and a reset draws the start position."""

    state_dtype = np.dtype([("x", np.float64)])
    single_action_space = spaces.Discrete(2)
    single_observation_space = spaces.Box(-100, 100, (1,), np.float64)
    default_max_episode_steps = 7

    def reset_envs(self, s, rng):
        s.x[:] = rng.uniform(-1, 1)

    def step_envs(self, s, action, rng):
        s.x += np.where(action == 1, 1.0, -1.0) * rng.uniform(0, 1)  # every row draws
        np.clip(s.x, -100, 100, out=s.x)
        return -np.abs(s.x), np.abs(s.x) > 5

    def observe(self, s, out):
        out[:, 0] = s.x


def test_a_discarded_step_draws_nothing_auto_reset_equals_masked_reset():
    n = 6
    env, twin = Drifter(n), Drifter(n)
    env.reset(seed=3)
    env.action_space.seed(0)
    pending = np.zeros(n, dtype=bool)
    resets = 0
    for _ in range(40):
        before = env.get_state()
        obs, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if pending.any():
            resets += int(pending.sum())
            twin.set_state(before)
            start, _ = twin.reset(options={"reset_mask": pending})
            # the auto-reset starts where a masked reset from the same state starts: the
            # discarded step's draws were given back
            np.testing.assert_array_equal(obs[pending], start[pending])
            np.testing.assert_array_equal(env.get_state()["rng_counter"][pending],
                                          twin.get_state()["rng_counter"][pending])
        pending = terminated | truncated
    assert resets >= n


def test_a_step_kernel_that_draws_for_every_row_passes_check_env():
    report = check_env(Drifter)
    assert "autoreset_next_step" in report.passed


# ---------------------------------------------------------------------- planted bugs
class Walk(batchenv.BatchEnv):
    """docs/first_env.md's walker: the good env the planted bugs below start from."""

    state_dtype = np.dtype([("x", np.float32), ("v", np.float32)])
    single_action_space = spaces.Discrete(2)
    single_observation_space = spaces.Box(-10, 10, (2,), np.float32)
    default_max_episode_steps = 200

    def reset_envs(self, s, rng):
        s.x[:] = rng.uniform(-1, 1, dtype=np.float32)
        s.v[:] = 0

    def step_envs(self, s, action, rng):
        s.v += np.where(action == 1, 0.5, -0.5).astype(np.float32)
        np.clip(s.v, -1, 1, out=s.v)
        s.x += s.v
        np.clip(s.x, -10, 10, out=s.x)
        return -np.abs(s.x).astype(np.float64), np.abs(s.x) >= 10

    def observe(self, s, out):
        out[:, 0] = s.x
        out[:, 1] = s.v


class TickOnSelf(Walk):
    """The asteroid-move parity kept on self: the walker moves every other step."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._tick = 0

    def step_envs(self, s, action, rng):
        self._tick += 1
        if self._tick % 2:
            return super().step_envs(s, action, rng)
        return -np.abs(s.x).astype(np.float64), np.abs(s.x) >= 10


class Catch(batchenv.BatchEnv):
    """A ball falls for exactly 9 steps: every episode lasts 9 steps, so without masks every
    row ends at the same step (the case that hid the bugs below)."""

    state_dtype = np.dtype([("ball", np.int64), ("paddle", np.int64), ("t", np.int64)])
    single_action_space = spaces.Discrete(3)
    single_observation_space = spaces.Box(0, 9, (3,), np.int64)

    def reset_envs(self, s, rng):
        s.ball[:] = rng.integers(0, 10)
        s.paddle[:] = 5
        s.t[:] = 0

    def step_envs(self, s, action, rng):
        s.paddle[:] = np.clip(s.paddle + action - 1, 0, 9)
        s.t += 1
        over = s.t == 9
        return np.where(over, np.where(s.ball == s.paddle, 1.0, -1.0), 0.0), over

    def observe(self, s, out):
        out[:, 0] = s.ball
        out[:, 1] = s.paddle
        out[:, 2] = s.t


class ObserveSizedByNumEnvs(Catch):
    """observe builds its rows in a buffer of num_envs rows: right on the whole batch, an
    error on the rows whose episode just ended (SAME_STEP's final_obs) unless all did."""

    def observe(self, s, out):
        rows = np.zeros((self.num_envs, 3), dtype=np.int64)
        rows[:, 0] = s.ball
        rows[:, 1] = s.paddle
        rows[:, 2] = s.t
        out[:] = rows


def _failed(env):
    with pytest.raises(ContractError) as e:
        check_env(env)
    return {f.check: f for f in e.value.failures}, e.value


@pytest.mark.parametrize("env, check", [
    (TickOnSelf, "fresh_env_round_trip"),
    (ObserveSizedByNumEnvs, "staggered_episodes"),
])
def test_check_env_catches_state_kept_outside_the_state_at_its_defaults(env, check):
    failed, _ = _failed(env)
    assert check in failed, failed


@pytest.mark.parametrize("env", [Walk, Catch])
def test_good_envs_pass_the_round_trip_and_staggered_checks(env):
    report = check_env(env)
    assert {"fresh_env_round_trip", "staggered_episodes"} <= set(report.passed)


def test_a_kernel_exception_is_chained_and_names_the_authors_line():
    failed, error = _failed(ObserveSizedByNumEnvs)
    f = failed["staggered_episodes"]
    assert f.method == "observe", f
    assert isinstance(f.error, ValueError) and "broadcast" in f.message
    assert f"{__file__}:" in f.message and "in observe: out[:] = rows" in f.message, f.message
    assert "size every array in observe by len(s), not num_envs" in f.hint  # fits the error
    assert isinstance(error.__cause__, ValueError)  # raise ContractError(...) from e


class ForgetsAField(Walk):
    """reset_envs forgets the velocity: a reset row keeps its old v."""

    def reset_envs(self, s, rng):
        s.x[:] = rng.uniform(-1, 1, dtype=np.float32)


def test_a_forgotten_field_gets_a_hint_about_writing_every_field():
    failed, _ = _failed(ForgetsAField)
    f = failed["reset_mask"]
    assert "v at env indices [0]" in f.message, f.message
    assert "write every field of every row" in f.hint
    assert "write only" not in f.hint


class Uint8Reward(Catch):
    """A reward computed in uint8: a miss (-1) would be 255."""

    def step_envs(self, s, action, rng):
        reward, over = super().step_envs(s, action, rng)
        return reward.astype(np.uint8), over


def test_an_unsigned_reward_is_refused_saying_why():
    with pytest.raises(KernelError, match=r"uint8: an unsigned integer cannot hold a "
                                          r"negative reward"):
        env = Uint8Reward(4, debug=True)
        env.reset(seed=0)
        env.step(np.zeros(4, dtype=np.int64))
    failed, _ = _failed(Uint8Reward)
    assert failed["api"].method == "step_envs"


class SignedRewards(Catch):
    def step_envs(self, s, action, rng):
        reward, over = super().step_envs(s, action, rng)
        return reward.astype(np.int8), over


@pytest.mark.parametrize("reward_dtype", [np.float32, np.float64])
def test_signed_integer_rewards_are_stored_in_the_reward_dtype_without_loss(reward_dtype):
    env = SignedRewards(4, debug=True, reward_dtype=reward_dtype)
    env.reset(seed=0)
    rewards = [env.step(np.zeros(4, dtype=np.int64))[1] for _ in range(9)]
    assert rewards[-1].dtype == reward_dtype and set(rewards[-1]) <= {-1.0, 1.0}
    assert "api" in check_env(SignedRewards).passed


class SmallGrid(Catch):
    """A 5x5 board with 3 channels of 0/1: (H, W, 3) uint8, but not an RGB image."""

    single_observation_space = spaces.Box(0, 1, (5, 5, 3), np.uint8)

    def observe(self, s, out):
        out[:] = 0
        out[np.arange(len(s)), s.ball // 2, s.paddle // 2, 0] = 1


def test_a_small_uint8_grid_is_not_treated_as_rgb():
    report = check_env(SmallGrid)
    assert "wrappers" in report.passed
    assert "bounded 0 to 1, so they are not RGB images" in \
        report.skipped["wrapper GrayscaleObservation"]


def test_gymnasiums_own_warnings_from_wrapper_checks_are_not_passed_on(recwarn):
    check_env("batchenv/Pong-v0")  # DtypeObservation and RescaleObservation warn on its Box
    from_gymnasium = [w for w in recwarn if "gymnasium" in w.filename]
    assert not from_gymnasium, [str(w.message) for w in from_gymnasium]


class RecordsObserve(Catch):
    def observe(self, s, out):
        self.sizes.append(len(s))
        super().observe(s, out)


@pytest.mark.parametrize("mode, subsets", [("next_step", []), ("same_step", [1, 3]),
                                           ("disabled", [])])
def test_observe_gets_the_whole_batch_and_in_same_step_the_rows_that_ended(mode, subsets):
    # docs/writing_envs.md: whole batch after every reset and step; in SAME_STEP also a copy
    # of the rows whose episode ended, for final_obs
    from gymnasium.vector import AutoresetMode

    env = RecordsObserve(4, autoreset_mode=AutoresetMode[mode.upper()])
    env.sizes = []
    env.reset(seed=0)
    env.reset(options={"reset_mask": np.array([True, False, False, False])})
    env.step(np.ones(4, dtype=np.int64))  # row 0 is one step behind the others
    env.reset(options={"reset_mask": np.array([False, True, True, True])})
    env.sizes.clear()
    for _ in range(9):  # row 0 ends alone at the 8th step, rows 1-3 at the 9th
        env.step(np.ones(4, dtype=np.int64))
    assert [k for k in env.sizes if k != 4] == subsets
