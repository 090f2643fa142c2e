"""The classic-control envs against Gymnasium's own, step by step.

Parity: 64 batched envs and 64 Gymnasium envs (``SyncVectorEnv`` of ``gymnasium.make``,
auto-reset NEXT_STEP, with its ``TimeLimit``) take the same actions for 500 steps (thousands in
the ``slow`` pass);
after every reset the start state of one side is copied into the other, then every
observation, reward, terminated and truncated flag is compared at every step.

Bit for bit (``assert_array_equal``): CartPole-v1 (with ``fast_trig=False``; the default's
sine and cosine are within one ulp of the C library's, tested to ~1e-15 per step below),
MountainCar-v0, MountainCarContinuous-v0,
Acrobot-v1, and Pendulum-v1's observations and flags. Pendulum-v1's reward is compared with
``rtol=1e-9``: Gymnasium squares the float32 torque with the C library's ``powf``, which is
not correctly rounded (one float32 ulp off for ~0.08% of torques), and numpy has no
vectorized ``powf``; the difference is ~1e-10 (see the class docstring).
"""

from __future__ import annotations

import dataclasses
import pickle

import gymnasium as gym
import numpy as np
import pytest

import batchenv
from batchenv.envs import (
    AcrobotParams,
    BatchAcrobot,
    BatchCartPole,
    BatchMountainCar,
    BatchMountainCarContinuous,
    BatchPendulum,
    CartPoleParams,
    PendulumParams,
)
from batchenv.state import from_records

N = 64


# ------------------------------------------------------------------------ the harness
@dataclasses.dataclass
class Case:
    cls: type
    gym_id: str
    fields: tuple[str, ...]
    into_ours: bool  # copy Gymnasium's start state into ours (else ours into Gymnasium's)
    steps: int
    kwargs: dict = dataclasses.field(default_factory=dict)  # for both constructors
    unwrapped: dict = dataclasses.field(default_factory=dict)  # attributes set on Gymnasium's
    ours_only: dict = dataclasses.field(default_factory=dict)
    reward_rtol: float = 0.0


def policy_for(gym_id, rng):
    """Actions from the observation: random, extremes, and a heuristic that reaches the
    goal (so that terminations happen), in turns."""

    def act(obs, t):
        n = len(obs)
        mode = rng.integers(0, 3, n)  # 0 random, 1 extreme, 2 heuristic
        if gym_id == "CartPole-v1":
            return np.where(mode == 2, (obs[:, 2] > 0).astype(np.int64), rng.integers(0, 2, n))
        if gym_id == "MountainCar-v0":
            pump = np.where(obs[:, 1] > 0, 2, 0)
            return np.where(rng.random(n) < 0.8, pump, rng.integers(0, 3, n))
        if gym_id == "Acrobot-v1":
            pump = np.where(obs[:, 5] > 0, 2, 0)  # reaches the height in ~100 steps
            return np.where(rng.random(n) < 0.85, pump, rng.integers(0, 3, n))
        if gym_id == "MountainCarContinuous-v0":
            direction = np.where(obs[:, 1] >= 0, 1.0, -1.0)
            heuristic = direction * rng.choice([0.5, 1.0, 1.0, 3.0], n)  # 3: clipped force
            extreme = rng.choice([-1.0, 1.0, -2.5, 7.0, 0.0], n)
            random = rng.uniform(-1.2, 1.2, n)
            a = np.select([mode == 0, mode == 1], [random, extreme], heuristic)
            return a.astype(np.float32)[:, None]
        if gym_id == "Pendulum-v1":
            extreme = rng.choice([-2.0, 2.0, -5.0, 9.0, 0.0], n)
            a = np.where(mode == 1, extreme, rng.uniform(-2.5, 2.5, n))
            return a.astype(np.float32)[:, None]
        raise AssertionError(gym_id)

    return act


def gymnasium_vec(case):
    def make():
        env = gym.make(case.gym_id, **case.kwargs)
        for name, value in case.unwrapped.items():
            setattr(env.unwrapped, name, value)
        return env

    return gym.vector.SyncVectorEnv([make] * N)


def sync_start_states(case, ours, theirs, rows):
    """Copy the start states of ``rows`` from one side to the other; returns our
    observations of all envs after the copy."""
    if case.into_ours:
        records = ours.get_state()
        for i in rows:
            state = theirs.envs[i].unwrapped.state
            for name, value in zip(case.fields, state):
                records[name][i] = value
        mask = np.zeros(N, dtype=bool)
        mask[rows] = True
        return ours.set_state(records, mask)
    records = ours.get_state()
    for i in rows:
        theirs.envs[i].unwrapped.state = np.array([records[f][i] for f in case.fields],
                                                  dtype=records.dtype[case.fields[0]])
    return None


def run_parity(case, seed=0):
    # float64 rewards: Gymnasium's, bit for bit (the float32 default is their cast,
    # tests/test_reward_dtype.py)
    ours = case.cls(N, **case.kwargs, **case.ours_only, reward_dtype=np.float64)
    theirs = gymnasium_vec(case)
    act = policy_for(case.gym_id, np.random.default_rng(seed))
    ours.reset(seed=seed)
    obs_g, _ = theirs.reset(seed=seed)
    obs_o = sync_start_states(case, ours, theirs, np.arange(N))
    if case.into_ours:
        np.testing.assert_array_equal(obs_o, obs_g, err_msg="start observations")
    else:
        obs_g = ours.get_state()  # ours went into theirs: their observation is ours
        obs_g = np.stack([obs_g[f] for f in case.fields], axis=1).astype(np.float32)
    counts = {"terminated": 0, "truncated": 0, "steps": 0}
    reset_rows = np.zeros(N, dtype=bool)
    for t in range(case.steps):
        action = act(obs_g, t)
        o1, r1, te1, tr1, _ = ours.step(action)
        o2, r2, te2, tr2, _ = theirs.step(action)
        where = f"{case.gym_id} step {t}"
        np.testing.assert_array_equal(te1, te2, err_msg=f"terminated, {where}")
        np.testing.assert_array_equal(tr1, tr2, err_msg=f"truncated, {where}")
        if case.reward_rtol:
            np.testing.assert_allclose(r1, r2, rtol=case.reward_rtol, atol=0,
                                       err_msg=f"reward, {where}")
        else:
            np.testing.assert_array_equal(r1, r2, err_msg=f"reward, {where}")
        rows = np.flatnonzero(reset_rows)
        if rows.size:  # these envs were reset by this step: copy the start states
            synced = sync_start_states(case, ours, theirs, rows)
            if case.into_ours:
                o1 = synced
            else:
                o2[rows] = o1[rows]
        np.testing.assert_array_equal(o1, o2, err_msg=f"observation, {where}")
        counts["terminated"] += int(te1.sum())
        counts["truncated"] += int(tr1.sum())
        counts["steps"] += N
        reset_rows = te1 | tr1
        obs_g = o2
    return counts


CASES = {
    "CartPole-v1": Case(BatchCartPole, "CartPole-v1", ("x", "x_dot", "theta", "theta_dot"),
                        True, 3000, ours_only={"fast_trig": False}),
    "MountainCar-v0": Case(BatchMountainCar, "MountainCar-v0", ("position", "velocity"),
                           True, 1500),
    "MountainCarContinuous-v0": Case(BatchMountainCarContinuous, "MountainCarContinuous-v0",
                                     ("position", "velocity"), False, 1500,
                                     kwargs={"max_episode_steps": 300}),
    "Acrobot-v1": Case(BatchAcrobot, "Acrobot-v1", ("theta1", "theta2", "dtheta1", "dtheta2"),
                       True, 1200),
    "Pendulum-v1": Case(BatchPendulum, "Pendulum-v1", ("th", "thdot"), True, 1000,
                        reward_rtol=1e-9),
}


#: Steps of README's command's parity runs: every env ends episodes (terminations and time
#: limits) several times; the runs of CASES' lengths (1000-3000 steps) are ``slow``.
FAST_STEPS = 500
#: Acrobot's time limit (500) within them: 200, so that some episodes are truncated
FAST_KWARGS = {"Acrobot-v1": {"max_episode_steps": 200}}


def _assert_episodes_ended(gym_id, counts):
    assert counts["steps"] >= 64 * 500
    assert counts["truncated"] > 0 or gym_id == "CartPole-v1", counts
    if gym_id != "Pendulum-v1":  # Pendulum never terminates
        assert counts["terminated"] >= 20, counts


@pytest.mark.parametrize("gym_id", list(CASES))
def test_parity_with_gymnasium_step_by_step(gym_id):
    case = CASES[gym_id]
    counts = run_parity(dataclasses.replace(case, steps=FAST_STEPS,
                                            kwargs={**case.kwargs, **FAST_KWARGS.get(gym_id, {})}))
    _assert_episodes_ended(gym_id, counts)


@pytest.mark.slow  # the same at CASES' lengths (a few thousand steps); CI's -m slow pass
@pytest.mark.parametrize("gym_id", list(CASES))
def test_parity_with_gymnasium_over_long_runs(gym_id):
    _assert_episodes_ended(gym_id, run_parity(CASES[gym_id]))


OPTION_CASES = {
    "sutton_barto_reward": Case(BatchCartPole, "CartPole-v1",
                                ("x", "x_dot", "theta", "theta_dot"), True, 300,
                                kwargs={"sutton_barto_reward": True},
                                ours_only={"fast_trig": False}),
    "semi-implicit euler": Case(BatchCartPole, "CartPole-v1",
                                ("x", "x_dot", "theta", "theta_dot"), True, 300,
                                unwrapped={"kinematics_integrator": "semi-implicit euler"},
                                ours_only={"kinematics_integrator": "semi-implicit euler",
                                           "fast_trig": False}),
    "goal_velocity": Case(BatchMountainCar, "MountainCar-v0", ("position", "velocity"), True,
                          400, kwargs={"goal_velocity": 0.02}),
    "continuous goal_velocity": Case(BatchMountainCarContinuous, "MountainCarContinuous-v0",
                                     ("position", "velocity"), False, 400,
                                     kwargs={"goal_velocity": 0.03}),
    "nips": Case(BatchAcrobot, "Acrobot-v1", ("theta1", "theta2", "dtheta1", "dtheta2"), True,
                 300, unwrapped={"book_or_nips": "nips"}, ours_only={"book_or_nips": "nips"}),
    "acrobot dt": Case(BatchAcrobot, "Acrobot-v1", ("theta1", "theta2", "dtheta1", "dtheta2"),
                       True, 200, unwrapped={"dt": 0.05}, ours_only={"dt": 0.05}),
    "g": Case(BatchPendulum, "Pendulum-v1", ("th", "thdot"), True, 250,
              kwargs={"g": 9.81}, reward_rtol=1e-9),
}


@pytest.mark.parametrize("name", list(OPTION_CASES))
def test_constructor_options_match_gymnasium(name):
    counts = run_parity(OPTION_CASES[name], seed=1)
    assert counts["steps"] >= 64 * 200


# ------------------------------------------------------------------------ start states
def ks_statistic(a, b):
    """The two-sample Kolmogorov-Smirnov statistic: the largest gap between the empirical
    CDFs of samples ``a`` and ``b``."""
    a, b = np.sort(a), np.sort(b)
    both = np.concatenate([a, b])
    cdf_a = np.searchsorted(a, both, side="right") / len(a)
    cdf_b = np.searchsorted(b, both, side="right") / len(b)
    return np.abs(cdf_a - cdf_b).max()


def ks_critical(n, m, alpha=1e-3):
    """Reject "same distribution" above this (asymptotic two-sample KS bound)."""
    return np.sqrt(-np.log(alpha / 2) / 2) * np.sqrt((n + m) / (n * m))


START_BOUNDS = {  # gym id: per field (low, high) of the start state; None: exactly 0
    "CartPole-v1": [(-0.05, 0.05)] * 4,
    "MountainCar-v0": [(-0.6, -0.4), None],
    "MountainCarContinuous-v0": [(-0.6, -0.4), None],
    "Acrobot-v1": [(-0.1, 0.1)] * 4,
    "Pendulum-v1": [(-np.pi, np.pi), (-1.0, 1.0)],
}


@pytest.mark.parametrize("gym_id", list(CASES))
def test_start_states_match_gymnasiums_distribution(gym_id):
    case = CASES[gym_id]
    ours = case.cls(20_000)
    ours.reset(seed=123)
    mine = ours.get_state()
    theirs_env = gym.make(gym_id).unwrapped
    theirs = np.array([np.asarray(theirs_env.reset(seed=s) and theirs_env.state,
                                  dtype=np.float64) for s in range(3000)])
    for j, (name, bounds) in enumerate(zip(case.fields, START_BOUNDS[gym_id])):
        values = mine[name].astype(np.float64)
        if bounds is None:
            assert (values == 0).all() and (theirs[:, j] == 0).all()
            continue
        low, high = bounds
        assert low <= values.min() and values.max() <= high, name
        assert values.min() < low + 0.01 * (high - low)  # fills the range
        assert values.max() > high - 0.01 * (high - low)
        d = ks_statistic(values, theirs[:, j])
        assert d < ks_critical(len(values), len(theirs)), (name, d)
        # and the test can tell a wrong distribution apart
        assert ks_statistic(values * 0.9, theirs[:, j]) > ks_critical(len(values), len(theirs))
    if gym_id in ("Acrobot-v1", "MountainCarContinuous-v0"):  # float32 start states
        for name in case.fields:
            assert (mine[name] == mine[name].astype(np.float32)).all()


def test_start_state_options_are_constructor_parameters():
    env = BatchCartPole(5000, reset_low=0.1, reset_high=0.2)
    env.reset(seed=0)
    block = np.stack([env.get_state()[f] for f in ("x", "x_dot", "theta", "theta_dot")])
    assert block.min() >= 0.1 and block.max() < 0.2
    env = BatchPendulum(5000, x_init=0.5, y_init=0.25)
    env.reset(seed=0)
    state = env.get_state()
    assert np.abs(state["th"]).max() <= 0.5 and np.abs(state["th"]).max() > 0.49
    assert np.abs(state["thdot"]).max() <= 0.25
    env = BatchMountainCar(2000, reset_low=-0.3, reset_high=-0.2)
    env.reset(seed=0)
    assert env.get_state()["position"].min() >= -0.3
    env = BatchAcrobot(2000, reset_low=-0.2, reset_high=0.2)
    env.reset(seed=0)
    assert np.abs(env.get_state()["theta1"]).max() > 0.15


def test_auto_reset_draws_from_the_rows_own_streams():
    """A row's start states depend only on its seed: resets of other rows, or their
    number, change nothing (the sparse reset path and the full reset agree)."""
    env = BatchCartPole(6, autoreset_mode="SameStep")
    env.reset(seed=40)
    twin = BatchCartPole(1, autoreset_mode="SameStep")
    twin.reset(seed=43)
    for _ in range(200):
        _, _, te, tr, info = env.step(np.ones(6, dtype=np.int64))
        _, _, te1, tr1, _ = twin.step(np.ones(1, dtype=np.int64))
        assert te[3] == te1[0] and tr[3] == tr1[0]
    np.testing.assert_array_equal(env.get_state()[3:4], twin.get_state())


# ------------------------------------------------------------------------ construction
def test_gymnasium_make_vec_and_batchenv_make_return_the_batched_envs():
    for gym_id, case in CASES.items():
        env = gym.make_vec(f"batchenv/{gym_id}", num_envs=8)
        assert type(env) is case.cls and env.num_envs == 8
        assert env.max_episode_steps == gym.spec(gym_id).max_episode_steps
        env = batchenv.make(gym_id, num_envs=8)
        assert type(env) is case.cls
        single = gym.make(gym_id)
        assert env.single_observation_space == single.observation_space
        assert env.single_action_space == single.action_space
        assert env.metadata["render_fps"] == single.metadata["render_fps"]
    env = batchenv.make("CartPole-v1", num_envs=4, sutton_barto_reward=True)
    assert env.params.sutton_barto_reward
    assert f"batchenv/{'CartPole-v1'}" in batchenv.list_envs()


def test_options_params_and_bad_values():
    assert BatchPendulum(2, g=9.81).params.g == 9.81
    base = PendulumParams(m=2.0)
    env = BatchPendulum(2, params=base, g=3.0, max_episode_steps=7, validate=False)
    assert (env.params.m, env.params.g, env.max_episode_steps, env.validate) == (2.0, 3.0, 7,
                                                                               False)
    assert BatchAcrobot(2, book_or_nips="nips").params.book_or_nips == "nips"
    assert BatchPendulum(2, max_torque=3.0).single_action_space.high[0] == 3.0
    with pytest.raises(ValueError, match="book_or_nips"):
        BatchAcrobot(2, book_or_nips="paper")
    with pytest.raises(ValueError, match="kinematics_integrator"):
        BatchCartPole(2, kinematics_integrator="rk4")
    with pytest.raises(ValueError, match="reset_low"):
        BatchCartPole(2, reset_low=1.0, reset_high=0.0)
    with pytest.raises(TypeError, match="CartPoleParams"):
        BatchCartPole(2, params=AcrobotParams())
    with pytest.raises(TypeError):
        BatchCartPole(2, gravty=9.8)  # a typo is not swallowed
    assert dataclasses.replace(CartPoleParams(), gravity=1.0).total_mass == 1.1


def test_out_of_bound_actions_are_clipped_like_gymnasium():
    """Pendulum clips the torque (reward included); MountainCarContinuous clips the force
    but charges the energy of the action as given."""
    pend = BatchPendulum(3)
    pend.reset(seed=0)
    start = pend.get_state()
    r_big = pend.step(np.array([[9.0], [-9.0], [2.0]], dtype=np.float32))[1]
    pend.set_state(start)
    r_max = pend.step(np.array([[2.0], [-2.0], [2.0]], dtype=np.float32))[1]
    np.testing.assert_array_equal(r_big, r_max)
    car = BatchMountainCarContinuous(2)
    car.reset(seed=0)
    start = car.get_state()
    _, r3, *_ = car.step(np.array([[3.0], [1.0]], dtype=np.float32))
    after3 = car.get_state()
    car.set_state(start)
    _, r1, *_ = car.step(np.array([[1.0], [1.0]], dtype=np.float32))
    np.testing.assert_array_equal(car.get_state()["position"], after3["position"])
    np.testing.assert_allclose(r3[0], -0.9)
    np.testing.assert_allclose(r1, -0.1)


def test_pickle_and_copy_keep_the_dynamics():
    for case in CASES.values():
        env = case.cls(5)
        env.reset(seed=3)
        clone = pickle.loads(pickle.dumps(env))
        act = policy_for(case.gym_id, np.random.default_rng(0))
        obs = np.zeros((5, *env.single_observation_space.shape), np.float32)
        for t in range(30):
            a = act(obs, t)
            obs, r, te, tr, _ = env.step(a)
            o2, r2, te2, tr2, _ = clone.step(a)
            np.testing.assert_array_equal(obs, o2)
            np.testing.assert_array_equal(r, r2)


# ------------------------------------------------------------------------ rendering
def _scene(gym_id, n=4):
    """4 envs of ``gym_id`` in far-apart states (ours, and the states for Gymnasium's)."""
    case = CASES[gym_id]
    states = {
        "CartPole-v1": [[-1.5, 0, -0.3, 0], [-0.5, 0, 0.1, 0], [0.5, 0, -0.1, 0],
                        [1.8, 0, 0.35, 0]],
        "MountainCar-v0": [[-1.1, 0], [-0.5, 0], [0.0, 0], [0.45, 0]],
        "MountainCarContinuous-v0": [[-1.1, 0], [-0.5, 0], [0.0, 0], [0.45, 0]],
        "Acrobot-v1": [[-2.5, 1.0, 0, 0], [-0.5, -2.0, 0, 0], [0.7, 0.3, 0, 0],
                       [2.9, -0.8, 0, 0]],
        "Pendulum-v1": [[-2.5, 0], [-1.0, 0], [0.5, 0], [2.0, 0]],
    }[gym_id][:n]
    env = case.cls(n, render_mode="rgb_array")
    env.reset(seed=0)
    records = env.get_state()
    for i, state in enumerate(states):
        for name, value in zip(case.fields, state):
            records[name][i] = value
    env.set_state(records)
    torques = [None, 2.0, -1.5, 0.7][:n]
    if gym_id == "Pendulum-v1":  # the arrow shows the last torque
        env._u[:] = [0.0 if u is None else u for u in torques]
    return env, states, torques


SIZES = {"CartPole-v1": (400, 600), "MountainCar-v0": (400, 600),
         "MountainCarContinuous-v0": (400, 600), "Acrobot-v1": (500, 500),
         "Pendulum-v1": (500, 500)}


@pytest.mark.parametrize("gym_id", list(CASES))
def test_frames_have_gymnasiums_size_and_geometry(gym_id):
    env, states, _ = _scene(gym_id, 4)
    frames = env.render()
    assert isinstance(frames, tuple) and len(frames) == 4
    for frame in frames:
        assert frame.shape == (*SIZES[gym_id], 3) and frame.dtype == np.uint8
        assert (frame == 255).all(axis=2).mean() > 0.8  # a white background
    assert not np.array_equal(frames[0], frames[1])  # the state shows
    if gym_id == "CartPole-v1":  # the cart is black, centred at x * 125 + 300
        for frame, (x, *_rest) in zip(frames, states):
            black = np.flatnonzero((frame[287:296] == 0).all(axis=2).any(axis=0))
            assert abs((black.min() + black.max()) / 2 - (x * 125 + 300)) <= 1.5
    frames[0][0, 0] = 0  # frames are the caller's arrays
    assert env.render()[0][0, 0, 0] == 255
    no_mode = BatchCartPole(2)
    no_mode.reset(seed=0)
    with pytest.warns(UserWarning, match="render_mode"):
        assert no_mode.render() is None  # no render_mode: a warning, no frames


def _difference(a, b, tolerance=16):
    """Fraction of pixels of either frame whose colour (within ``tolerance`` in every
    channel) is found nowhere in the 3 x 3 neighbourhood of the same pixel in the other
    frame: forgives one-pixel shifts of an edge, not a misplaced shape."""

    def unmatched(x, y):
        x, y = x.astype(np.int16), np.pad(y.astype(np.int16), ((1, 1), (1, 1), (0, 0)),
                                          mode="edge")
        h, w = x.shape[:2]
        # a pixel matched in place is matched; the others (a few %) look in all 9 places
        rows, cols = np.nonzero(np.abs(x - y[1:h + 1, 1:w + 1]).max(axis=2) > tolerance)
        best = np.full(len(rows), 255, dtype=np.int16)
        for dy in range(3):
            for dx in range(3):
                gap = np.abs(x[rows, cols] - y[rows + dy, cols + dx]).max(axis=1)
                np.minimum(best, gap, out=best)
        out = np.zeros((h, w), dtype=bool)
        out[rows, cols] = best > tolerance
        return out

    return float(np.mean(unmatched(a, b) | unmatched(b, a)))


@pytest.mark.parametrize("gym_id", list(CASES))
def test_frames_look_like_gymnasiums_pygame_frames(gym_id, monkeypatch):
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    import pygame  # noqa: F401  (required for this test: `pip install pygame`)
    env, states, torques = _scene(gym_id, 4)
    frames = env.render()
    theirs = []
    for state, torque in zip(states, torques):
        reference = gym.make(gym_id, render_mode="rgb_array")
        reference.reset(seed=0)
        reference.unwrapped.state = np.array(state, dtype=np.float64)
        if gym_id == "Pendulum-v1":
            reference.unwrapped.last_u = torque
        theirs.append(reference.render())
        reference.close()
    for mine, ref in zip(frames, theirs):
        assert mine.shape == ref.shape
        # measured (this test's scenes): at most 0.0054 (MountainCar's anti-aliased hill)
        assert _difference(mine, ref) < 0.008
        for colour, overlap in _colour_overlaps(mine, ref).items():
            floor = COLOUR_OVERLAP_EXCEPTIONS.get((gym_id, colour), 0.9)
            assert overlap >= floor, (colour, overlap)
    assert _difference(frames[0], theirs[3]) > 0.003  # another state looks different


def test_pendulums_arrow_decodes_as_pygame_decodes_it(monkeypatch):
    """Our PNG decoder (numpy + zlib, every row filter) against pygame's, pixel for pixel,
    on the arrow Gymnasium's Pendulum draws (its rows use all five filters)."""
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    from pathlib import Path

    import gymnasium.envs.classic_control as cc
    import pygame  # (required for this test: `pip install pygame`)

    from batchenv.envs.classic._render import _read_png

    path = Path(cc.__file__).parent / "assets" / "clockwise.png"
    surface = pygame.image.load(str(path))
    theirs = np.dstack([pygame.surfarray.array3d(surface).transpose(1, 0, 2),
                        pygame.surfarray.array_alpha(surface).T])
    mine = _read_png(path)
    assert mine.dtype == np.uint8
    np.testing.assert_array_equal(mine, theirs)


#: Colours Gymnasium draws whose pixels we cannot reproduce exactly, with the least overlap
#: accepted (measured on this test's scenes): MountainCar's hill is an anti-aliased line
#: (pygame.gfxdraw.aapolygon), whose exact-black pixels depend on sub-pixel coverage
#: (0.46-0.49); Pendulum's arrow is a PNG that Gymnasium scales with pygame (near-black
#: (2, 2, 2) pixels; ours is drawn, not scaled: 0.002-0.007), checked by _difference only.
COLOUR_OVERLAP_EXCEPTIONS = {("MountainCar-v0", (0, 0, 0)): 0.4,
                             ("MountainCarContinuous-v0", (0, 0, 0)): 0.4,
                             ("Pendulum-v1", (2, 2, 2)): 0.0}


def _colour_overlaps(mine, ref, min_pixels=100):
    """For every colour covering at least ``min_pixels`` of Gymnasium's frame: the overlap
    (intersection over union) of the pixels of exactly that colour in both frames. A shape
    drawn in another colour (a grey cart, a recoloured pole) overlaps 0. Measured: >= 0.92
    for every colour but the exceptions above."""
    def packed(frame):  # one int per pixel: r << 16 | g << 8 | b
        f = frame.astype(np.int32)
        return f[..., 0] << 16 | f[..., 1] << 8 | f[..., 2]

    theirs, ours = packed(ref), packed(mine)
    colours, counts = np.unique(theirs, return_counts=True)
    out = {}
    for colour, count in zip(colours, counts):
        if count >= min_pixels:
            a, b = theirs == colour, ours == colour
            rgb = (int(colour) >> 16, int(colour) >> 8 & 255, int(colour) & 255)
            out[rgb] = float((a & b).sum() / (a | b).sum())
    return out


# ------------------------------------------------------------------------ docs
def test_env_pages_are_generated_from_the_docstrings():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "docs" / "envs" / "generate.py"
    spec = importlib.util.spec_from_file_location("generate_env_docs", path)
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    assert set(generate.PAGES) == {"cartpole", "mountain_car", "mountain_car_continuous",
                                   "acrobot", "pendulum"}
    for name, (cls, params) in generate.PAGES.items():
        text = generate.page(cls, params)
        on_disk = (path.parent / f"{name}.md").read_text()
        assert on_disk == text, f"docs/envs/{name}.md is stale: run python {path}"
        for section in ("## Description", "## Action Space", "## Observation Space",
                        "## Rewards", "## Starting State", "## Episode End", "## Arguments",
                        "## Differences from Gymnasium", "## Version History"):
            assert section in text, (name, section)


# ------------------------------------------------------------------------ fast_trig
def test_fast_sin_cos_is_within_one_ulp_of_the_c_library():
    from batchenv.envs.classic.cartpole import FAST_TRIG_RANGE, sin_cos

    edge = np.nextafter(FAST_TRIG_RANGE, 1.0)
    x = np.concatenate([np.linspace(-FAST_TRIG_RANGE, FAST_TRIG_RANGE, 400_001),
                        np.random.default_rng(0).uniform(-0.25, 0.25, 200_000),
                        [0.0, -0.0, 1e-300, 5e-324, -edge, 0.7, -3.0, 100.0]])
    s, c, z = np.empty_like(x), np.empty_like(x), np.empty_like(x)
    sin_cos(x, s, c, z)
    for mine, exact, equal in ((s, np.sin(x), 0.98), (c, np.cos(x), 0.8)):
        ulps = np.abs(mine - exact) / np.spacing(np.abs(exact))
        assert ulps.max() <= 1.0
        assert (mine == exact).mean() > equal
    np.testing.assert_array_equal(s[-4:], np.sin(x[-4:]))  # beyond the range: the C library
    np.testing.assert_array_equal(c[-4:], np.cos(x[-4:]))


def test_fast_sin_coefficients_are_the_minimax_fit():
    """SIN_COEFFS are what their comment says: the Chebyshev fit of (sin(x)/x - 1)/x**2 on
    |x| <= FAST_TRIG_RANGE, recomputed here in 40-digit arithmetic."""
    import mpmath as mp  # in the `test` extra

    from batchenv.envs.classic.cartpole import FAST_TRIG_RANGE, SIN_COEFFS

    mp.mp.dps = 40

    def q(z):
        return mp.mpf(-1) / 6 if z == 0 else (mp.sin(mp.sqrt(z)) / mp.sqrt(z) - 1) / z

    poly, error = mp.chebyfit(q, [0, FAST_TRIG_RANGE**2], len(SIN_COEFFS), error=True)
    assert [float(c) for c in poly[::-1]] == list(SIN_COEFFS)
    assert error * FAST_TRIG_RANGE**2 < 1e-17  # relative to sin(x): < 0.1 ulp


def test_default_cartpole_steps_like_gymnasium_to_1e_15():
    """By default (``fast_trig=True``) a step from Gymnasium's state agrees to 1e-15 absolute
    (measured here: at most 4.4e-16; sine and cosine may differ by one ulp); Gymnasium's state
    is copied in before every step."""
    case = CASES["CartPole-v1"]
    ours = BatchCartPole(N, fast_trig=True)
    theirs = gymnasium_vec(case)
    act = policy_for("CartPole-v1", np.random.default_rng(2))
    ours.reset(seed=2)
    obs, _ = theirs.reset(seed=2)
    differ = 0
    for t in range(300):
        sync_start_states(case, ours, theirs, np.arange(N))
        action = act(obs, t)
        o1, r1, te1, tr1, _ = ours.step(action)
        obs, r2, te2, tr2, _ = theirs.step(action)
        records = ours.get_state()
        fresh = records["elapsed_steps"] == 0  # reset by this step: other random draws
        mine = np.stack([records[f] for f in case.fields], axis=1)[~fresh]
        gyms = np.array([theirs.envs[i].unwrapped.state for i in np.flatnonzero(~fresh)])
        np.testing.assert_allclose(mine, gyms, rtol=0, atol=1e-15)
        np.testing.assert_allclose(o1[~fresh], obs[~fresh], rtol=1e-6, atol=1e-9)
        np.testing.assert_array_equal(r1, r2)
        np.testing.assert_array_equal(te1, te2)
        np.testing.assert_array_equal(tr1, tr2)
        differ += int((mine != gyms).any(axis=1).sum())
    assert differ > 0  # the polynomials are really used (else this test proves nothing)


def test_fast_trig_results_do_not_depend_on_the_batch_size():
    big = BatchCartPole(16, fast_trig=True)
    big.reset(seed=9)
    one = BatchCartPole(1, fast_trig=True)
    one.reset(seed=14)
    actions = np.random.default_rng(0).integers(0, 2, (100, 16))
    for a in actions:
        o_big = big.step(a)[0]
        o_one = one.step(a[5:6])[0]
        np.testing.assert_array_equal(o_big[5], o_one[0])


# ------------------------------------------------------------------------ rules at the edges
EDGE_STATES = {  # states the random runs rarely reach: walls, speed limits, thresholds
    "CartPole-v1": [[2.4, 0.0, 0.0, 0.0], [np.nextafter(2.4, 3), 0, 0, 0],
                    [0.0, 0.0, 0.2094395102393195, 0.0], [-2.39, -5.0, -0.2, -3.0],
                    [0.0, 0.0, 0.7, 9.0], [0.1, 40.0, -3.0, 100.0]],
    "MountainCar-v0": [[-1.19, -0.05], [-1.2, -0.07], [-1.2, 0.0], [0.49, 0.069],
                       [0.5, -0.001], [0.59, 0.07], [-0.5, 0.0699]],
    "MountainCarContinuous-v0": [[-1.19, -0.05], [-1.2, -0.07], [0.44, 0.069], [0.45, 0.0],
                                 [0.59, 0.07], [-0.52, 0.0699], [0.449999988, 0.001]],
    "Acrobot-v1": [[3.1, 3.1, 12.0, 28.0], [-3.1, -3.1, -12.5, -28.2], [0.0, 0.0, 0.0, 0.0],
                   [np.pi, 0.0, 0.0, 0.0], [40.0, -77.0, 100.0, -100.0],
                   [3.14159, 0.0, 0.0, 0.0]],
    "Pendulum-v1": [[0.0, 0.0], [np.pi, 7.99], [-np.pi, -8.0], [100.0, 8.0], [-31.4, -7.9],
                    [1e-300, 0.0]],
}


@pytest.mark.parametrize("gym_id", list(CASES))
def test_edge_states_step_like_gymnasium(gym_id):
    """From states at the walls, speed limits and termination thresholds (and beyond),
    every action gives Gymnasium's next observation, reward and flags bit for bit."""
    case = CASES[gym_id]
    space = gym.make(gym_id).action_space
    if isinstance(space, gym.spaces.Discrete):
        actions = list(range(space.n))
    else:
        actions = [np.float32(v) for v in (space.low[0], space.high[0], 0.0,
                                           3 * space.high[0], 0.3)]
    rows = [(s, a) for s in EDGE_STATES[gym_id] for a in actions]
    ours = case.cls(len(rows), **case.ours_only, reward_dtype=np.float64)  # Gymnasium's
    ours.reset(seed=0)
    records = ours.get_state()
    for i, (state, _) in enumerate(rows):
        for name, value in zip(case.fields, state):
            records[name][i] = value
    # written past set_state, which rejects states beyond Gymnasium's bounds (some rows are)
    from_records(ours.state, records)
    if isinstance(space, gym.spaces.Discrete):
        batch = np.array([a for _, a in rows])
    else:
        batch = np.array([[a] for _, a in rows], dtype=np.float32)
    obs, reward, terminated, _, _ = ours.step(batch)
    dtype = records.dtype[case.fields[0]]
    for i, (state, a) in enumerate(rows):
        env = gym.make(gym_id).unwrapped
        env.reset(seed=0)
        env.state = np.array(state, dtype=dtype)
        o, r, te, _, _ = env.step(a if isinstance(a, int) else np.array([a]))
        where = f"{gym_id} from {state} with action {a}"
        np.testing.assert_array_equal(obs[i], o, err_msg=where)
        if case.reward_rtol:
            np.testing.assert_allclose(reward[i], r, rtol=case.reward_rtol, err_msg=where)
        else:
            assert reward[i] == r, where
        assert terminated[i] == te, where


@pytest.mark.parametrize("fast_trig", [False, True])
def test_cartpole_accelerations_chain_equals_its_formula(fast_trig):
    """``cartpole.accelerations`` (a chain of in-place ufuncs) against the three lines of its
    docstring, evaluated here in plain Python floats: equal bit for bit with the C library's
    sine and cosine, within 1e-12 with ``fast_trig``."""
    import math

    from batchenv.envs.classic.cartpole import CartPoleConstants, CartPoleParams, accelerations

    p = CartPoleParams(fast_trig=fast_trig)
    rng = np.random.default_rng(3)
    theta = rng.uniform(-0.5, 0.5, 200)
    theta_dot = rng.uniform(-3, 3, 200)
    force = rng.choice([-p.force_mag, p.force_mag], 200)
    work, xacc, thetaacc = np.empty((4, 200)), np.empty(200), np.empty(200)
    accelerations(theta, theta_dot, force, CartPoleConstants(p), work, xacc, thetaacc)
    m, ml = p.total_mass, p.polemass_length
    for i in range(200):
        sin, cos = math.sin(theta[i]), math.cos(theta[i])
        temp = (force[i] + ml * theta_dot[i] ** 2 * sin) / m
        want_theta = (p.gravity * sin - cos * temp) / (
            p.length * (4.0 / 3.0 - p.masspole * cos**2 / m))
        want_x = temp - ml * want_theta * cos / m
        if fast_trig:
            assert thetaacc[i] == pytest.approx(want_theta, rel=1e-12, abs=1e-12)
            assert xacc[i] == pytest.approx(want_x, rel=1e-12, abs=1e-12)
        else:
            assert (thetaacc[i], xacc[i]) == (want_theta, want_x), i
