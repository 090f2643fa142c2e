"""Writing an env: each ordinary mistake, as a small env, is caught by ``check_env``,
``debug=True`` or an always-on check, with a message naming the method; good envs (a
README-style env, an array-valued field, continuous actions under each Box bound policy)
pass ``check_env``."""

from __future__ import annotations

import pickle

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

import batchenv
from batchenv.debug import KernelError
from batchenv.testing import ContractError, check_env, contract_checks


# ---------------------------------------------------------------------- good envs
class Walk(batchenv.BatchEnv):
    """A README-style env: a walker on [-10, 10] pushed left or right; the episode ends at a
    wall."""

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
        out[:, 0], out[:, 1] = s.x, s.v


class Trail(batchenv.BatchEnv):
    """An array-valued field: each env keeps its last 4 positions in a ring buffer (a field
    of shape (4,)) and observes them, oldest first."""

    K = 4
    state_dtype = np.dtype([("pos", np.int8), ("trail", np.int8, (4,)), ("head", np.int8)])
    single_action_space = spaces.Discrete(3)  # left, stay, right
    single_observation_space = spaces.Box(-5, 5, (4,), np.int8)

    def reset_envs(self, s, rng):
        s.pos[:] = rng.integers(-2, 3)
        s.trail[:] = s.pos[:, None]
        s.head[:] = 0

    def step_envs(self, s, action, rng):
        s.pos += (action - 1).astype(np.int8)
        np.clip(s.pos, -5, 5, out=s.pos)
        s.head += 1
        s.head %= self.K
        s.trail[np.arange(len(s)), s.head] = s.pos
        return (s.pos == 5).astype(np.float64), s.pos == 5

    def observe(self, s, out):
        oldest = (s.head + 1)[:, None] + np.arange(self.K)
        out[:] = np.take_along_axis(s.trail, oldest % self.K, axis=1)


class PointMass(batchenv.BatchEnv):
    """Continuous actions: a force in [-1, 1]^2 moves a point in a box; the bound policy is
    a class attribute (its subclasses set "raise" and "pass")."""

    state_dtype = np.dtype([("p", np.float64, (2,)), ("v", np.float64, (2,))])
    single_action_space = spaces.Box(-1, 1, (2,), np.float32)
    single_observation_space = spaces.Box(-2, 2, (4,), np.float32)
    default_max_episode_steps = 50

    def reset_envs(self, s, rng):
        s.p[:] = rng.uniform(-1, 1, (2,))
        s.v[:] = 0

    def step_envs(self, s, action, rng):
        force = np.clip(action, -1, 1) if self.box_action_bounds == "pass" else action
        s.v *= 0.9
        s.v += 0.1 * force
        s.p += 0.1 * s.v
        np.clip(s.p, -2, 2, out=s.p)
        return -np.linalg.norm(s.p, axis=1), np.zeros(len(s), dtype=bool)

    def observe(self, s, out):
        out[:, :2] = s.p
        out[:, 2:] = np.clip(s.v, -2, 2)


class PointMassRaise(PointMass):
    box_action_bounds = "raise"


class PointMassPass(PointMass):
    box_action_bounds = "pass"  # the kernel applies its own rule (a clip, here)


@pytest.mark.parametrize("env", [Walk, Trail, PointMass, PointMassRaise, PointMassPass])
def test_good_envs_pass_check_env(env):
    report = check_env(env)
    box = isinstance(env.single_action_space, spaces.Box)
    assert ("box_action_bounds" in report.passed) == box
    assert ("box_action_bounds" in report.skipped) == (not box)
    assert env.__name__ in str(report)


def test_check_env_accepts_a_factory_and_a_registered_id():
    assert check_env(lambda n: gym.wrappers.vector.RecordEpisodeStatistics(Walk(n)), steps=40)
    gym.register("authoring/Walk-v0", vector_entry_point=Walk, max_episode_steps=100)
    try:
        assert check_env("authoring/Walk-v0", steps=40)
        env = batchenv.make("authoring/Walk-v0", 3)
        assert type(env) is Walk and env.num_envs == 3 and env.max_episode_steps == 100
    finally:
        gym.registry.pop("authoring/Walk-v0")


def test_check_env_refuses_an_instance():
    with pytest.raises(TypeError, match="not an instance"):
        check_env(Walk(4))


def test_check_env_names_an_unknown_id_once():
    # one clear error, not every check failing with the registry's message
    with pytest.raises(ValueError, match=r"env: 'authoring/Nope-v0' is not a registered id"):
        check_env("authoring/Nope-v0")


# ---------------------------------------------------------------------- mistakes
class ObserveReturns(Walk):
    def observe(self, s, out):
        return np.stack([s.x, s.v], axis=1)


class NegativeIntoUint8(Walk):
    single_observation_space = spaces.Box(0, 255, (2,), np.uint8)

    def observe(self, s, out):
        out[:, 0] = s.x * 10  # negative half the time: wraps to 2xx
        out[:, 1] = 0


class ScalarReward(Walk):
    def step_envs(self, s, action, rng):
        _, terminated = super().step_envs(s, action, rng)
        return -1.0, terminated


class SpaceTooWide(Walk):
    single_observation_space = spaces.Box(-10, 10, (3,), np.float32)  # observe writes 2


class WritesSelfState(Walk):
    def reset_envs(self, s, rng):
        self.state.x[:] = 0.5  # every env, not the rows being reset
        s.x[:] = rng.uniform(-1, 1, dtype=np.float32)
        s.v[:] = 0


class GlobalRandom(Walk):
    def step_envs(self, s, action, rng):
        s.x += np.random.uniform(-0.1, 0.1, len(s)).astype(np.float32)
        return super().step_envs(s, action, rng)


class OwnNpRandom(Walk):
    def reset_envs(self, s, rng):
        s.x[:] = self.np_random.uniform(-1, 1, len(s))
        s.v[:] = 0


class OutsideBox(Walk):
    def observe(self, s, out):
        out[:, 0], out[:, 1] = s.x * 3, s.v  # up to 30 in a Box(-10, 10)


class Rebinds(Walk):
    def step_envs(self, s, action, rng):
        s.x = s.x + 1  # a new array: the batch's storage would never see it
        return np.zeros(len(s)), np.zeros(len(s), dtype=bool)


class ChangesAction(Walk):
    def step_envs(self, s, action, rng):
        action[action == 0] = 1  # in place: would change the caller's array
        return super().step_envs(s, action, rng)


class NanReward(Walk):
    def step_envs(self, s, action, rng):
        reward, terminated = super().step_envs(s, action, rng)
        reward[0] = np.nan
        return reward, terminated


class ThreeValues(Walk):
    def step_envs(self, s, action, rng):
        reward, terminated = super().step_envs(s, action, rng)
        return reward, terminated, {}


class FloatTerminated(Walk):
    def step_envs(self, s, action, rng):
        reward, terminated = super().step_envs(s, action, rng)
        return reward, terminated.astype(np.float32) + 0.5


class ColumnReward(Walk):
    def step_envs(self, s, action, rng):
        reward, terminated = super().step_envs(s, action, rng)
        return reward[:, None], terminated


class ResetRowsTouchesOthers(Walk):
    def reset_rows(self, s, rows, rng):
        s.x[:] = 0  # every row, not just rows
        super().reset_rows(s, rows, rng)


class StateOutsideTheSchema(Walk):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.steps_taken = 0  # per-batch state that get_state does not hold

    def step_envs(self, s, action, rng):
        self.steps_taken += 1
        reward, terminated = super().step_envs(s, action, rng)
        return reward * (self.steps_taken % 3), terminated


class RowsTalk(Walk):
    def step_envs(self, s, action, rng):
        reward, terminated = super().step_envs(s, action, rng)
        return reward - reward.mean(), terminated  # depends on the other envs


class NanState(Walk):
    def step_envs(self, s, action, rng):
        reward, terminated = super().step_envs(s, action, rng)
        s.v[action == 0] = np.nan
        return reward, terminated


class NoObserve(batchenv.BatchEnv):
    state_dtype = Walk.state_dtype
    single_action_space = Walk.single_action_space
    single_observation_space = Walk.single_observation_space
    reset_envs = Walk.reset_envs
    step_envs = Walk.step_envs


#: (env, method the message names, text it contains, caught by debug=True on its own?)
MISTAKES = [
    (ObserveReturns, "observe", "returned an array instead of filling out", True),
    (NegativeIntoUint8, "observe", "cannot hold", True),
    (ScalarReward, "step_envs", "returned reward as float", True),
    (SpaceTooWide, "observe", "entries [2] of each observation", True),
    (WritesSelfState, "reset_envs", "wrote to self.state", True),
    (GlobalRandom, "step_envs", "numpy's global random state", True),
    (OwnNpRandom, "reset_envs", "self.np_random", True),
    (OutsideBox, "observe", "outside single_observation_space", True),
    (Rebinds, "step_envs", "State field 'x' cannot be rebound", True),
    (ChangesAction, "step_envs", "step_envs wrote into a read-only array", True),
    (NanReward, "step_envs", "NaN or inf reward", True),
    (ThreeValues, "step_envs", "must return (reward, terminated)", True),
    (FloatTerminated, "step_envs", "terminated of dtype float32", True),
    (ColumnReward, "step_envs", "reward of shape (4, 1)", True),
    (ResetRowsTouchesOthers, "reset_rows", "changed rows it was not given", True),
    (NanState, "step_envs", "NaN or inf in state field 'v'", True),
    (StateOutsideTheSchema, "get_state / set_state", "replay after set_state", False),
    (RowsTalk, "step_envs", "rows must not depend on each other", False),
    (NoObserve, "observe", "must implement observe(self, s, out)", True),
]


def _run_a_while(env):
    env.reset(seed=0)
    env.action_space.seed(0)
    for _ in range(30):
        env.step(env.action_space.sample())
    env.reset(options={"reset_mask": np.array([True, False, True, False])})


@pytest.mark.parametrize("env, method, text, by_debug", MISTAKES,
                         ids=[m[0].__name__ for m in MISTAKES])
def test_check_env_names_the_method_of_each_mistake(env, method, text, by_debug):
    with pytest.raises(ContractError) as caught:
        check_env(env, num_envs=4, steps=40)
    failures = caught.value.failures
    assert any(f.method == method and text in f.message for f in failures), str(caught.value)
    assert f"look at {method}" in str(caught.value)


@pytest.mark.parametrize("env, method, text", [m[:3] for m in MISTAKES if m[3]],
                         ids=[m[0].__name__ for m in MISTAKES if m[3]])
def test_debug_mode_names_the_method_of_each_mistake(env, method, text):
    with pytest.raises((KernelError, TypeError, ValueError, AttributeError,
                        NotImplementedError)) as caught:
        _run_a_while(env(4, debug=True))
    assert text in str(caught.value)
    assert method in str(caught.value)


def test_a_scalar_reward_is_refused_even_without_debug():
    # one value for every env would be broadcast silently: the base class refuses it always
    with pytest.raises(TypeError, match=r"step_envs must return \(reward, terminated\).*"
                                        r"reward has shape \(\)"):
        _run_a_while(ScalarReward(4))


@pytest.mark.parametrize("env", [SpaceTooWide, OutsideBox, GlobalRandom])
def test_debug_mode_is_what_catches_silent_mistakes(env):
    _run_a_while(env(4))  # without debug: runs, returning wrong data
    with pytest.raises(KernelError):
        _run_a_while(env(4, debug=True))


def test_batchenv_debug_environment_variable_turns_debug_on(monkeypatch):
    monkeypatch.setenv("BATCHENV_DEBUG", "1")
    assert Walk(4).debug
    with pytest.raises(KernelError, match="OutsideBox.observe"):
        _run_a_while(OutsideBox(4))
    monkeypatch.setenv("BATCHENV_DEBUG", "0")
    assert not Walk(4).debug


def test_debug_off_wraps_nothing_and_debug_on_survives_pickling():
    plain = Walk(4)
    assert not set(vars(plain)) & {"reset_envs", "reset_rows", "step_envs", "observe"}
    env = pickle.loads(pickle.dumps(OutsideBox(4, debug=True)))
    with pytest.raises(KernelError, match="outside single_observation_space"):
        _run_a_while(env)


def test_contract_error_lists_every_failed_check():
    class TwoMistakes(RowsTalk):
        single_observation_space = spaces.Box(-10, 10, (3,), np.float32)

    with pytest.raises(ContractError) as caught:
        check_env(TwoMistakes, num_envs=4, steps=40)
    failed = {f.check for f in caught.value.failures}
    assert len(failed) >= 10  # the observe bug fails every check that observes
    text = str(caught.value)
    assert "failed" in text and "hint:" in text


def test_contract_checks_give_one_callable_per_check():
    checks = contract_checks(Walk, steps=40)
    assert [str(c) for c in checks][:2] == ["api", "reproducible"]
    for check in checks:
        check()
    broken = {str(c): c for c in contract_checks(RowsTalk, num_envs=4, steps=40)}
    broken["api"]()  # this one passes
    with pytest.raises(ContractError, match="batch_independence"):
        broken["batch_independence"]()


# ---------------------------------------------------------------------- always on
def test_caller_actions_never_change_even_without_validation():
    for validate in (True, False):
        env = ChangesAction(4, validate=validate)
        env.reset(seed=0)
        a = np.array([0, 1, 0, 1])
        with pytest.raises(ValueError, match="read-only"):
            env.step(a)
        np.testing.assert_array_equal(a, [0, 1, 0, 1])


@pytest.mark.parametrize("env", [ThreeValues, FloatTerminated])
def test_a_wrong_step_envs_return_is_a_type_error_without_debug(env):
    with pytest.raises(TypeError, match=r"^step_envs must return \(reward, terminated\)"):
        _run_a_while(env(4))


def test_state_fields_reject_rebinding_and_typos():
    s = Walk(3).state
    with pytest.raises(AttributeError, match=r"update it in place, e.g. s.x\[:\] = "):
        s.x = np.zeros(3, np.float32)
    with pytest.raises(AttributeError, match="no field 'vx'"):
        s.vx = 1
    x = s.x
    s.x += 1  # in place: rebinding to the same array is what += does
    assert s.x is x and (x == 1).all()


def test_unsupported_observation_space_is_named():
    class DictObs(Walk):
        single_observation_space = spaces.Dict({"x": spaces.Box(-1, 1, (1,))})

    with pytest.raises(TypeError, match=r"Dict is not supported \(yet\): use a Box"):
        DictObs(2)


def test_missing_kernels_are_named():
    class Nothing(batchenv.BatchEnv):
        state_dtype = Walk.state_dtype
        single_action_space = Walk.single_action_space
        single_observation_space = Walk.single_observation_space

    with pytest.raises(NotImplementedError, match=r"Nothing must implement reset_envs\(self"):
        Nothing(2).reset()


# ---------------------------------------------------------------------- set_state values
def _rejected(env, states, *texts):
    before = env.get_state()
    with pytest.raises(ValueError) as caught:
        env.set_state(states)
    for text in texts:
        assert text in str(caught.value)
    assert env.get_state().tobytes() == before.tobytes()  # nothing written


def test_set_state_rejects_nan_and_pong_invariants_leaving_the_env_unchanged():
    env = batchenv.BatchPong(5, mode="two_player")
    env.reset(seed=0)
    for field, value, text in [("ball_x", np.nan, "'ball_x' is NaN or inf"),
                               ("action_left", 7, "'action_left' outside [0, 2]"),
                               ("score_right", 22, "'score_right' outside [0, 21]"),
                               ("left_y", 40.0, "'left_y' outside [2, 27]"),
                               ("ball_y", -1.0, "'ball_y' outside [0, 29]")]:
        bad = env.get_state()
        bad[field][3] = value
        _rejected(env, bad, text, "[3]")
    good = env.get_state()
    good["score_left"][1] = 21
    _rejected(env, good, "a score of points_to_win=21 in a game not awaiting its reset", "[1]")
    good["awaiting_reset"][1] = True
    env.set_state(good)  # the bounds are inclusive: a won game awaiting its reset


def test_set_state_rejects_states_beyond_gymnasiums_bounds():
    env = batchenv.BatchMountainCar(4)
    env.reset(seed=0)
    bad = env.get_state()
    bad["velocity"][[0, 2]] = 0.08  # Gymnasium clips the speed to 0.07
    _rejected(env, bad, "velocity outside [-0.07, 0.07]", "[0, 2]")
    masked = env.get_state()[:1]
    masked["position"] = -1.3
    mask = np.array([False, False, True, False])
    before = env.get_state()
    with pytest.raises(ValueError, match=r"position outside .* env indices \[2\]"):
        env.set_state(masked, mask=mask)
    assert env.get_state().tobytes() == before.tobytes()
