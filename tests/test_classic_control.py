"""The classic-control envs against Gymnasium's own, step by step.

Parity: 64 batched envs and 64 Gymnasium envs (``SyncVectorEnv`` of ``gymnasium.make``,
auto-reset NEXT_STEP, with its ``TimeLimit``) take the same actions for thousands of steps;
after every reset the start state of one side is copied into the other, then every
observation, reward, terminated and truncated flag is compared at every step.

Bit for bit (``assert_array_equal``): CartPole-v1, MountainCar-v0, MountainCarContinuous-v0,
Acrobot-v1, and Pendulum-v1's observations and flags. Pendulum-v1's reward is compared with
``rtol=1e-9``: Gymnasium squares the float32 torque with the C library's ``powf``, which is
not correctly rounded (one float32 ulp off for ~0.07% of torques), and numpy has no
vectorized ``powf``; the difference is ~1e-10 (see the class docstring).
"""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest

from batchenv.envs import (
    BatchAcrobot,
    BatchCartPole,
    BatchMountainCar,
    BatchMountainCarContinuous,
    BatchPendulum,
)

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
    ours = case.cls(N, **case.kwargs, **case.ours_only)
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
                        True, 1500),
    "MountainCar-v0": Case(BatchMountainCar, "MountainCar-v0", ("position", "velocity"),
                           True, 800),
    "MountainCarContinuous-v0": Case(BatchMountainCarContinuous, "MountainCarContinuous-v0",
                                     ("position", "velocity"), False, 800,
                                     kwargs={"max_episode_steps": 300}),
    "Acrobot-v1": Case(BatchAcrobot, "Acrobot-v1", ("theta1", "theta2", "dtheta1", "dtheta2"),
                       True, 700),
    "Pendulum-v1": Case(BatchPendulum, "Pendulum-v1", ("th", "thdot"), True, 500,
                        reward_rtol=1e-9),
}


@pytest.mark.parametrize("gym_id", list(CASES))
def test_parity_with_gymnasium_step_by_step(gym_id):
    counts = run_parity(CASES[gym_id])
    assert counts["steps"] >= 64 * 500
    assert counts["truncated"] > 0 or gym_id == "CartPole-v1", counts
    if gym_id != "Pendulum-v1":  # Pendulum never terminates
        assert counts["terminated"] >= 20, counts


OPTION_CASES = {
    "sutton_barto_reward": Case(BatchCartPole, "CartPole-v1",
                                ("x", "x_dot", "theta", "theta_dot"), True, 300,
                                kwargs={"sutton_barto_reward": True}),
    "semi-implicit euler": Case(BatchCartPole, "CartPole-v1",
                                ("x", "x_dot", "theta", "theta_dot"), True, 300,
                                unwrapped={"kinematics_integrator": "semi-implicit euler"},
                                ours_only={"kinematics_integrator": "semi-implicit euler"}),
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
